import CoplayCore
import Foundation
import Testing

@testable import CoplayHarness

/// The players benchmark's own arithmetic: how finely a stepping clock tells where it plays.
struct PlayersBenchTests {
    /// A clock stepping every 250 ms, seen 0-2 ms late at random: its floor is within that jitter,
    /// and a rate that bends the line (a follower steering it) adds nothing; one step seen 40 ms
    /// late stands out only where it is more than 1 in 100 (as about 20 ms: half its lateness is
    /// shared with each neighbour). Seeded, so that the jitter is the same every run.
    @Test func aClockFloor_isTheJitterOfItsSteps_notTheRateItIsSteeredAt() {
        var generator = SplitMix64(seed: 75)
        func steps(rate: Double, late: Set<Int> = []) -> [ClockStep] {
            (0..<200).map { index in
                let seen = Double(index) * 0.25
                let jitter = Double.random(in: 0...0.002, using: &generator) + (late.contains(index) ? 0.040 : 0)
                let position = 10 + seen * rate + 0.001 * sin(seen)
                return ClockStep(position: position, atUnixNanos: Int64((seen + jitter) * 1e9))
            }
        }
        let steady = Benchmarks.clockFloor(steps(rate: 1))
        #expect(steady > 0.5 && steady <= 2.0, "\(steady)")
        let steered = Benchmarks.clockFloor(steps(rate: 1.005))
        #expect(steered <= 2.0, "a rate of 1.005 counted as error: \(steered)")
        #expect(Benchmarks.clockFloor(steps(rate: 1, late: [50, 120, 121])) >= 15, "three late steps in 200 hidden")
        #expect(Benchmarks.clockFloor(Array(steps(rate: 1).prefix(5))).isNaN, "too few steps to tell")
    }
}

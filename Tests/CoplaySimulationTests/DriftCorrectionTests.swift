import CoplayCore
import CoplaySimulatedPlayer
import CoplaySimulation
import Testing

/// The core steers a player that reports position samples (as mpv does) by rate nudges, and
/// seeks only when the error is too large for a nudge.
@Suite struct DriftCorrectionTests {
    /// Two agents play; node 1's player runs `speedError` fast and reports a sample every 100 ms.
    /// Returns the simulation after `seconds` of playing and the largest |offset| between the
    /// players, sampled every 100 ms over the last `measuredSeconds`.
    private func playing(speedError: Double, seconds: Int, measuredSeconds: Int, settings: Settings = Settings())
        -> (Simulation, maxOffset: Double)
    {
        var simulation = Simulation(
            seed: 41, clocks: [SimulatedClock(offsetNanos: 0), SimulatedClock(offsetNanos: 3_000_000)],
            settings: settings, conditions: .perfect)
        simulation.playerOfNode[1] = SimulatedPlayer(speedError: speedError, sampleInterval: .milliseconds(100))
        for node in 0..<2 { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
        simulation.schedule(
            .command(node: 0, .share(Activity(url: "u", itemID: "movie"), durationSeconds: nil, bufferSeconds: 0)),
            at: 500_000_000)
        simulation.schedule(.command(node: 0, .playNow(rate: 1)), at: 700_000_000)
        let end = Int64(seconds) * 1_000_000_000 + 1_000_000_000
        let settled = simulation.run(until: end - Int64(measuredSeconds) * 1_000_000_000)
        #expect(settled, "no livelock")
        let maxOffset = largestOffset(&simulation, seconds: measuredSeconds)
        return (simulation, maxOffset)
    }

    /// Runs `seconds` more and returns the largest |offset| between the two players, sampled
    /// every 100 ms.
    private func largestOffset(_ simulation: inout Simulation, seconds: Int) -> Double {
        var maxOffset = 0.0
        for _ in 0..<(seconds * 10) {
            let ran = simulation.run(until: simulation.nowNanos + 100_000_000)
            #expect(ran, "no livelock")
            let positions = (0..<2).map { node in
                simulation.nodes[node].player.position(
                    at: simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos))
            }
            maxOffset = max(maxOffset, abs(positions[1] - positions[0]))
        }
        return maxOffset
    }

    @Test func aPlayerRunningFastIsNudgedBackWithoutASeek() throws {
        // 0.3% fast: uncorrected, it would be 90 ms ahead after 30 s.
        let (simulation, maxOffset) = playing(speedError: 0.003, seconds: 30, measuredSeconds: 20)
        let instance = try #require(simulation.nodes[1].instance)
        let status = instance.statusReport(now: simulation.nodes[1].clock.timestamp(atTrue: simulation.nowNanos))
        #expect(maxOffset < 0.002, "players \(maxOffset * 1000) ms apart")
        #expect(status.counters.seekCorrections == 0)
        #expect(status.counters.rateNudges > 0)
        #expect(status.counters.playerSamples > 200)
        // Steady state: the nudge cancels the player's own error.
        #expect(abs(status.correction.nudge + 0.003) < 0.0005, "nudge \(status.correction.nudge)")
        #expect(abs(status.correction.sampleError ?? 1) < 0.002)
        // The other player reports no samples: it is trusted, never nudged.
        let other = try #require(simulation.nodes[0].instance)
        #expect(
            other.statusReport(now: simulation.nodes[0].clock.timestamp(atTrue: simulation.nowNanos)).counters
                .rateNudges == 0)
    }

    @Test func anErrorBeyondWhatANudgeCanCatchIsSeekedAway() throws {
        // 20% fast, four times the largest catch-up nudge: the error reaches the seek threshold, is
        // seeked away, and never grows past it.
        var settings = Settings()
        settings.seekCorrectionThreshold = .milliseconds(200)
        let (simulation, maxOffset) = playing(speedError: 0.2, seconds: 20, measuredSeconds: 15, settings: settings)
        let instance = try #require(simulation.nodes[1].instance)
        let status = instance.statusReport(now: simulation.nodes[1].clock.timestamp(atTrue: simulation.nowNanos))
        #expect(status.counters.seekCorrections >= 2)
        #expect(maxOffset < 0.25, "players \(maxOffset * 1000) ms apart")
        #expect(abs(status.correction.lastSeek ?? 0) >= 0.2)
        #expect(abs(status.correction.nudge) <= settings.rateCatchUpMax)
    }

    @Test func aLargeErrorIsCaughtUpFasterThanTheSteadyNudge_withoutASeek() throws {
        // 3% fast: more than the steady ±0.5% can hold, less than the 5% catch-up: the error
        // settles at a few ms (where the catch-up bound applies), and no seek is made.
        let (simulation, maxOffset) = playing(speedError: 0.03, seconds: 20, measuredSeconds: 10)
        let instance = try #require(simulation.nodes[1].instance)
        let status = instance.statusReport(now: simulation.nodes[1].clock.timestamp(atTrue: simulation.nowNanos))
        #expect(status.counters.seekCorrections == 0)
        #expect(maxOffset < 0.03, "players \(maxOffset * 1000) ms apart")
        #expect(status.correction.nudge < -0.005, "catching up beyond the steady bound: \(status.correction.nudge)")
    }

    /// A catch-up (a player 3% fast: every error beyond the steady bound) and then a player
    /// true again. The trim learns the player's own speed error in steady state only: learned
    /// through the catch-up too, it wound up to the limit and held the player milliseconds off
    /// for seconds while it unwound (a real stall's rejoin, `coplay-bench stall`).
    @Test func aCatchUpDoesNotWindUpTheTrim_soThePlayerSettlesOnceItRunsTrue() throws {
        var (simulation, _) = playing(speedError: 0.03, seconds: 6, measuredSeconds: 1)
        simulation.setSpeedError(0, ofNode: 1)
        let ran = simulation.run(until: simulation.nowNanos + 5_000_000_000)
        #expect(ran, "no livelock")
        let maxOffset = largestOffset(&simulation, seconds: 2)
        let instance = try #require(simulation.nodes[1].instance)
        let status = instance.statusReport(now: simulation.nodes[1].clock.timestamp(atTrue: simulation.nowNanos))
        #expect(maxOffset < 0.001, "players \(maxOffset * 1000) ms apart 5 s after the catch-up")
        #expect(abs(status.correction.nudge) < 0.001, "nudge \(status.correction.nudge)")
    }
}

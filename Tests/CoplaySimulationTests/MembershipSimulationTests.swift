import CoplayCore
import CoplaySimulation
import Foundation
import Testing

/// The seeds to run: `COPLAY_SEED=n` runs just that one (to reproduce a failure);
/// `COPLAY_SIM_RUNS=n` changes how many.
func scenarioSeeds(defaultCount: Int, salt: UInt64) -> [UInt64] {
    let environment = ProcessInfo.processInfo.environment
    if let seed = environment["COPLAY_SEED"].flatMap({ UInt64($0) }) { return [seed] }
    let count = environment["COPLAY_SIM_RUNS"].flatMap { Int($0) } ?? defaultCount
    return (0..<UInt64(count)).map { $0 &* 0x9E37_79B9 ^ salt }
}

func percentile(_ values: [Int64], _ fraction: Double) -> Int64 {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]
}

/// Runs scenarios on every core and returns their outcomes in seed order.
func runScenarios(_ seeds: [UInt64]) async -> [MembershipScenario.Outcome] {
    let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
    return await withTaskGroup(of: [MembershipScenario.Outcome].self) { group in
        for worker in 0..<workers {
            group.addTask {
                stride(from: worker, to: seeds.count, by: workers).map { MembershipScenario(seed: seeds[$0]).run() }
            }
        }
        var outcomes: [MembershipScenario.Outcome] = []
        for await batch in group { outcomes += batch }
        return outcomes.sorted { $0.seed < $1.seed }
    }
}

@Suite struct MembershipSimulationTests {
    /// 500 seeded runs of 2–8 agents with clocks up to ±500 ms off and ±50 ppm drift, up to 20%
    /// loss and 10% duplication, reordering jitter, a partition, a crash (and restart) and a leave
    /// (and rejoin). Each run must converge: every live agent lists exactly the live others, no
    /// estimate is grossly off, crashes are detected within 1.5 s, leaves seen within 100 ms when
    /// they arrive, newcomers seen within 300 ms on a lossless network.
    @Test func seededScenarios_membershipAndClockEstimatesConverge() async {
        let outcomes = await runScenarios(scenarioSeeds(defaultCount: 500, salt: 0x5EED))
        for outcome in outcomes {
            #expect(
                outcome.failures.isEmpty,
                "\(outcome.failures.prefix(5).joined(separator: "; ")) [\(outcome.summary)] — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter MembershipSimulationTests"
            )
        }
        // The quality of the clock estimates over all runs: the targets of SPEC.md section 4.
        let errors = outcomes.flatMap(\.offsetErrorsNanos).map { abs($0) }
        let crash = outcomes.flatMap(\.crashDetectionNanos)
        let discovery = outcomes.flatMap(\.discoveryNanos)
        print(
            "simulation: \(outcomes.count) runs; offset error p50 \(percentile(errors, 0.5) / 1000) µs p99 \(percentile(errors, 0.99) / 1000) µs max \((errors.max() ?? 0) / 1000) µs over \(errors.count) estimates; "
                + "crash detection p50 \(percentile(crash, 0.5) / 1_000_000) ms max \((crash.max() ?? 0) / 1_000_000) ms; discovery p50 \(percentile(discovery, 0.5) / 1_000_000) ms max \((discovery.max() ?? 0) / 1_000_000) ms"
        )
        if outcomes.count >= 100 {
            #expect(percentile(errors, 0.5) <= 20_000)
            #expect(percentile(errors, 0.99) <= 100_000)
            #expect(!crash.isEmpty && !discovery.isEmpty)
        }
    }

    @Test func sameSeed_replaysTheSameRun() {
        let first = MembershipScenario(seed: 42).run()
        let second = MembershipScenario(seed: 42).run()
        #expect(!first.offsetErrorsNanos.isEmpty)
        #expect(first.offsetErrorsNanos == second.offsetErrorsNanos)
        #expect(first.crashDetectionNanos == second.crashDetectionNanos)
        #expect(first.summary == second.summary)
    }
}

import CoplayCore
import CoplaySimulation
import Testing

@Suite struct MembershipSimulationTests {
    /// 80 seeded runs (thousands in `coplay-bench soak`) of 2–8 agents with clocks up to ±500 ms off and ±50 ppm drift, up to 20%
    /// loss and 10% duplication, reordering jitter, a partition, a crash (and restart) and a leave
    /// (and rejoin). Each run must converge: every live agent lists exactly the live others, no
    /// estimate is grossly off, crashes are detected within 1.5 s, leaves seen within 100 ms when
    /// they arrive, newcomers seen within 300 ms on a lossless network.
    @Test func seededScenarios_membershipAndClockEstimatesConverge() async {
        let seeds = ScenarioRunner.seeds(count: 50, salt: ScenarioRunner.membershipSalt)
        let outcomes = await ScenarioRunner.run(seeds, seedOf: \.seed) { MembershipScenario(seed: $0).run() }
        for outcome in outcomes {
            #expect(
                outcome.failures.isEmpty,
                "\(outcome.failures.prefix(5).joined(separator: "; ")) [\(outcome.summary)] — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter MembershipSimulationTests"
            )
        }
        // The quality of the clock estimates over all runs: the targets in MEASUREMENTS.md.
        let errors = outcomes.flatMap(\.offsetErrorsNanos).map { abs($0) }
        let crash = outcomes.flatMap(\.crashDetectionNanos)
        let discovery = outcomes.flatMap(\.discoveryNanos)
        print(
            "simulation: \(outcomes.count) runs; offset error p50 \(ScenarioRunner.percentile(errors, 0.5) / 1000) µs p99 \(ScenarioRunner.percentile(errors, 0.99) / 1000) µs max \((errors.max() ?? 0) / 1000) µs over \(errors.count) estimates; "
                + "crash detection p50 \(ScenarioRunner.percentile(crash, 0.5) / 1_000_000) ms max \((crash.max() ?? 0) / 1_000_000) ms; discovery p50 \(ScenarioRunner.percentile(discovery, 0.5) / 1_000_000) ms max \((discovery.max() ?? 0) / 1_000_000) ms"
        )
        if outcomes.count >= 100 {
            #expect(ScenarioRunner.percentile(errors, 0.5) <= 20_000)
            #expect(ScenarioRunner.percentile(errors, 0.99) <= 100_000)
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

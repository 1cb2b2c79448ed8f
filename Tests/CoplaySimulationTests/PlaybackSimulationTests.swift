import CoplayCore
import CoplaySimulation
import Testing

@Suite struct PlaybackSimulationTests {
    /// 30 seeded runs (see `PlaybackScenario`) in the quick tier; `coplay-bench soak` runs
    /// thousands in release. A failure names the seed that replays it.
    @Test func seededScenarios_convergeCausallyAndExactlyOnce() async {
        let seeds = ScenarioRunner.seeds(count: 30, salt: ScenarioRunner.playbackSalt)
        let outcomes = await ScenarioRunner.run(seeds, seedOf: \.seed) { PlaybackScenario(seed: $0).run() }
        #expect(outcomes.count == seeds.count)
        for outcome in outcomes {
            #expect(
                outcome.failures.isEmpty,
                "\(outcome.failures.prefix(4).joined(separator: "; ")) [\(outcome.summary)] — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter PlaybackSimulationTests"
            )
        }
        #expect(outcomes.map(\.commandsDelivered).reduce(0, +) > 0, "the scenarios delivered commands")
        let spreads = outcomes.map { Int64($0.positionSpreadSeconds * 1e9) }
        print(
            "playback simulation: \(outcomes.count) runs, \(outcomes.map(\.commandsIssued).reduce(0, +)) commands issued, "
                + "\(outcomes.map(\.messagesChecked).reduce(0, +)) reliable message deliveries checked; "
                + "final player spread p50 \(ScenarioRunner.percentile(spreads, 0.5) / 1000) µs p99 \(ScenarioRunner.percentile(spreads, 0.99) / 1000) µs max \((spreads.max() ?? 0) / 1000) µs"
        )
    }
}

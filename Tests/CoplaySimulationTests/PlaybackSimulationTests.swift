import CoplayCore
import CoplaySimulation
import Foundation
import Testing

@Suite struct PlaybackSimulationTests {
    /// 1,000 seeded runs (see `PlaybackScenario`); a failure names the seed that replays it.
    @Test func seededScenarios_convergeCausallyAndExactlyOnce() async {
        let seeds = scenarioSeeds(defaultCount: 1000, salt: 0xB1A7)
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let outcomes = await withTaskGroup(of: [PlaybackScenario.Outcome].self) { group in
            for worker in 0..<workers {
                group.addTask {
                    stride(from: worker, to: seeds.count, by: workers).map { PlaybackScenario(seed: seeds[$0]).run() }
                }
            }
            var all: [PlaybackScenario.Outcome] = []
            for await batch in group { all += batch }
            return all.sorted { $0.seed < $1.seed }
        }
        for outcome in outcomes {
            #expect(
                outcome.failures.isEmpty,
                "\(outcome.failures.prefix(4).joined(separator: "; ")) [\(outcome.summary)] — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter PlaybackSimulationTests"
            )
        }
        let spreads = outcomes.map { Int64($0.positionSpreadSeconds * 1e9) }
        print(
            "playback simulation: \(outcomes.count) runs, \(outcomes.map(\.commandsIssued).reduce(0, +)) commands issued, "
                + "\(outcomes.map(\.messagesChecked).reduce(0, +)) reliable message deliveries checked; "
                + "final player spread p50 \(percentile(spreads, 0.5) / 1000) µs p99 \(percentile(spreads, 0.99) / 1000) µs max \((spreads.max() ?? 0) / 1000) µs"
        )
    }
}

import CoplayCore
import CoplaySimulation
import Testing

@Suite struct HostileFuzzTests {
    /// 8 seeds × 20,000 hostile inputs (over 100,000 of them datagrams) in the quick tier;
    /// `coplay-bench soak` runs more.
    @Test func wellFormedButHostileInputs_neverTrapHangOrOutgrowATable() async {
        let seeds = ScenarioRunner.seeds(count: 8, salt: ScenarioRunner.fuzzSalt)
        let outcomes = await ScenarioRunner.run(seeds, seedOf: \.seed) { HostileFuzz(seed: $0, inputs: 20_000).run() }
        for outcome in outcomes {
            #expect(
                outcome.failures.isEmpty,
                "\(outcome.failures.joined(separator: "; ")) — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter HostileFuzzTests"
            )
        }
        let fed = outcomes.map(\.datagramsFed).reduce(0, +)
        let dropped = outcomes.map(\.datagramsDropped).reduce(0, +)
        #expect(fed >= 100_000, "the fuzz fed its datagrams: \(fed)")
        #expect(dropped > fed / 4, "most hostile datagrams are dropped and counted")
        print("hostile fuzz: \(outcomes.count) seeds, \(fed) datagrams, \(dropped) dropped and counted")
    }
}

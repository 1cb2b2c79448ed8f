import Foundation

/// Runs seeded scenarios on every core, for the tests (a quick seed count) and the soak tier
/// (`coplay-bench soak`, thousands of seeds in release). One runner, so that both tiers run
/// exactly the same scenarios and name a failing seed the same way.
public enum ScenarioRunner {
    /// The seeds of a batch: `COPLAY_SEED=n` runs just that one (to reproduce a failure);
    /// otherwise `count` seeds derived from `salt`, or `COPLAY_SIM_RUNS` of them when set.
    public static func seeds(count defaultCount: Int, salt: UInt64) -> [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let seed = environment["COPLAY_SEED"].flatMap({ UInt64($0) }) { return [seed] }
        return derivedSeeds(count: environment["COPLAY_SIM_RUNS"].flatMap { Int($0) } ?? defaultCount, salt: salt)
    }

    /// `count` seeds derived from `salt`, whatever the environment says.
    public static func derivedSeeds(count: Int, salt: UInt64) -> [UInt64] {
        (0..<UInt64(max(0, count))).map { $0 &* 0x9E37_79B9 ^ salt }
    }

    /// Runs `scenario` for every input (a seed), spread over the machine's cores; outcomes in
    /// seed order.
    public static func run<Input: Sendable, Outcome: Sendable>(
        _ seeds: [Input], seedOf: @escaping @Sendable (Outcome) -> UInt64,
        scenario: @escaping @Sendable (Input) -> Outcome
    ) async -> [Outcome] {
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        return await withTaskGroup(of: [Outcome].self) { group in
            for worker in 0..<workers {
                group.addTask { stride(from: worker, to: seeds.count, by: workers).map { scenario(seeds[$0]) } }
            }
            var all: [Outcome] = []
            for await batch in group { all += batch }
            return all.sorted { seedOf($0) < seedOf($1) }
        }
    }

    /// The value at `fraction` of the sorted values (nearest rank below); 0 for none.
    public static func percentile(_ values: [Int64], _ fraction: Double) -> Int64 {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]
    }

    /// Both kinds of scenario over `seedCount` seeds each: the soak tier, with `largeGroups` runs
    /// of 64 to 256 agents (one per 1,000 seeds, at least five, unless given). Returns one line
    /// per failing seed (with the command that replays it) and a summary line.
    public static func soak(seedCount: Int, largeGroups: Int? = nil) async -> (failures: [String], summary: String) {
        let started = ContinuousClock.now
        let membership = await run(
            derivedSeeds(count: seedCount, salt: membershipSalt), seedOf: \MembershipScenario.Outcome.seed
        ) { MembershipScenario(seed: $0).run() }
        let playback = await run(
            derivedSeeds(count: seedCount, salt: playbackSalt), seedOf: \PlaybackScenario.Outcome.seed
        ) {
            PlaybackScenario(seed: $0).run()
        }
        // Replication: a tenth as many seeds, each with a history of up to 3,000 commands.
        let replication = await run(
            derivedSeeds(count: max(1, seedCount / 10), salt: replicationSalt),
            seedOf: \ReplicationScenario.Outcome.seed
        ) {
            ReplicationScenario(seed: $0).run()
        }
        // The hostile fuzz: a tenth as many seeds, 20,000 inputs each.
        let fuzz = await run(
            derivedSeeds(count: max(1, seedCount / 10), salt: fuzzSalt), seedOf: \HostileFuzz.Outcome.seed
        ) {
            HostileFuzz(seed: $0, inputs: 20_000).run()
        }
        // Large groups: 64 to 256 agents with starved and paused ones, five sizes in turn, one
        // run per 1,000 seeds (at least one of each size).
        let scaleSeeds = derivedSeeds(count: largeGroups ?? max(5, seedCount / 1000), salt: scaleSalt)
        let scale = await run(Array(scaleSeeds.enumerated()), seedOf: \ScaleScenario.Outcome.seed) { index, seed in
            ScaleScenario(seed: seed, agents: ScaleScenario.sizes[index % ScaleScenario.sizes.count]).run()
        }
        let elapsed = ContinuousClock.now - started
        var failures: [String] = []
        for outcome in scale where !outcome.failures.isEmpty {
            failures.append(
                "scale seed \(outcome.seed): \(outcome.failures.prefix(3).joined(separator: "; ")) [\(outcome.summary)] — reproduce with COPLAY_SEED=\(outcome.seed) COPLAY_AGENTS=\(outcome.agents) swift test --filter ScaleSimulationTests"
            )
        }
        for outcome in fuzz where !outcome.failures.isEmpty {
            failures.append(
                "hostile fuzz seed \(outcome.seed): \(outcome.failures.joined(separator: "; ")) — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter HostileFuzzTests"
            )
        }
        for outcome in membership where !outcome.failures.isEmpty {
            failures.append(
                "membership seed \(outcome.seed): \(outcome.failures.prefix(3).joined(separator: "; ")) — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter MembershipSimulationTests"
            )
        }
        for outcome in replication where !outcome.failures.isEmpty {
            failures.append(
                "replication seed \(outcome.seed): \(outcome.failures.prefix(3).joined(separator: "; ")) [\(outcome.summary)] — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter ReplicationTests"
            )
        }
        for outcome in playback where !outcome.failures.isEmpty {
            failures.append(
                "playback seed \(outcome.seed): \(outcome.failures.prefix(3).joined(separator: "; ")) — reproduce with COPLAY_SEED=\(outcome.seed) swift test --filter PlaybackSimulationTests"
            )
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let runs = membership.count + playback.count
        let perMinute = seconds > 0 ? Int(Double(runs) / seconds * 60) : 0
        let spreads = playback.map { Int64($0.positionSpreadSeconds * 1e9) }
        let summary =
            "soak: \(membership.count) membership + \(playback.count) playback runs in \(Int(seconds)) s (\(perMinute) seeds/min), "
            + "\(playback.map(\.commandsIssued).reduce(0, +)) commands; player spread p99 \(percentile(spreads, 0.99) / 1000) µs; "
            + "\(replication.count) replication runs, \(replication.map(\.commandsIssued).reduce(0, +)) commands, "
            + "\(replication.map(\.statesAdopted).reduce(0, +)) snapshots adopted; "
            + "\(fuzz.map(\.datagramsFed).reduce(0, +)) hostile datagrams fuzzed; "
            + "\(scale.count) large groups (\(scale.map { "\($0.agents): formed \($0.formationNanos.map { "\($0 / 1_000_000) ms" } ?? "never"), \(String(format: "%.0f", $0.receivedPerSecondMax))/s" }.joined(separator: ", "))); "
            + "\(failures.count) failed"
        return (failures, summary)
    }

    /// The salts the test tier uses, so that the soak tier's first seeds are the tests' seeds.
    public static let membershipSalt: UInt64 = 0x5EED
    public static let playbackSalt: UInt64 = 0xB1A7
    public static let fuzzSalt: UInt64 = 0xF022
    public static let replicationSalt: UInt64 = 0x5747
    public static let scaleSalt: UInt64 = 0x5CA1E
}

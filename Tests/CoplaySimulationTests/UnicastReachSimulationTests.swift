import CoplayCore
import CoplaySimulation
import Testing

/// A network that filters multicast between two agents (a Wi-Fi access point that drops group
/// frames, a VPN): the simulation passes each datagram to the core as the shell does, saying
/// whether it came to the group's socket or the agent's own, so `Reach` sees what it would on
/// such a network and the two still form a group through unicast.
@Suite struct UnicastReachSimulationTests {
    /// Two agents whose group datagrams never reach each other, alice knowing bob as a `--peer`
    /// seed when `seeded`; after `duration`, whom each sees and the peer-left events.
    func run(seeded: Bool, seed: UInt64, duration: Duration = .seconds(20)) -> (views: [Int], left: Int, pauses: Int) {
        var simulation = Simulation(
            seed: seed, clocks: [SimulatedClock(), SimulatedClock(offsetNanos: 30_000_000, driftPPM: 20)],
            conditions: NetworkConditions(
                lossProbability: 0.02, baseDelay: .milliseconds(2), jitterMean: .microseconds(300)))
        simulation.groupDrops = { _, _ in true }
        if seeded { simulation.seedsOfNode[0] = [simulation.nodes[1].endpoint] }
        simulation.schedule(.start(node: 0), at: 0)
        simulation.schedule(.start(node: 1), at: 7_000_000)
        runWithoutLivelock(&simulation, for: .seconds(3))
        let item = LoadedItem(id: "movie", url: "https://example.com/movie.mp4")
        simulation.schedule(
            .command(node: 0, .share(Activity(url: item.url, itemID: item.id), durationSeconds: nil, bufferSeconds: 0)),
            after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(1))
        simulation.schedule(.command(node: 1, .pause), after: .zero)
        runWithoutLivelock(&simulation, for: duration)
        let views = (0..<2).map { simulation.view(of: $0).count }
        let left = (0..<2).reduce(0) { total, node in
            total + simulation.nodes[node].events.count { if case .peerLeft = $0.event { true } else { false } }
        }
        let pauses = simulation.nodes[0].events.count { if case .paused = $0.event { true } else { false } }
        return (views, left, pauses)
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func agentsWhoseMulticastIsFiltered_formAGroupThroughUnicast(seed: UInt64) {
        let run = run(seeded: true, seed: seed)
        #expect(run.views == [1, 1], "each agent sees the other")
        #expect(run.left == 0, "neither gave the other up")
        #expect(run.pauses >= 1, "bob's pause reached alice by unicast")
    }

    /// The control: without a seed nothing reaches across, so the filter above is real.
    @Test func withoutASeed_theyNeverMeet() {
        let run = run(seeded: false, seed: 1, duration: .seconds(5))
        #expect(run.views == [0, 0])
    }
}

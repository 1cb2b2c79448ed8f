import CoplayCore
import CoplaySimulation
import Testing

/// Groups across homes through a NATS cluster, in the seeded simulation (`NatsModel`): two
/// sites whose LANs do not reach each other, a server at each, a route 20 ms long between them.
@Suite struct RelaySimulationTests {
    /// Six nodes, three at each site (0-2 on server 0, 3-5 on server 1); the LAN is partitioned
    /// by site. `relay` false: no cluster at all.
    private func twoHomes(relay: Bool, seed: UInt64 = 5) -> Simulation {
        var simulation = Simulation(
            seed: seed, clocks: (0..<6).map { SimulatedClock(offsetNanos: Int64($0) * 30_000_000, driftPPM: 20) })
        if relay {
            simulation.relay = NatsModel(siteOfServer: [0, 1], seed: seed)
            for node in 0..<6 { simulation.relayServerOfNode[node] = node / 3 }
        }
        simulation.schedule(.partition([[0, 1, 2], [3, 4, 5]]), at: 0)
        for node in 0..<6 { simulation.schedule(.start(node: node), at: 1_000_000 + Int64(node) * 7_000_000) }
        return simulation
    }

    @Test func twoHomes_formOneGroup_andAPauseCrossesTheRouteOnce() throws {
        var simulation = twoHomes(relay: true)
        runWithoutLivelock(&simulation, for: .seconds(6))
        for node in 0..<6 {
            #expect(simulation.view(of: node) == simulation.expectedView(of: node), "node \(node) sees all five")
        }
        simulation.schedule(
            .command(node: 0, .share(Activity(url: "u", itemID: "film"), durationSeconds: 3_600, bufferSeconds: 0)),
            after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(1))
        simulation.schedule(.command(node: 0, .playNow(rate: 1)), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(4))

        let (crossingsBefore, deliveriesBefore) = (simulation.relay!.routeCrossings, simulation.relay!.deliveries)
        let pressed = simulation.nowNanos
        simulation.schedule(.command(node: 0, .pause), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(1))
        var delays: [Int: Double] = [:]
        for node in 1..<6 {
            let paused = simulation.nodes[node].events.first {
                if case .paused = $0.event { $0.atNanos >= pressed } else { false }
            }
            let delay: Double = try #require(paused.map { Double($0.atNanos - pressed) / 1e6 }, "node \(node) paused")
            delays[node] = delay
        }
        // At home the LAN carries it (and the relay too); across, the route's 20 ms and two client hops.
        for node in [1, 2] { #expect(delays[node]! < 5, "node \(node), same home: \(delays[node]!) ms") }
        for node in [3, 4, 5] {
            #expect(delays[node]! > 20 && delays[node]! < 30, "node \(node), across the route: \(delays[node]!) ms")
        }
        print(
            "relay simulation (two homes, a 20 ms route): pause to each other node paused, ms: "
                + (1..<6).map { String(Int(delays[$0]!.rounded())) }.joined(separator: ", "))
        #expect(simulation.relay!.routeCrossings > crossingsBefore, "the pause crossed the route")
        #expect(simulation.relay!.deliveries > deliveriesBefore)
        #expect(simulation.relayFramesLost == 0)
    }

    /// The control: without the cluster the two homes never meet, so the test above shows the relay.
    @Test func withoutTheCluster_theHomesNeverMeet() {
        var simulation = twoHomes(relay: false)
        runWithoutLivelock(&simulation, for: .seconds(6))
        #expect(simulation.view(of: 0).count == 2 && simulation.view(of: 3).count == 2)
    }

    /// A crashed node's connection goes with it: nothing more is delivered to it, and the others
    /// give it up (the relay's silence is a crash's silence).
    @Test func aCrashedNode_isGivenUpAcrossTheRoute() {
        var simulation = twoHomes(relay: true)
        runWithoutLivelock(&simulation, for: .seconds(6))
        simulation.schedule(.crash(node: 5), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(3))
        for node in 0..<5 {
            #expect(simulation.view(of: node).count == 4, "node \(node): \(simulation.view(of: node).count) peers")
        }
        #expect(simulation.relayFramesLost == 0, "no frame was routed to the crashed node's closed connection")
    }

    /// `coplay-bench party-scale`'s scenario, small: ten tabs over three sites form one group,
    /// idle at a cost that counts heartbeats, and all hear a pause one route away.
    @Test func partyScale_tenOverThreeSites() throws {
        let figures = PartyScale.run(participants: 10, sites: 3, idleSeconds: 2, seed: 3)
        #expect(try #require(figures.formedSeconds) <= 3)
        #expect(!figures.eventBudgetRanOut)
        #expect(figures.pauseLost == 0 && figures.pause.count == 9)
        #expect(figures.pause.allSatisfy { $0 < 40 }, "one route (20 ms) and its hops: \(figures.pause)")
        #expect(figures.idleDeliveriesPerSecond > 0 && figures.idleReceivedByType.first?.type == "heartbeat")
    }
}

import CoplayCore
import CoplaySimulation
import Testing

/// One transition, one event, with the cause that produced it; positions clamped the same way
/// in events and in `status`.
@Suite struct EventTests {
    func twoAgents(duration: Double? = nil, settings: Settings = Settings()) -> Simulation {
        var simulation = agentsSharingAnItem(
            seed: 3, clockOffsetsNanos: [0, 200_000_000], settings: settings, duration: duration, playing: false)
        runWithoutLivelock(&simulation, for: .seconds(1))
        return simulation
    }

    func act(_ simulation: inout Simulation, _ node: Int, _ command: ConsoleCommand) {
        simulation.schedule(.command(node: node, command), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(1))
    }

    /// The playback events of a node since `index`, as (name, reason, position).
    func playbackEvents(_ simulation: Simulation, _ node: Int, from index: Int = 0) -> [(String, String, Double)] {
        simulation.nodes[node].events[index...].compactMap { entry in
            switch entry.event {
            case .playing(let report): ("playing", report.reason, report.position)
            case .paused(let report): ("paused", report.reason, report.position)
            case .waiting(let report): ("waiting", report.reason, report.position)
            case .rateChanged(let report): ("rate-changed", report.reason, report.position)
            default: nil
            }
        }
    }

    @Test func aCoordinatedPlay_isOneWaitingThenOnePlaying_noRateChanged() {
        var settings = Settings()
        settings.startWhenKnownReady = false  // the round of readies, as when someone is not ready
        var simulation = twoAgents(settings: settings)
        let marks = simulation.nodes.map(\.events.count)
        act(&simulation, 1, .play(rate: 1))
        for node in 0..<2 {
            #expect(
                playbackEvents(simulation, node, from: marks[node]).map { "\($0.0) \($0.1)" }
                    == ["waiting play", "playing start"], "node\(node)")
        }
    }

    /// Everyone already ready where the group is paused: the start goes out at once, one
    /// `playing` event, no waiting.
    @Test func aPlayWhenAllAreKnownReady_isOnePlaying() {
        var simulation = twoAgents()
        let marks = simulation.nodes.map(\.events.count)
        act(&simulation, 1, .play(rate: 1))
        for node in 0..<2 {
            #expect(
                playbackEvents(simulation, node, from: marks[node]).map { "\($0.0) \($0.1)" } == ["playing play"],
                "node\(node)")
        }
    }

    @Test func aStartWhileAlreadyMoving_saysStart_andChangesRateOnce() {
        var simulation = twoAgents()
        act(&simulation, 0, .playNow(rate: 2))
        let marks = simulation.nodes.map(\.events.count)
        act(&simulation, 1, .play(rate: 1))
        for node in 0..<2 {
            let events = playbackEvents(simulation, node, from: marks[node])
            #expect(!events.contains { $0.1 == "rate" }, "node\(node): \(events)")
            #expect(events.last.map { "\($0.0) \($0.1)" } == "playing start", "node\(node): \(events)")
        }
        let marks2 = simulation.nodes.map(\.events.count)
        act(&simulation, 0, .rate(1.5))
        for node in 0..<2 {
            #expect(
                playbackEvents(simulation, node, from: marks2[node]).map { "\($0.0) \($0.1)" } == ["rate-changed rate"],
                "node\(node)")
        }
    }

    @Test func theSharedDuration_reachesEveryAgent_soAllClampAtTheSameEnd() {
        var simulation = twoAgents(duration: 600)
        #expect(simulation.nodes[1].instance!.player.item?.durationSeconds == 600, "it travels with the share")
        let marks = simulation.nodes.map(\.events.count)
        act(&simulation, 1, .seek(seconds: 1000))
        for node in 0..<2 {
            let positions = playbackEvents(simulation, node, from: marks[node]).map(\.2)
            #expect(!positions.isEmpty && positions.allSatisfy { $0 == 600 }, "node\(node): \(positions)")
            #expect(
                simulation.nodes[node].player.position(
                    at: simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos)) == 600)
        }
    }

    @Test func pauseSnapsOff_eachPlayerStopsWhereItIs() {
        for snaps in [true, false] {
            var settings = Settings()
            settings.pauseSnapsToOriginatorTime = snaps
            var simulation = agentsSharingAnItem(
                seed: 4, clockOffsetsNanos: [0, 0], settings: settings,
                conditions: NetworkConditions(
                    lossProbability: 0, duplicationProbability: 0, baseDelay: .milliseconds(40), jitterMean: .zero))
            runWithoutLivelock(&simulation, for: .seconds(1))
            act(&simulation, 0, .pause)
            let now = { (node: Int) in
                simulation.nodes[node].player.position(
                    at: simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos))
            }
            // The pause reaches node 1 40 ms after node 0 pressed it: node 1 has played on meanwhile.
            let gap = now(1) - now(0)
            #expect(snaps ? abs(gap) < 0.000_5 : abs(gap - 0.04) < 0.005, "snaps=\(snaps): gap \(gap)")
        }
    }

    @Test func aSeekPastTheEnd_isReportedAtTheEnd_asStatusSays() {
        var simulation = twoAgents(duration: 600)
        let mark = simulation.nodes[0].events.count
        act(&simulation, 0, .seek(seconds: 1000))
        let positions = playbackEvents(simulation, 0, from: mark).map(\.2)
        #expect(!positions.isEmpty && positions.allSatisfy { $0 == 600 }, "\(positions)")
        let status = simulation.nodes[0].instance!.statusReport(
            now: simulation.nodes[0].clock.timestamp(atTrue: simulation.nowNanos))
        #expect(status.positionSeconds == 600)
    }
}

@Suite struct SessionEndTests {
    @Test func end_stopsAndUnloadsEveryPlayer_andALaterJoinStartsFromNothing() {
        var simulation = Simulation(
            seed: 6,
            clocks: [
                SimulatedClock(offsetNanos: 0), SimulatedClock(offsetNanos: 80_000_000), SimulatedClock(offsetNanos: 0),
            ])
        for node in 0..<3 { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
        simulation.schedule(
            .command(node: 0, .share(Activity(url: "u", itemID: "movie"), durationSeconds: nil, bufferSeconds: 0)),
            at: 500_000_000)
        simulation.schedule(.command(node: 1, .playNow(rate: 1)), at: 700_000_000)
        simulation.schedule(.command(node: 2, .end(reason: "good night")), at: 2_000_000_000)
        runWithoutLivelock(&simulation, for: .seconds(3))
        for node in 0..<3 {
            let instance = simulation.nodes[node].instance!
            #expect(
                instance.state == .invalidated(reason: .ended(by: node == 2 ? "node2" : "node2", reason: "good night")))
            #expect(simulation.nodes[node].player.item == nil && simulation.nodes[node].player.rate == 0, "node\(node)")
            #expect(instance.player.item == nil && instance.activity == nil && instance.items.isEmpty)
            #expect(
                simulation.nodes[node].events.contains {
                    if case .itemUnloaded(let item, _) = $0.event { item == "movie" } else { false }
                })
        }
        simulation.schedule(.command(node: 1, .join), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(1))
        let status = simulation.nodes[1].instance!.statusReport(
            now: simulation.nodes[1].clock.timestamp(atTrue: simulation.nowNanos))
        #expect(status.state.isJoined && status.item == nil && status.activity == nil && status.rate == 0)
    }
}

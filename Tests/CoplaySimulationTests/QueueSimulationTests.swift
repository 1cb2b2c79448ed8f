import CoplayCore
import CoplaySimulatedPlayer
import CoplaySimulation
import Testing

/// The group's queue with whole agents on the simulated network: concurrent edits under loss and
/// partitions, playing through, late joiners. Each of the faults the other tools' trackers
/// report becomes a check here (named where it is made).
@Suite struct QueueSimulationTests {
    private func ids(_ simulation: Simulation, _ node: Int) -> [String] {
        simulation.nodes[node].instance?.queueEntries.map(\.item.id) ?? []
    }

    private func add(_ id: String, after: QueueAnchor = .last, duration: Double? = nil)
        -> ConsoleCommand
    {
        .queue(.add(url: "https://example.com/\(id).mp4", id: id, title: "", durationSeconds: duration, after: after))
    }

    /// Three agents add 100 entries at once (at the end, at the front, after each other's),
    /// move and remove some, while 10% of datagrams are lost and one agent is cut off for 2 s;
    /// a concurrent edit is never lost (Syncplay replaces its playlist whole, the last writer
    /// winning). After the partition heals, every agent holds one queue, in one order.
    @Test(arguments: 0..<8)
    func concurrentEditsUnderLossAndAPartition_endInOneQueueEverywhere(seed: UInt64) {
        var random = SplitMix64(seed: 0x0_9E0E + seed)
        var conditions = NetworkConditions.perfect
        conditions.lossProbability = 0.1
        conditions.duplicationProbability = 0.02
        var simulation = Simulation(
            seed: seed, clocks: (0..<3).map { _ in SimulatedClock.random(using: &random) }, conditions: conditions)
        for node in 0..<3 { simulation.schedule(.start(node: node), at: Int64(node) * 20_000_000) }
        let cut = Int(random.next() % 3)
        simulation.schedule(.partition([[cut], (0..<3).filter { $0 != cut }]), at: 1_000_000_000)
        simulation.schedule(.heal, at: 3_000_000_000)
        var removed: Set<String> = []
        var time: Int64 = 800_000_000
        for index in 0..<100 {
            time += Int64(random.next() % 30_000_000)
            let node = Int(random.next() % 3)
            let id = "n\(node)-\(index)"
            let anchor: QueueAnchor
            switch random.next() % 4 {
            case 0: anchor = .first
            case 1 where index > 0: anchor = .after("n\(random.next() % 3)-\(random.next() % UInt64(index))")
            // An anchor its agent does not know (yet): the add is refused there, with an error.
            default: anchor = .last
            }
            simulation.schedule(.command(node: node, add(id, after: anchor)), at: time)
            if index % 10 == 9 {
                let target = "n\(random.next() % 3)-\(random.next() % UInt64(index))"
                let edit: ConsoleCommand.QueueRequest =
                    random.next() % 2 == 0 ? .remove(id: target) : .move(id: target, after: .first)
                if case .remove = edit { removed.insert(target) }
                simulation.schedule(.command(node: Int(random.next() % 3), .queue(edit)), at: time + 1_000_000)
            }
        }
        runWithoutLivelock(&simulation, until: 9_000_000_000)
        let reference = ids(simulation, 0)
        for node in 1..<3 { #expect(ids(simulation, node) == reference, "seed \(seed): node \(node) differs") }
        // Every add reached everyone: what is missing was removed (an edit may name an entry its
        // agent did not know yet: then it changed nothing).
        let missing = Set((0..<100).map { index in reference.first { $0.hasSuffix("-\(index)") } == nil ? index : -1 })
            .subtracting([-1])
        let refused = (0..<3).map { node in
            simulation.nodes[node].events.count {
                if case .commandError(let error) = $0.event { return error.message.contains("to go after") }
                return false
            }
        }.reduce(0, +)
        #expect(missing.count <= removed.count + refused, "seed \(seed): \(missing.count) entries lost")
        #expect(reference.count >= 100 - removed.count - refused)
        #expect(refused < 50, "most adds were made")
        let currents = (0..<3).map { simulation.nodes[$0].instance?.queueCurrent }
        #expect(Set(currents).count == 1 && currents[0] != nil, "one current entry: \(currents)")
    }

    /// Three agents play a queue of three 2-second items through together: at each end one
    /// transition (never two at once: Syncplay's PR #93), the next item from its start (not the
    /// previous one's position: Syncplay #138, #280, #618), no jump to 0:00 on the old item
    /// before the advance (Syncplay #683), everyone on the same item, playing, in step
    /// (Jellyfin #3734).
    @Test func threeAgentsPlayThroughTheQueueTogether() throws {
        var simulation = Simulation(
            seed: 5,
            clocks: [
                SimulatedClock(offsetNanos: 0), SimulatedClock(offsetNanos: 250_000_000, driftPPM: 30),
                SimulatedClock(offsetNanos: -120_000_000, driftPPM: -20),
            ])
        for node in 0..<3 { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
        simulation.schedule(.command(node: 0, add("a", duration: 2)), at: 600_000_000)
        simulation.schedule(.command(node: 1, add("b", duration: 2)), at: 700_000_000)
        simulation.schedule(.command(node: 2, add("c", duration: 2)), at: 800_000_000)
        simulation.schedule(.command(node: 1, .play(rate: 1)), at: 1_200_000_000)
        runWithoutLivelock(&simulation, until: 9_000_000_000)
        for node in 0..<3 {
            let events = simulation.nodes[node].events.map(\.event)
            let advances = events.compactMap { event -> String? in
                if case .queueChanged(let report) = event, report.change.kind == .advanced { return report.change.id }
                return nil
            }
            #expect(advances == ["a", "b", "c"], "node \(node): one transition at each end: \(advances)")
            var playing: [String: Double] = [:]
            for case .playing(let report) in events where playing[report.item] == nil {
                playing[report.item] = report.position
            }
            for item in ["b", "c"] { #expect(playing[item] == 0, "node \(node): \(item) starts at 0:00") }
            // Before the advance from a, a is never sent back to its start.
            let advanceFromA = events.firstIndex {
                if case .queueChanged(let report) = $0, report.change.id == "b" { return true }
                return false
            }!
            let jumpsOnA = events[..<advanceFromA].filter {
                if case .timeJumped(let report) = $0 { return report.item == "a" && report.position < 1 }
                return false
            }
            #expect(jumpsOnA.isEmpty, "node \(node): a jumped back before the advance")
        }
        // Mid-c: everyone on c, playing, at one position.
        simulation.schedule(.command(node: 0, .status), after: .zero)
        let positions = (0..<3).map { node -> Double in
            let instance = simulation.nodes[node].instance!
            #expect(instance.player.item?.id == "c")
            return instance.player.position(at: simulation.nodes[node].clock.timestamp(atTrue: simulation.nowNanos))
        }
        #expect(positions.max()! - positions.min()! < 0.001, "in step: \(positions)")
        #expect(simulation.nodes.allSatisfy { $0.instance?.queueCurrent == "c" })
    }

    /// A late joiner to a queue of 1,000 entries, mid-item: within a second it holds the queue
    /// and the current entry (Syncplay #567: an empty playlist after a reconnect), and its
    /// arrival moves nobody to the next item (Jellyfin #12422). One that leaves and comes back
    /// gets it again.
    @Test func aLateJoinerGetsAThousandEntryQueueWithinASecond_andMovesNobody() throws {
        var simulation = Simulation(
            seed: 6,
            clocks: [
                SimulatedClock(offsetNanos: 0), SimulatedClock(offsetNanos: 40_000_000),
                SimulatedClock(offsetNanos: -70_000_000),
            ])
        for node in 0..<2 { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
        for index in 0..<1_000 {
            simulation.schedule(
                .command(node: index % 2, add("entry-\(index)", duration: 600)),
                at: 500_000_000 + Int64(index) * 2_000_000)
        }
        simulation.schedule(.command(node: 0, .play(rate: 1)), at: 3_000_000_000)
        runWithoutLivelock(&simulation, until: 6_000_000_000)
        let expected = ids(simulation, 0)
        #expect(expected.count == 1_000)
        #expect(ids(simulation, 1) == expected)
        let joined = simulation.nowNanos
        simulation.schedule(.start(node: 2), at: joined)
        var gotItAt: Int64?
        while simulation.nowNanos < joined + 3_000_000_000 {
            _ = simulation.run(for: .milliseconds(20))
            if gotItAt == nil, ids(simulation, 2) == expected,
                simulation.nodes[2].instance?.queueCurrent == simulation.nodes[0].instance?.queueCurrent
            {
                gotItAt = simulation.nowNanos
            }
        }
        let took = try #require(gotItAt, "the late joiner never got the queue") - joined
        print("queue: a late joiner held all 1,000 entries and the current one \(took / 1_000_000) ms after starting")
        #expect(took <= 1_000_000_000)
        #expect(simulation.nodes.allSatisfy { $0.instance?.queueCurrent == "entry-0" }, "nobody moved on")
        #expect(simulation.nodes[2].instance?.player.item?.id == "entry-0")
        // Leaves and comes back (a new incarnation): the queue again.
        simulation.schedule(.command(node: 1, .leave), after: .zero)
        runWithoutLivelock(&simulation, for: .milliseconds(500))
        simulation.schedule(.command(node: 1, .join), after: .zero)
        runWithoutLivelock(&simulation, for: .seconds(2))
        #expect(ids(simulation, 1) == expected, "back after leaving: the whole queue")
    }

    /// A joiner whose player never gets ready (Jellyfin #17864: the group then waits forever):
    /// the group waits for it at each transition only until the start's deadline, then goes on
    /// without it, through the whole queue.
    @Test func aJoinerThatNeverGetsReady_holdsATransitionOnlyUntilTheDeadline() throws {
        var simulation = Simulation(
            seed: 9, clocks: [0, 90_000_000, -40_000_000].map { SimulatedClock(offsetNanos: $0) })
        simulation.playerOfNode[2] = SimulatedPlayer(preparationSeconds: .infinity)
        for node in 0..<2 { simulation.schedule(.start(node: node), at: Int64(node) * 10_000_000) }
        for (index, id) in ["a", "b", "c"].enumerated() {
            simulation.schedule(.command(node: 0, add(id, duration: 2)), at: 500_000_000 + Int64(index) * 50_000_000)
        }
        simulation.schedule(.command(node: 1, .play(rate: 1)), at: 1_000_000_000)
        simulation.schedule(.start(node: 2), at: 1_500_000_000)  // joins while a plays
        runWithoutLivelock(&simulation, until: 16_000_000_000)
        #expect(simulation.nodes[2].instance?.queueCurrent != nil, "the joiner got the queue")
        let deadline = Settings().startDeadline + Settings().startFallbackGrace
        for node in 0..<2 {
            let events = simulation.nodes[node].events
            func firstPlaying(_ item: String) -> Int64? {
                events.first {
                    if case .playing(let report) = $0.event { return report.item == item }
                    return false
                }?.atNanos
            }
            func advanced(to item: String) -> Int64? {
                events.first {
                    if case .queueChanged(let report) = $0.event {
                        return report.change.kind == .advanced && report.change.id == item
                    }
                    return false
                }?.atNanos
            }
            func ended(_ item: String) -> Int64? {
                events.first {
                    if case .paused(let report) = $0.event { return report.item == item && report.reason == "ended" }
                    return false
                }?.atNanos
            }
            for (previous, item) in [("a", "b"), ("b", "c")] {
                let moved = try #require(advanced(to: item), "node \(node) moved to \(item)")
                // The one that never gets ready never reaches an end: it takes no turn to advance.
                let end = try #require(ended(previous))
                #expect(moved - end < 100_000_000, "node \(node) moved on \(moved - end) ns after the end")
                let playing = try #require(firstPlaying(item), "node \(node) played \(item)")
                #expect(
                    playing - moved <= deadline.nanoseconds + 200_000_000,
                    "node \(node) waited \(playing - moved) ns for \(item)")

            }
            // The end of c: everyone who could play did, the joiner's player never got ready.
            #expect(
                events.contains {
                    if case .paused(let report) = $0.event { return report.item == "c" && report.reason == "ended" }
                    return false
                }, "node \(node) played c to its end")
        }
        #expect(simulation.nodes[2].instance?.player.isReady == false)
    }
}

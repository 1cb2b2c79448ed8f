import Testing

@testable import CoplayCore

/// The queue on its own: positions that always fit between their neighbours, and replicas that
/// converge whatever order concurrent commands arrive in.
@Suite struct SharedQueueMachineTests {
    // MARK: Positions

    @Test func aPositionAlwaysFitsBetweenItsNeighbours() {
        var random = SplitMix64(seed: 7)
        var list: [QueuePosition] = []
        for step in 0..<2_000 {
            let at = list.isEmpty ? 0 : Int(random.next() % UInt64(list.count + 1))
            let low = at > 0 ? list[at - 1] : nil
            let high = at < list.count ? list[at] : nil
            guard
                let made = QueuePosition.between(
                    low, high, site: random.next() % 4, counter: UInt32(step), random: &random)
            else {
                Issue.record("no room at step \(step)")
                return
            }
            if let low { #expect(low < made, "step \(step)") }
            if let high { #expect(made < high, "step \(step)") }
            list.insert(made, at: at)
        }
        #expect(list == list.sorted())
        // 2,000 inserts at random spots: 6 levels deep at most here, of the 8 allowed.
        #expect(list.map(\.identifiers.count).max()! < QueuePosition.depthMax, "random inserts stay shallow")
    }

    @Test func appendsStayAtOneLevel_andInsertsAtOneSpotGoDeeperUntilNoRoomIsLeft() {
        var random = SplitMix64(seed: 8)
        var last: QueuePosition?
        for step in 0..<1_000 {
            let made = QueuePosition.between(last, nil, site: 1, counter: UInt32(step), random: &random)!
            #expect(made.identifiers.count == 1)
            last = made
        }
        // Always right after the same entry: deeper and deeper, then a clear nil, never a trap.
        let first = QueuePosition.between(nil, nil, site: 1, counter: 0, random: &random)!
        var high = QueuePosition.between(first, nil, site: 1, counter: 1, random: &random)!
        var made = 0
        while let next = QueuePosition.between(first, high, site: 2, counter: UInt32(made), random: &random) {
            #expect(first < next && next < high)
            high = next
            made += 1
            if made > 100_000 { break }
        }
        #expect(made > 100, "\(made) inserts at one spot before the depth ran out")
        #expect(made < 100_000)
    }

    /// Two entries a member placed at one position: nothing fits between them, and asking is
    /// an answer (nil), not a trap.
    @Test func nothingFitsBetweenEqualPositions() {
        var random = SplitMix64(seed: 10)
        let spot = QueuePosition([.init(digit: 5, site: 9, counter: 1)])
        #expect(QueuePosition.between(spot, spot, site: 1, counter: 1, random: &random) == nil)
    }

    /// Two agents inserting at one spot at once: different positions, both between, ordered by
    /// the site that made them, the same way everywhere.
    @Test func concurrentInsertsAtOneSpotAreOrderedTheSameEverywhere() {
        var random = SplitMix64(seed: 9)
        let low = QueuePosition([.init(digit: 10, site: 5, counter: 1)])
        let high = QueuePosition([.init(digit: 11, site: 5, counter: 2)])
        var a = random
        var b = random
        let fromA = QueuePosition.between(low, high, site: 1, counter: 3, random: &a)!
        let fromB = QueuePosition.between(low, high, site: 2, counter: 3, random: &b)!
        #expect(fromA != fromB)
        for made in [fromA, fromB] { #expect(low < made && made < high) }
        #expect(fromA < fromB, "same digits: the smaller site first")
        _ = random.next()
    }

    // MARK: Replicas

    /// A replica: a queue and the commands it delivered (a vector clock), as an agent holds them.
    private struct Replica {
        var queue = SharedQueue(entriesMax: 10_000)
        var delivered = VectorClock()
        let member: Member
        var lamport: UInt64 = 0
        var counter: UInt32 = 0
        var adds = 0

        init(_ index: Int) { member = Member(id: PeerID(UInt64(index + 1)), incarnation: Incarnation(1)) }

        mutating func deliver(_ envelope: CommandEnvelope) {
            lamport = max(lamport, envelope.lamport)
            delivered[envelope.dot.origin] = max(delivered[envelope.dot.origin], envelope.dot.counter)
            _ = queue.apply(envelope, originator: Originator(member: envelope.dot.origin, name: "", isLocal: false))
        }

        /// A random queue command made from what this replica sees, delivered here at once.
        mutating func issue(using random: inout SplitMix64) -> CommandEnvelope? {
            let list = queue.ordered
            let operation: QueueOperation
            switch random.next() % 10 {
            case 0...4:
                adds += 1
                let at = list.isEmpty ? 0 : Int(random.next() % UInt64(list.count + 1))
                guard
                    let position = QueuePosition.between(
                        at > 0 ? list[at - 1].position : nil, at < list.count ? list[at].position : nil,
                        site: member.id.rawValue, counter: UInt32(lamport + 1), random: &random)
                else { return nil }
                operation = .add(QueueItem(id: "\(member.id.rawValue)-\(adds)", url: "u"), at: position)
            case 5, 6:
                guard let entry = list.randomElement(using: &random) else { return nil }
                operation = .remove(id: entry.item.id, added: entry.added)
            case 7:
                guard let entry = list.randomElement(using: &random) else { return nil }
                let others = list.filter { $0.item.id != entry.item.id }
                let at = others.isEmpty ? 0 : Int(random.next() % UInt64(others.count + 1))
                guard
                    let position = QueuePosition.between(
                        at > 0 ? others[at - 1].position : nil, at < others.count ? others[at].position : nil,
                        site: member.id.rawValue, counter: UInt32(lamport + 1), random: &random)
                else { return nil }
                operation = .move(id: entry.item.id, to: position)
            case 8:
                guard let entry = list.randomElement(using: &random) else { return nil }
                operation = .advance(
                    from: queue.currentID, to: entry.item, rate: 1, requestedAt: WallInstant(unixNanos: 1))
            default:
                guard random.next() % 4 == 0, !list.isEmpty else { return nil }
                var covering = VectorClock()
                for entry in list {
                    covering[entry.added.origin] = max(covering[entry.added.origin], entry.added.counter)
                }
                operation = .clear(covering: covering)
            }
            counter += 1
            var dependencies = delivered
            dependencies[member] = 0
            let envelope = CommandEnvelope(
                dot: Dot(origin: member, counter: counter), lamport: lamport + 1, dependencies: dependencies,
                command: Command(item: QueueChange.itemMarker, operation: .queue(operation)))
            deliver(envelope)
            return envelope
        }

        func isDeliverable(_ envelope: CommandEnvelope) -> Bool {
            guard delivered[envelope.dot.origin] == envelope.dot.counter - 1 else { return false }
            return envelope.dependencies.entries.allSatisfy { delivered[$0.key] >= $0.value }
        }
    }

    private func picture(_ queue: SharedQueue) -> [String] {
        queue.ordered.map { "\($0.item.id)@\($0.position)" } + ["current=\(queue.currentID ?? "-")"]
    }

    /// Three replicas issue 300 random commands (adds, removes, moves, clears, advances), each
    /// seeing the others' only now and then, in random causal orders: all end with one queue.
    @Test(arguments: 0..<40)
    func replicasConvergeWhateverTheOrderOfConcurrentCommands(seed: UInt64) {
        var random = SplitMix64(seed: 0x9E_0000 + seed)
        var replicas = (0..<3).map { Replica($0) }
        var sent: [CommandEnvelope] = []
        var inbox: [[CommandEnvelope]] = [[], [], []]
        for _ in 0..<300 {
            let node = Int(random.next() % 3)
            if let envelope = replicas[node].issue(using: &random) {
                sent.append(envelope)
                for other in 0..<3 where other != node { inbox[other].append(envelope) }
            }
            // Now and then a replica takes in some of what reached it, in a random causal order.
            for other in 0..<3 where random.next() % 3 == 0 {
                inbox[other].shuffle(using: &random)
                var progress = true
                while progress {
                    progress = false
                    for (index, envelope) in inbox[other].enumerated() where replicas[other].isDeliverable(envelope) {
                        replicas[other].deliver(envelope)
                        inbox[other].remove(at: index)
                        progress = true
                        break
                    }
                }
            }
        }
        for node in 0..<3 {
            inbox[node].shuffle(using: &random)
            while let index = inbox[node].firstIndex(where: { replicas[node].isDeliverable($0) }) {
                replicas[node].deliver(inbox[node].remove(at: index))
            }
            #expect(inbox[node].isEmpty)
        }
        let reference = picture(replicas[0].queue)
        for node in 1..<3 { #expect(picture(replicas[node].queue) == reference, "seed \(seed), replica \(node)") }
        // Delivered twice, nothing changes; the snapshot of the queue rebuilds it.
        var again = replicas[0]
        for envelope in sent { again.deliver(envelope) }
        #expect(picture(again.queue) == reference)
        var adopted = SharedQueue(entriesMax: 10_000)
        for winner in replicas[1].queue.winners {
            _ = adopted.apply(winner, originator: Originator(member: winner.dot.origin, name: "", isLocal: false))
        }
        #expect(picture(adopted) == reference, "seed \(seed): the snapshot")
        #expect(replicas[1].queue.winners.count <= replicas[1].queue.count + 1, "O(live entries)")
    }

    @Test func removeBeatsAConcurrentMove_andAClearKeepsAConcurrentAdd() {
        let alice = Member(id: PeerID(1), incarnation: Incarnation(1))
        let bob = Member(id: PeerID(2), incarnation: Incarnation(1))
        var random = SplitMix64(seed: 3)
        let p1 = QueuePosition.between(nil, nil, site: 1, counter: 1, random: &random)!
        let p2 = QueuePosition.between(p1, nil, site: 1, counter: 2, random: &random)!
        func envelope(_ origin: Member, _ counter: UInt32, _ lamport: UInt64, _ deps: VectorClock, _ op: QueueOperation)
            -> CommandEnvelope
        {
            CommandEnvelope(
                dot: Dot(origin: origin, counter: counter), lamport: lamport, dependencies: deps,
                command: Command(item: QueueChange.itemMarker, operation: .queue(op)))
        }
        let addA = envelope(alice, 1, 1, VectorClock(), .add(QueueItem(id: "a", url: "u"), at: p1))
        let addB = envelope(alice, 2, 2, VectorClock(), .add(QueueItem(id: "b", url: "u"), at: p2))
        let seen = VectorClock([alice: 2])
        let remove = envelope(alice, 3, 3, VectorClock(), .remove(id: "a", added: addA.dot))
        let move = envelope(
            bob, 1, 3, seen, .move(id: "a", to: QueuePosition([.init(digit: 900, site: 2, counter: 3)])))
        let clear = envelope(bob, 2, 4, seen, .clear(covering: seen))
        let addC = envelope(alice, 4, 4, VectorClock(), .add(QueueItem(id: "c", url: "u"), at: p1))
        let someone = Originator(member: alice, name: "", isLocal: false)
        var one = SharedQueue(entriesMax: 10)
        var two = SharedQueue(entriesMax: 10)
        for command in [addA, addB, remove, move] { _ = one.apply(command, originator: someone) }
        for command in [addA, addB, move, remove] { _ = two.apply(command, originator: someone) }
        #expect(one.ordered.map(\.item.id) == ["b"] && two.ordered.map(\.item.id) == ["b"], "remove beats the move")
        for command in [addC, clear] { _ = one.apply(command, originator: someone) }
        for command in [clear, addC] { _ = two.apply(command, originator: someone) }
        #expect(one.ordered.map(\.item.id) == ["c"], "the clear took b, not c added concurrently")
        #expect(two.ordered.map(\.item.id) == ["c"])
    }

    @Test func nextAndPreviousFollowTheOrder_evenFromAnEntryRemovedMeanwhile() {
        var queue = SharedQueue(entriesMax: 10)
        let alice = Member(id: PeerID(1), incarnation: Incarnation(1))
        var random = SplitMix64(seed: 4)
        var last: QueuePosition?
        var counter: UInt32 = 0
        var dots: [String: Dot] = [:]
        func apply(_ op: QueueOperation) {
            counter += 1
            let envelope = CommandEnvelope(
                dot: Dot(origin: alice, counter: counter), lamport: UInt64(counter), dependencies: VectorClock(),
                command: Command(item: QueueChange.itemMarker, operation: .queue(op)))
            if case .add(let item, _) = op { dots[item.id] = envelope.dot }
            _ = queue.apply(envelope, originator: Originator(member: alice, name: "alice", isLocal: true))
        }
        for id in ["a", "b", "c"] {
            last = QueuePosition.between(last, nil, site: 1, counter: counter, random: &random)
            apply(.add(QueueItem(id: id, url: "u"), at: last!))
        }
        #expect(queue.next(after: nil)?.item.id == "a")
        apply(.advance(from: nil, to: QueueItem(id: "b", url: "u"), rate: 0, requestedAt: WallInstant(unixNanos: 1)))
        #expect(queue.currentID == "b")
        #expect(queue.next(after: "b")?.item.id == "c" && queue.previous(before: "b")?.item.id == "a")
        apply(.remove(id: "b", added: dots["b"]!))
        #expect(queue.next(after: "b")?.item.id == "c", "after where b stood")
        #expect(queue.previous(before: "b")?.item.id == "a")
        #expect(queue.next(after: "c") == nil)
    }
}

/// How many inserts the usual patterns fit before the depth runs out (printed).
@Suite struct QueuePositionPatternTests {
    @Test func theUsualPatternsFitThousandsOfInserts() {
        var random = SplitMix64(seed: 11)
        func count(_ pattern: String, _ step: (inout [QueuePosition], inout SplitMix64, UInt32) -> Bool) -> Int {
            var list: [QueuePosition] = []
            var made = 0
            while made < 5_000, step(&list, &random, UInt32(made)) { made += 1 }
            #expect(list == list.sorted(), "\(pattern)")
            print(
                "queue positions, \(pattern): \(made) inserts, deepest \(list.map(\.identifiers.count).max() ?? 0) levels"
            )
            return made
        }
        let appends = count("appended at the end") { list, random, n in
            guard let made = QueuePosition.between(list.last, nil, site: 1, counter: n, random: &random) else {
                return false
            }
            list.append(made)
            return true
        }
        let afterOne = count("each right after the first entry") { list, random, n in
            guard !list.isEmpty else {
                list.append(QueuePosition.between(nil, nil, site: 1, counter: n, random: &random)!)
                return true
            }
            guard
                let made = QueuePosition.between(
                    list[0], list.count > 1 ? list[1] : nil, site: 1, counter: n, random: &random)
            else { return false }
            list.insert(made, at: 1)
            return true
        }
        let atFront = count("each at the front") { list, random, n in
            guard let made = QueuePosition.between(nil, list.first, site: 1, counter: n, random: &random) else {
                return false
            }
            list.insert(made, at: 0)
            return true
        }
        let inOrderInTheMiddle = count("in order after one entry in the middle") { list, random, n in
            if list.count < 2 {
                list.append(QueuePosition.between(list.last, nil, site: 1, counter: n, random: &random)!)
                return true
            }
            let at = list.count - 1  // after the newest of the run, before the last entry
            guard let made = QueuePosition.between(list[at - 1], list[at], site: 1, counter: n, random: &random)
            else { return false }
            list.insert(made, at: at)
            return true
        }
        #expect(appends >= 1_000)
        #expect(afterOne >= 1_000)
        #expect(atFront >= 1_000)
        #expect(inOrderInTheMiddle >= 1_000)
    }
}

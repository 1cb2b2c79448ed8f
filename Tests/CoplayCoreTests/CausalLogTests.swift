import CoplayCore
import Testing

@Suite struct CausalLogTests {
    let a = Member(id: PeerID(1), incarnation: Incarnation(1))
    let b = Member(id: PeerID(2), incarnation: Incarnation(1))
    let c = Member(id: PeerID(3), incarnation: Incarnation(1))

    func command(_ position: Double) -> Command {
        Command(item: "x", operation: .pause(position: position, at: WallInstant(unixNanos: 0)))
    }

    @Test func vectorClockComparison_isAPartialOrder() {
        let empty = VectorClock()
        let one = VectorClock([a: 1])
        let two = VectorClock([a: 2, b: 1])
        let other = VectorClock([b: 3])
        #expect(empty.compare(empty) == .equal)
        #expect(one.compare(two) == .before)
        #expect(two.compare(one) == .after)
        #expect(one.compare(other) == .concurrent)
        #expect(VectorClock([a: 0]) == empty, "zero entries are not stored")
        var merged = one
        merged.merge(other)
        #expect(merged == VectorClock([a: 1, b: 3]))
    }

    @Test func commandsArrivingInAnyOrder_areDeliveredInCausalOrderOnce() {
        // a issues 1, b sees it and issues 1 (depends on a:1), a issues 2 after seeing b:1.
        var logA = CausalLog()
        var logB = CausalLog()
        let a1 = logA.next(command(1), by: a)
        logA.originate(a1)
        _ = logB.receive(a1)
        let b1 = logB.next(command(2), by: b)
        logB.originate(b1)
        _ = logA.receive(b1)
        let a2 = logA.next(command(3), by: a)
        logA.originate(a2)
        #expect(a2.dependencies == VectorClock([b: 1]))
        #expect(a2.lamport > b1.lamport && b1.lamport > a1.lamport)

        // c receives them in reverse order, with a duplicate.
        var logC = CausalLog()
        var order: [Dot] = []
        for envelope in [a2, b1, a2, a1] {
            let receipt = logC.receive(envelope)
            order += receipt.delivered.map(\.dot)
        }
        #expect(order == [a1.dot, b1.dot, a2.dot])
        #expect(logC.delivered == VectorClock([a: 2, b: 1]))
        #expect(logC.receive(b1).wasDuplicate)
        #expect(logC.pendingCount == 0)
    }

    @Test func gap_isReportedAsMissingRangesToAskFor() {
        var origin = CausalLog()
        var envelopes: [CommandEnvelope] = []
        for index in 1...5 {
            let envelope = origin.next(command(Double(index)), by: a)
            origin.originate(envelope)
            envelopes.append(envelope)
        }
        var receiver = CausalLog()
        let receipt = receiver.receive(envelopes[4])
        #expect(receipt.delivered.isEmpty)
        #expect(receipt.missing == [MissingRange(origin: a, from: 1, to: 4)])
        #expect(receiver.missing(comparedTo: origin.delivered) == [MissingRange(origin: a, from: 1, to: 5)])
        #expect(origin.stored(MissingRange(origin: a, from: 1, to: 4), limit: 10) == Array(envelopes[0..<4]))
        #expect(origin.stored(MissingRange(origin: a, from: 1, to: 4), limit: 2).count == 2)
    }

    @Test func departedOrigin_isPrunedOnceEveryLiveAgentHasAllItsCommands() {
        var log = CausalLog()
        let c1 = CausalLog().next(command(1), by: c)
        _ = log.receive(c1)
        #expect(log.delivered[c] == 1)
        log.prune(departed: [c], liveDigests: [VectorClock()])
        #expect(log.delivered[c] == 1, "a live agent has not got c's command yet")
        log.prune(departed: [c], liveDigests: [VectorClock([c: 1])])
        #expect(log.delivered.isEmpty)
        // A command depending on the pruned entry is still deliverable, and c:1 stays a duplicate.
        var later = CausalLog()
        _ = later.receive(c1)
        let a1 = later.next(command(2), by: a)
        #expect(log.receive(a1).delivered == [a1])
        #expect(log.receive(c1).wasDuplicate)
    }

    @Test func pendingBuffer_isBounded() {
        var origin = CausalLog()
        var envelopes: [CommandEnvelope] = []
        for index in 1...6 {
            let envelope = origin.next(command(Double(index)), by: a)
            origin.originate(envelope)
            envelopes.append(envelope)
        }
        var receiver = CausalLog(pendingMax: 3)
        for envelope in envelopes[2...] { _ = receiver.receive(envelope) }
        #expect(receiver.pendingCount == 3)
        #expect(receiver.receive(envelopes[1]).wasDropped, "full: the command waits to be asked for again")
        // A command deliverable at once never needs the buffer.
        #expect(receiver.receive(envelopes[0]).delivered.map(\.dot.counter) == [1])
        #expect(receiver.receive(envelopes[1]).delivered.map(\.dot.counter) == [2, 3, 4, 5])
    }

    @Test func store_isBoundedAndForgetsTheOldest() {
        var log = CausalLog(storeMax: 3)
        for index in 1...5 { log.originate(log.next(command(Double(index)), by: a)) }
        #expect(log.storedCount == 3)
        #expect(log.stored(MissingRange(origin: a, from: 1, to: 5), limit: 10).map(\.dot.counter) == [3, 4, 5])
    }

    @Test func concurrentCommands_orderByLamportThenOrigin() {
        let x = CommandEnvelope(
            dot: Dot(origin: a, counter: 1), lamport: 5, dependencies: VectorClock(), command: command(1))
        let y = CommandEnvelope(
            dot: Dot(origin: b, counter: 1), lamport: 5, dependencies: VectorClock(), command: command(2))
        let z = CommandEnvelope(
            dot: Dot(origin: a, counter: 2), lamport: 6, dependencies: VectorClock(), command: command(3))
        #expect(x.orderKey < y.orderKey)
        #expect(y.orderKey < z.orderKey)
    }
}

extension CausalLogTests {
    /// Found by the playback simulation: c's entry was pruned while c's next command waited in
    /// the pending buffer for another origin's command; when that arrived, the drain delivered
    /// c#2 and a later command of c restored the stale pruned count, delivering c#2 again.
    @Test func prunedOriginSpeakingAgain_throughThePendingBuffer_isNotDeliveredTwice() {
        var originA = CausalLog()
        var originC = CausalLog()
        let c1 = originC.next(command(1), by: c)
        originC.originate(c1)
        let a1 = originA.next(command(2), by: a)
        originA.originate(a1)
        _ = originC.receive(a1)
        let c2 = originC.next(command(3), by: c)  // depends on a:1
        originC.originate(c2)
        let c3 = originC.next(command(4), by: c)
        originC.originate(c3)

        var log = CausalLog()
        _ = log.receive(c1)
        #expect(log.receive(c2).delivered.isEmpty, "c#2 waits for a#1")
        log.prune(departed: [c], liveDigests: [VectorClock([c: 1])])  // c looked gone for a while
        #expect(log.receive(a1).delivered.map(\.dot) == [a1.dot, c2.dot])
        #expect(log.receive(c3).delivered.map(\.dot) == [c3.dot])
        #expect(log.count(of: c) == 3)
        #expect(log.receive(c2).wasDuplicate)
    }
}

/// Commands at any group size: dependencies are deltas from the origin's previous command, at
/// most 47 entries, and delivery stays causal.
@Suite struct CompactCausalityTests {
    /// 64 origins, each issuing twice as the others' commands arrive in a shuffled order at
    /// every log: no command carries more than 47 dependency entries, every log delivers every
    /// command once, and each in causal order (after everything it and its origin's earlier
    /// commands depended on).
    @Test func aGroupOf64_issuesCommandsThatFit_andDeliversThemCausally() {
        let origins = (1...64).map { Member(id: PeerID(UInt64($0)), incarnation: Incarnation(1)) }
        var logs = origins.map { _ in CausalLog(pendingMax: 4096, storeMax: 4096) }
        var delivered = origins.map { _ in [CommandEnvelope]() }
        var random = SplitMix64(seed: 64)
        var inFlight: [(to: Int, envelope: CommandEnvelope)] = []
        var largest = 0
        for round in 0..<2 {
            for (index, origin) in origins.enumerated() {
                // Some of what is in flight arrives first, in a random order.
                for _ in 0..<Int(random.next() % UInt64(max(1, inFlight.count / 4) + 1)) where !inFlight.isEmpty {
                    let (to, envelope) = inFlight.remove(at: Int(random.next() % UInt64(inFlight.count)))
                    delivered[to] += logs[to].receive(envelope).delivered
                }
                let envelope = logs[index].next(
                    Command(item: "x", operation: .pause(position: Double(round), at: WallInstant(unixNanos: 0))),
                    by: origin)
                largest = max(largest, envelope.dependencies.count)
                logs[index].originate(envelope)
                delivered[index].append(envelope)
                for other in origins.indices where other != index { inFlight.append((other, envelope)) }
            }
        }
        while !inFlight.isEmpty {
            let (to, envelope) = inFlight.remove(at: Int(random.next() % UInt64(inFlight.count)))
            delivered[to] += logs[to].receive(envelope).delivered
        }
        #expect(largest <= CausalLog.dependenciesMax, "a command with \(largest) dependencies")
        #expect(largest == CausalLog.dependenciesMax, "some command had more than 47 origins to depend on")
        for (index, log) in logs.enumerated() {
            #expect(log.pendingCount == 0)
            #expect(delivered[index].count == 128, "log \(index) delivered \(delivered[index].count)")
            #expect(log.hasDeliveredTheSame(as: logs[0]))
            var seen = VectorClock()
            var implied: [Member: VectorClock] = [:]
            for envelope in delivered[index] {
                implied[envelope.dot.origin, default: VectorClock()].merge(envelope.dependencies)
                let unmet = implied[envelope.dot.origin]!.entries.filter { seen[$0.key] < $0.value }
                #expect(unmet.isEmpty, "log \(index) delivered \(envelope.dot) before \(unmet)")
                #expect(envelope.dot.counter == seen[envelope.dot.origin] + 1)
                seen[envelope.dot.origin] = envelope.dot.counter
            }
        }
    }

    @Test func dependencies_areADeltaFromTheOriginsPreviousCommand() {
        let (a, b, c) = (
            Member(id: PeerID(1), incarnation: Incarnation(1)), Member(id: PeerID(2), incarnation: Incarnation(1)),
            Member(id: PeerID(3), incarnation: Incarnation(1))
        )
        func pause() -> Command { Command(item: "x", operation: .pause(position: 0, at: WallInstant(unixNanos: 0))) }
        var logB = CausalLog()
        var logC = CausalLog()
        var logA = CausalLog()
        let b1 = logB.next(pause(), by: b)
        logB.originate(b1)
        let c1 = logC.next(pause(), by: c)
        logC.originate(c1)
        _ = logA.receive(b1)
        _ = logA.receive(c1)
        let a1 = logA.next(pause(), by: a)
        #expect(a1.dependencies == VectorClock([b: 1, c: 1]))
        logA.originate(a1)
        let a2 = logA.next(pause(), by: a)
        #expect(a2.dependencies.isEmpty, "nothing new since a#1")
        logA.originate(a2)
        let b2 = logB.next(pause(), by: b)
        logB.originate(b2)
        _ = logA.receive(b2)
        #expect(logA.next(pause(), by: a).dependencies == VectorClock([b: 2]), "only what grew")
    }
}

import Testing

@testable import CoplayCore

// The ordering machine on its own: holding for a clock, delivery, nacks, repairs. Built alone, fed inputs, its
// outputs asserted: no router, no other machine, no socket.

private let carol = Member(id: carolID, incarnation: Incarnation(300))
private let alice = Member(id: aliceID, incarnation: Incarnation(1))

@Suite struct OrderingMachineTests {
    private func command(_ counter: UInt32, by origin: Member, lamport: UInt64) -> CommandEnvelope {
        CommandEnvelope(
            dot: Dot(origin: origin, counter: counter), lamport: lamport, dependencies: VectorClock(),
            command: Command(item: "A", operation: .pause(position: 1, at: at(0).wall)))
    }

    @Test func commandFromUnknownClock_waits_thenIsDeliveredOnItsSendersClock() {
        var ordering = Ordering(settings: Settings())
        let held = ordering.receive(
            command(1, by: carol, lamport: 1), from: carol, offsetNanos: nil, now: at(0).monotonic)
        #expect(held.delivered.isEmpty && !held.wasDropped)
        let released = ordering.releaseAwaitingClock(of: carolID)
        #expect(released.count == 1)
        let receipt = ordering.receive(released[0].envelope, from: carol, offsetNanos: 2_000_000, now: at(1).monotonic)
        #expect(receipt.delivered.count == 1)
        #expect(receipt.delivered.first?.clockSource == ClockSource(peer: carolID, offsetNanos: 2_000_000))
        if case .pause(_, let when)? = receipt.delivered.first?.envelope.command.operation {
            #expect(when.unixNanos == at(0).wall.unixNanos - 2_000_000, "re-expressed on the local clock")
        } else {
            Issue.record("not a pause")
        }
    }

    @Test func gap_asksOnce_perHoldoff() {
        let settings = Settings()
        var ordering = Ordering(settings: settings)
        let first = ordering.receive(
            command(3, by: carol, lamport: 3), from: carol, offsetNanos: 0, now: at(0).monotonic)
        #expect(first.nack == [MissingRange(origin: carol, from: 1, to: 2)])
        let again = ordering.receive(
            command(4, by: carol, lamport: 4), from: carol, offsetNanos: 0, now: at(1).monotonic)
        #expect(again.nack.isEmpty, "within the holdoff")
        let later = ordering.receive(
            command(5, by: carol, lamport: 5), from: carol, offsetNanos: 0,
            now: at(0).monotonic + settings.nackHoldoff)
        #expect(!later.nack.isEmpty)
    }

    @Test func nackBookkeeping_isBoundedByThePeerLimit_evictingTheLongestQuiet() {
        var settings = Settings()
        settings.peersMax = 8
        var ordering = Ordering(settings: settings)
        for index in 0..<40 {
            let sender = Member(id: PeerID(UInt64(1000 + index)), incarnation: Incarnation(1))
            _ = ordering.receive(
                command(2, by: sender, lamport: 2), from: sender, offsetNanos: 0, now: at(Double(index)).monotonic)
        }
        #expect(ordering.nackSentAt.count == 8)
        #expect(ordering.nackSentAt[PeerID(1039)] != nil && ordering.nackSentAt[PeerID(1000)] == nil)
    }

    @Test func repairs_answerAtMostABatch() {
        var settings = Settings()
        settings.repairBatchMax = 3
        var ordering = Ordering(settings: settings)
        for counter in UInt32(1)...10 {
            _ = ordering.originate(
                ordering.next(Command(item: "A", operation: .pause(position: 1, at: at(0).wall)), by: alice),
                now: at(0).monotonic)
            #expect(ordering.log.count(of: alice) == counter)
        }
        let all = [MissingRange(origin: alice, from: 1, to: 10)]
        #expect(ordering.repairs(for: all, to: carolID, now: at(0).monotonic) { _ in 100 }.count == 3)
    }

    @Test func repairs_toOneMember_stayWithinItsByteBudget_whichRefills() {
        var settings = Settings()
        settings.repairBytesPerSecondPerPeer = 1000
        var ordering = Ordering(settings: settings)
        for _ in 0..<50 {
            _ = ordering.originate(
                ordering.next(Command(item: "A", operation: .pause(position: 1, at: at(0).wall)), by: alice),
                now: at(0).monotonic)
        }
        let all = [MissingRange(origin: alice, from: 1, to: 50)]
        #expect(ordering.repairs(for: all, to: carolID, now: at(0).monotonic) { _ in 100 }.count == 10)
        #expect(ordering.repairs(for: all, to: carolID, now: at(1).monotonic) { _ in 100 }.isEmpty, "spent")
        #expect(ordering.repairs(for: all, to: bobID, now: at(1).monotonic) { _ in 100 }.count == 10, "per member")
        #expect(
            ordering.repairs(for: all, to: carolID, now: at(501).monotonic) { _ in 100 }.count == 5, "half refilled")
    }
}

/// What one input's outputs say, read the way these tests ask.
extension [Ordering.Output] {
    var delivered: [Ordering.Delivered] {
        flatMap { output -> [Ordering.Delivered] in
            if case .deliver(let batch) = output { return batch }
            return []
        }
    }
    var nack: [MissingRange] {
        flatMap { output -> [MissingRange] in
            if case .nack(let ranges, _) = output { return ranges }
            return []
        }
    }
    var wasDropped: Bool { contains(.dropped(.pendingFull)) }
}

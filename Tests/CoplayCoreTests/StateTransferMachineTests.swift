import Testing

@testable import CoplayCore

// The state transfer machine on its own, both sides of a transfer: a snapshot made into parts
// and sent within a repair budget, asked for and resumed, assembled, verified and handed on to
// be adopted. Built alone, fed inputs, its outputs asserted: no router, no other machine.

private let carol = Member(id: carolID, incarnation: Incarnation(300))
private let alice = Member(id: aliceID, incarnation: Incarnation(1))
private let framing = Framing(session: session, sender: alice, tagBytes: 0)

/// Carol's group state: `count` commands of her own delivered, each item's winner among them.
private func source(commands count: UInt32, items: Int = 1) -> StateTransfer.Source {
    var frontier = VectorClock()
    frontier[carol] = count
    let winners = (0..<items).map { index in
        CommandEnvelope(
            dot: Dot(origin: carol, counter: count - UInt32(index)), lamport: UInt64(count) - UInt64(index),
            dependencies: VectorClock(),
            command: Command(
                item: "item-\(index)-" + String(repeating: "x", count: 60),
                operation: .pause(position: 1, at: at(0).wall)))
    }
    return StateTransfer.Source(frontier: frontier, lamport: UInt64(count), winners: winners, messages: [])
}

/// Carol's snapshot of 40 commands and 12 items, whole, in the parts of 512-byte datagrams.
private func severalParts() -> [StatePart] {
    var settings = Settings()
    settings.datagramBytesMax = 512
    var sender = StateTransfer(settings: settings)
    var budgets = RepairBudgets(settings: settings)
    return sentParts(
        sender.onStateRequest(
            StateRequest(), from: aliceID, source: source(commands: 40, items: 12), framing: framing,
            budgets: &budgets, now: at(0).monotonic))
}

private func sentParts(_ outputs: [StateTransfer.Output]) -> [StatePart] {
    outputs.flatMap { output -> [StatePart] in
        if case .send(let parts, _) = output { return parts }
        return []
    }
}

@Suite struct StateTransferMachineTests {
    @Test func aRequestIsAnsweredWithEveryPart_andTheReceiverAssemblesThemIntoOneSnapshot() throws {
        var settings = Settings()
        settings.datagramBytesMax = 512  // several parts
        var carolSide = StateTransfer(settings: settings)
        var budgets = RepairBudgets(settings: settings)
        let answer = carolSide.onStateRequest(
            StateRequest(), from: aliceID, source: source(commands: 40, items: 12), framing: framing,
            budgets: &budgets, now: at(0).monotonic)
        let parts = sentParts(answer)
        #expect(parts.count > 1, "12 winners do not fit one 512-byte datagram")
        #expect(Set(parts.map(\.snapshot)).count == 1 && parts.map(\.index) == (0..<UInt8(parts.count)).map { $0 })

        var aliceSide = StateTransfer(settings: settings)
        let log = CausalLog(settings: settings)
        var outputs: [StateTransfer.Output] = []
        for part in parts.reversed() {  // in any order
            outputs = aliceSide.onStatePart(
                part, from: carol, senderDigest: source(commands: 40).frontier, offsetNanos: 5_000, log: log,
                now: at(1).monotonic)
            if part.index != 0 { #expect(outputs.isEmpty, "kept until the last part") }
        }
        guard case .adopt(let snapshot, let clock)? = outputs.first else {
            Issue.record("no snapshot to adopt: \(outputs)")
            return
        }
        #expect(snapshot.frontier[carol] == 40 && snapshot.winners.count == 12 && snapshot.from == carol)
        #expect(clock == ClockSource(peer: carolID, offsetNanos: 5_000))
        #expect(!aliceSide.isAssembling)
    }

    @Test func theAnswerStopsAtThePeersRepairBudget_andTheRestIsResumedByTheParts_stillWanted() {
        var settings = Settings()
        settings.datagramBytesMax = 512
        settings.repairBytesPerSecondPerPeer = 1_200  // two parts' worth
        var carolSide = StateTransfer(settings: settings)
        var budgets = RepairBudgets(settings: settings)
        let whole = source(commands: 40, items: 12)
        let first = sentParts(
            carolSide.onStateRequest(
                StateRequest(), from: aliceID, source: whole, framing: framing, budgets: &budgets, now: at(0).monotonic)
        )
        #expect(first.count == 2)

        // Alice keeps the two parts; later her tick asks for the rest.
        var aliceSide = StateTransfer(settings: settings)
        let log = CausalLog(settings: settings)
        for part in first {
            _ = aliceSide.onStatePart(
                part, from: carol, senderDigest: whole.frontier, offsetNanos: 0, log: log, now: at(0).monotonic)
        }
        #expect(aliceSide.tick(now: at(1).monotonic).isEmpty, "within the holdoff")
        let resume = aliceSide.tick(now: at(0).monotonic + settings.stateRequestHoldoff)
        guard case .request(let request, let peer)? = resume.first else {
            Issue.record("no resume: \(resume)")
            return
        }
        #expect(peer == carolID && request.snapshot == first[0].snapshot)
        // The mask starts at the first part still missing: 0 and 1 are here.
        #expect(request.base == 2 && request.wanted & 1 == 1, "only the parts still wanted")

        // Carol, her budget refilled, sends only those.
        let rest = sentParts(
            carolSide.onStateRequest(
                request, from: aliceID, source: whole, framing: framing, budgets: &budgets, now: at(5_000).monotonic))
        #expect(!rest.isEmpty && rest.allSatisfy { $0.index >= 2 })
    }

    @Test func aStalledTransferIsDropped_afterTheTimeout() {
        let settings = Settings()
        var carolSide = StateTransfer(settings: settings)
        let parts = severalParts()
        _ = carolSide.onStatePart(
            parts[0], from: carol, senderDigest: VectorClock(), offsetNanos: 0, log: CausalLog(settings: settings),
            now: at(0).monotonic)
        #expect(carolSide.isAssembling)
        #expect(carolSide.tick(now: at(0).monotonic + settings.stateTransferTimeout).isEmpty)
        #expect(!carolSide.isAssembling, "given up: the next digest starts again from whoever is ahead")
    }

    @Test func partsThatDisagree_orAFrontierImplausiblyFarAhead_areRefused() {
        let settings = Settings()
        var budgets = RepairBudgets(settings: settings)
        let parts = severalParts()
        var receiver = StateTransfer(settings: settings)
        let log = CausalLog(settings: settings)
        _ = receiver.onStatePart(
            parts[0], from: carol, senderDigest: VectorClock(), offsetNanos: 0, log: log, now: at(0).monotonic)
        var forged = parts[1]
        forged.lamport += 1
        let refused = receiver.onStatePart(
            forged, from: carol, senderDigest: VectorClock(), offsetNanos: 0, log: log, now: at(1).monotonic)
        #expect(refused.first.map { if case .drop(.badState, _) = $0 { true } else { false } } == true)

        // One part alone: a frontier far beyond what carol announced and what alice has.
        var one = StateTransfer(settings: settings)
        let whole = sentParts(
            one.onStateRequest(
                StateRequest(), from: aliceID, source: source(commands: UInt32(settings.stateFrontierAheadMax) + 10),
                framing: framing, budgets: &budgets, now: at(0).monotonic))
        var fresh = StateTransfer(settings: settings)
        let jump = fresh.onStatePart(
            whole[0], from: carol, senderDigest: VectorClock(), offsetNanos: 0, log: log, now: at(0).monotonic)
        #expect(jump.first.map { if case .drop(.badState, _) = $0 { true } else { false } } == true)
    }

    @Test func aPartFromASenderWhoseClockIsUnknown_isNotWanted() {
        var receiver = StateTransfer(settings: Settings())
        let part = StatePart(snapshot: 1, index: 0, count: 1, lamport: 1, frontier: VectorClock(), winners: [])
        let outputs = receiver.onStatePart(
            part, from: carol, senderDigest: VectorClock(), offsetNanos: nil, log: CausalLog(settings: Settings()),
            now: at(0).monotonic)
        #expect(outputs.first.map { if case .drop(.stateNotWanted, _) = $0 { true } else { false } } == true)
        #expect(!receiver.isAssembling)
    }

    @Test func beingBehind_asksOncePerHoldoff() {
        let settings = Settings()
        var transfer = StateTransfer(settings: settings)
        #expect(transfer.onBehind(carol, now: at(0).monotonic) == [.request(StateRequest(), to: carolID)])
        #expect(transfer.onBehind(carol, now: at(1).monotonic).isEmpty, "within the holdoff")
        #expect(transfer.onBehind(carol, now: at(0).monotonic + settings.stateRequestHoldoff).count == 1)
    }

    @Test func aNackForCommandsNoLongerStored_isAnsweredWithTheState_onlyForANewcomer_onceAPerHoldoff() {
        let settings = Settings()
        var transfer = StateTransfer(settings: settings)
        var budgets = RepairBudgets(settings: settings)
        // This agent adopted a snapshot itself: it delivered carol's first 40 but stores none of them.
        var log = CausalLog(settings: settings)
        _ = log.adopt(frontier: source(commands: 40).frontier, lamport: 40)
        let few = [MissingRange(origin: carol, from: 1, to: 3)]
        var known = VectorClock()
        known[carol] = 1
        func nack(_ digest: VectorClock, at millis: Double) -> [StateTransfer.Output] {
            transfer.onNack(
                few, from: bobID, peerDigest: digest, log: log, source: { source(commands: 40) }, framing: framing,
                budgets: &budgets, now: at(millis).monotonic)
        }
        #expect(nack(known, at: 0).isEmpty, "a member missing a few is left to repair them elsewhere")
        #expect(sentParts(nack(VectorClock(), at: 1)).count == 1, "a newcomer gets the state")
        #expect(nack(VectorClock(), at: 2).isEmpty, "not again within the holdoff")
    }

    /// A snapshot of 255 parts, the first 240 here: the resume names the last 15 from base 240
    /// (once a trap: the mask's end was worked out in UInt8, 240 + 32 wrapping).
    @Test func aResumeBeyondPart223_namesTheMissingPartsFromItsBase() {
        let settings = Settings()
        var transfer = StateTransfer(settings: settings)
        let log = CausalLog(settings: settings)
        for index in 0..<240 {
            let part = StatePart(
                snapshot: 0xABC, index: UInt8(index), count: 255, lamport: 1, frontier: VectorClock(), winners: [])
            _ = transfer.onStatePart(
                part, from: carol, senderDigest: VectorClock(), offsetNanos: 0, log: log, now: at(0).monotonic)
        }
        let resume = transfer.tick(now: at(0).monotonic + settings.stateRequestHoldoff)
        guard case .request(let request, _)? = resume.first else {
            Issue.record("no resume: \(resume)")
            return
        }
        #expect(request.base == 240 && request.wanted == (1 << 15) - 1)
    }
}

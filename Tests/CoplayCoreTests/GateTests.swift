import Testing

@testable import CoplayCore

/// The gate as a machine of its own: each refusal, in the order the gate checks, with the
/// standing (what the rest of the agent knows) given by the test rather than by other machines.
@Suite struct GateTests {
    private let key = [UInt8](repeating: 0x42, count: 32)

    private func gate(keyed: Bool = false) -> Gate {
        Gate(
            authentication: Authentication(keys: keyed ? [key] : nil, session: session, settings: Settings()),
            session: session, own: aliceID, settings: Settings())
    }

    /// Alice joined, knowing bob as a member; nothing departed.
    private func standing(
        isJoined: Bool = true, known: Set<Member> = [bob], departed: Set<Member> = [],
        newest: [PeerID: Incarnation] = [:], own: Set<Incarnation> = [Incarnation(7)], viewers: Set<Member> = []
    ) -> Gate.Standing {
        Gate.Standing(
            isJoined: isJoined, isOwn: { own.contains($0) }, hasDeparted: { departed.contains($0) },
            newestIncarnation: { newest[$0] }, isKnown: { known.contains($0) }, isViewer: { viewers.contains($0) },
            offsetNanos: { _ in 0 })
    }

    private func verdict(
        _ gate: inout Gate, _ payload: Payload, from sender: Member = bob, sequence: UInt32 = 1,
        session: SessionID = session, source: Endpoint = bobEndpoint, standing: Gate.Standing
    ) throws -> Gate.Verdict {
        let wire = bytes(payload, from: sender, sequence: sequence, session: session)
        let datagram = try WireFormat.decode(wire, datagramBytesMax: 1400, nameBytesMax: 64)
        return gate.admit(
            datagram, bytes: wire, from: source, receivedAt: at(5).wall, now: at(5).wall, standing: standing)
    }

    private func reason(_ verdict: Gate.Verdict) -> DropReason? {
        if case .refused(let reason, _, _) = verdict { reason } else { nil }
    }

    @Test func admitsAMembersDatagramAndSaysWhetherItProvesTheSenderAlive() throws {
        var gate = gate()
        #expect(try verdict(&gate, bobHeartbeat, standing: standing()) == .admitted(provesAlive: false))
        let ready = Payload.ready(trigger: Dot(origin: bob, counter: 1))
        #expect(try verdict(&gate, ready, sequence: 2, standing: standing()) == .admitted(provesAlive: true))
        #expect(
            try verdict(&gate, .end(reason: "bye"), sequence: 3, standing: standing()) == .admitted(provesAlive: false))
    }

    @Test func refusesInTheOrderItChecks() throws {
        var gate = gate()
        #expect(
            try reason(verdict(&gate, bobHeartbeat, session: SessionID(name: "other"), standing: standing()))
                == .otherSession)
        let far = Member(id: bobID, incarnation: Incarnation(UInt32.max))
        #expect(try reason(verdict(&gate, bobHeartbeat, from: far, standing: standing())) == .implausibleIncarnation)
        let impostor = Member(id: aliceID, incarnation: Incarnation(8))
        #expect(try reason(verdict(&gate, bobHeartbeat, from: impostor, standing: standing())) == .idConflict)
        #expect(try reason(verdict(&gate, bobHeartbeat, standing: standing(isJoined: false))) == .notJoined)
        #expect(try reason(verdict(&gate, bobHeartbeat, standing: standing(departed: [bob]))) == .fromDeparted)
        let newer = [bobID: Incarnation(101)]
        #expect(try reason(verdict(&gate, bobHeartbeat, standing: standing(newest: newer))) == .staleIncarnation)
        #expect(try reason(verdict(&gate, .end(reason: "bye"), standing: standing(known: []))) == .unknownSender)
        // An announcement from a stranger is membership's to judge: admitted.
        #expect(try verdict(&gate, bobHello, standing: standing(known: [])) == .admitted(provesAlive: false))
    }

    /// A viewer a stage member counts (`Audience`) may ask for repair and for the state, as a
    /// member may; it may not send state, point traffic elsewhere, or end the session.
    @Test func aViewerMayAskForRepairAndState_andNothingElseAMemberMay() throws {
        var gate = gate()
        let viewer = standing(known: [], viewers: [bob])
        let nack = Payload.nack([MissingRange(origin: bob, from: 1, to: 2)])
        #expect(try verdict(&gate, nack, sequence: 1, standing: viewer) == .admitted(provesAlive: true))
        #expect(try reason(verdict(&gate, .stateRequest(StateRequest()), sequence: 3, standing: viewer)) == nil)
        #expect(try reason(verdict(&gate, .end(reason: "bye"), sequence: 4, standing: viewer)) == .unknownSender)
        #expect(try reason(verdict(&gate, .peerList([]), sequence: 5, standing: viewer)) == .unknownSender)
        // Not in the table: a stranger's nack is refused as before.
        #expect(try reason(verdict(&gate, nack, sequence: 6, standing: standing(known: []))) == .unknownSender)
    }

    @Test func anEchoOfItsOwnIncarnationIsNoDrop() throws {
        var gate = gate()
        let echo = Member(id: aliceID, incarnation: Incarnation(7))
        #expect(try verdict(&gate, bobHeartbeat, from: echo, standing: standing()) == .ownEcho)
    }

    @Test func aKeyedGateRefusesUntaggedAndReplayedDatagrams() throws {
        var gate = gate(keyed: true)
        #expect(try reason(verdict(&gate, bobHeartbeat, standing: standing())) == .missingTag)
        let keys = GroupKeys(keys: [key], session: session)
        var datagram = Datagram(session: session, sender: bob, sequence: 3, payload: bobHeartbeat)
        datagram.sentAt = at(5).wall
        let wire = WireFormat.encode(datagram, signedWith: keys)
        let decoded = try WireFormat.decode(wire, datagramBytesMax: 1400, nameBytesMax: 64)
        let first = gate.admit(
            decoded, bytes: wire, from: bobEndpoint, receivedAt: at(5).wall, now: at(5).wall, standing: standing())
        #expect(first == .admitted(provesAlive: false))
        // The same datagram again, from the network: refused, but it still says bob is reachable there.
        let again = gate.admit(
            decoded, bytes: wire, from: bobEndpoint, receivedAt: at(6).wall, now: at(6).wall, standing: standing())
        guard case .refused(.replayed, _, let heard) = again else {
            Issue.record("a replay was not refused: \(again)")
            return
        }
        #expect(heard?.name == "bob")
        // From the relay, the copy says nothing of the network.
        let relayed = gate.admit(
            decoded, bytes: wire, from: .relay(bobID), receivedAt: at(6).wall, now: at(6).wall, standing: standing())
        #expect(relayed == .refused(.replayed, detail: "sequence 3", heardOnNetwork: nil))
    }

    /// A forged tag is refused whatever the source says, a relay's endpoint too (a socket's
    /// source address is the sender's to write); only a datagram that came out of the relay's
    /// seal, which authenticated it under the same keys, is spared the tag's HMAC.
    @Test func aForgedTagIsRefusedUnlessTheRelaysSealVouchedForTheDatagram() throws {
        var gate = gate(keyed: true)
        let keys = GroupKeys(keys: [key], session: session)
        var datagram = Datagram(session: session, sender: bob, sequence: 3, payload: bobHeartbeat)
        datagram.sentAt = at(5).wall
        var wire = WireFormat.encode(datagram, signedWith: keys)
        wire[wire.count - 1] ^= 0xFF
        let forged = try WireFormat.decode(wire, datagramBytesMax: 1400, nameBytesMax: 64)
        for source in [bobEndpoint, .relay(bobID)] {
            let verdict = gate.admit(
                forged, bytes: wire, from: source, receivedAt: at(5).wall, now: at(5).wall, standing: standing())
            #expect(reason(verdict) == .badTag, "from \(source)")
        }
        let opened = gate.admit(
            forged, bytes: wire, from: .relay(bobID), receivedAt: at(5).wall, now: at(5).wall, standing: standing(),
            sealed: true)
        #expect(opened == .admitted(provesAlive: false))
    }
}

import CoplayCore
import Testing

/// A keyed group: what is signed, what is refused, and why.
@Suite struct GroupKeyTests {
    let key = [UInt8](repeating: 0x42, count: 32)
    let otherKey = [UInt8](repeating: 0x17, count: 32)
    let newKey = [UInt8](repeating: 0x99, count: 32)

    func keyedAlice(_ keys: [[UInt8]]) -> Instance {
        var alice = Instance(
            identity: LocalIdentity(id: aliceID, name: "alice", sessionName: "test", unicastPort: 50_001), seed: 7,
            now: at(0), keys: keys)
        _ = alice.start(now: at(0))
        return alice
    }

    /// Sent at `sentAt` (by default the start of the test's clock: every test here receives it
    /// within seconds, fresh enough for a sender whose clock is not measured yet).
    func signed(
        _ payload: Payload, from sender: Member = bob, sequence: UInt32 = 1, with keys: [[UInt8]],
        sentAt: Timestamp = at(0)
    ) -> [UInt8] {
        WireFormat.encode(
            Datagram(session: session, sender: sender, sequence: sequence, payload: payload, sentAt: sentAt.wall),
            signedWith: GroupKeys(keys: keys, session: session))
    }

    @Test func aSignedDatagram_isAccepted_untaggedForgedOtherKeyAndReplayedOnesAreDroppedByReason() {
        var alice = keyedAlice([key])
        let hello = signed(bobHello, with: [key])
        _ = alice.onDatagram(hello, from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true)
        #expect(alice.peers[bobID] != nil, "an authentic hello admits bob")
        _ = alice.onDatagram(hello, from: bobEndpoint, receivedAt: at(2), now: at(2), viaGroup: true)
        _ = alice.onDatagram(
            bytes(bobHeartbeat, from: bob, sequence: 2), from: bobEndpoint, receivedAt: at(3), now: at(3),
            viaGroup: true)
        _ = alice.onDatagram(
            signed(bobHeartbeat, sequence: 3, with: [otherKey]), from: bobEndpoint, receivedAt: at(4), now: at(4),
            viaGroup: true)
        var forged = signed(bobHeartbeat, sequence: 4, with: [key])
        forged[forged.count - 20] ^= 0x01  // a bit of the payload changed after signing
        _ = alice.onDatagram(forged, from: bobEndpoint, receivedAt: at(5), now: at(5), viaGroup: true)
        #expect(alice.counters.drops[.replayed] == 1)
        #expect(alice.counters.drops[.missingTag] == 1)
        #expect(alice.counters.drops[.badTag] == 2, "another key's tag and a forged one")
        _ = alice.onDatagram(
            signed(bobHeartbeat, sequence: 5, with: [key]), from: bobEndpoint, receivedAt: at(6), now: at(6),
            viaGroup: true)
        #expect(alice.counters.dropsTotal == 4, "a fresh authentic one is accepted")
    }

    @Test func everyDatagramSent_isSignedSoThatPeersWithTheKeyAccept() {
        var alice = keyedAlice([key])
        var bobAgent = Instance(
            identity: LocalIdentity(id: bobID, name: "bob", sessionName: "test", unicastPort: 50_002), seed: 8,
            now: at(0), keys: [key])
        let out = bobAgent.start(now: at(0))
        let hello = out.compactMap { if case .multicast(let datagram) = $0 { datagram } else { nil } }.first!
        _ = alice.onDatagram(
            bobAgent.encode(hello, at: at(1)), from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true)
        #expect(alice.peers[bobID] != nil)
    }

    @Test func rotation_anOlderKeyIsStillAccepted_butTheCurrentOneSigns() {
        var alice = keyedAlice([newKey, key])  // rotated: new first, old below it
        _ = alice.onDatagram(
            signed(bobHello, with: [key]), from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true)
        #expect(alice.peers[bobID] != nil, "bob has not rotated yet: still accepted")
        let ownHello = WireFormat.encode(
            Datagram(session: session, sender: alice.member, sequence: 9, payload: bobHello), signedWith: alice.keys)
        #expect(GroupKeys(keys: [newKey], session: session).verifies(ownHello), "signed with the new key")
        #expect(!GroupKeys(keys: [key], session: session).verifies(ownHello))
        alice.onKeysChanged([newKey])  // the rotation is over (SIGHUP after the file changed)
        _ = alice.onDatagram(
            signed(bobHeartbeat, sequence: 2, with: [key]), from: bobEndpoint, receivedAt: at(2), now: at(2),
            viaGroup: true)
        #expect(alice.counters.drops[.badTag] == 1)
    }

    @Test func keysAreDerivedPerSession_soTagsDoNotCarryOver() {
        let bytes = signed(bobHello, with: [key])
        #expect(GroupKeys(keys: [key], session: session).verifies(bytes))
        #expect(!GroupKeys(keys: [key], session: SessionID(name: "another")).verifies(bytes))
    }

    @Test func anIncarnationFarAheadOfTheClock_isATakeoverAttempt() {
        var alice = makeInstance()
        _ = alice.start(now: at(0))
        let takeover = Member(id: bobID, incarnation: Incarnation(.max))
        _ = alice.onDatagram(
            bytes(bobHello, from: takeover), from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true)
        #expect(alice.counters.drops[.implausibleIncarnation] == 1 && alice.peers.isEmpty)
    }

    @Test func keyFiles_parseCurrentAndOlder_andRefuseWhatIsNotAKey() throws {
        let text = "# a comment\n\n\(Hex.encode(newKey))\n  \(Hex.encode(key))  \n"
        #expect(try GroupKeys.parse(keyFile: text).get() == [newKey, key])
        for bad in ["", "# only a comment", "abcd", Hex.encode(key) + "\n" + Hex.encode(key) + "\n" + Hex.encode(key)] {
            guard case .failure = GroupKeys.parse(keyFile: bad) else {
                Issue.record("accepted '\(bad)'")
                continue
            }
        }
    }
}

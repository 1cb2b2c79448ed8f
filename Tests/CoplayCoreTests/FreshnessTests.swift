import CoplayCore
import Testing

/// Freshness: what was recorded from the wire or a relay and replayed later changes nothing. Two
/// keyed agents whose datagrams the test carries by hand, each encoded as the shell would send
/// it (stamped with its send time and signed), so that the test can keep a recording and play it
/// into a later session.
@Suite struct FreshnessTests {
    private let key = [UInt8](repeating: 0x42, count: 32)
    private let aliceEndpoint = Endpoint(address: 0x7F00_0001, port: 50_001)
    private let day = 86_400_000.0

    /// An agent of the keyed group, not started yet.
    private func agent(_ id: PeerID, _ name: String, at start: Timestamp) -> Instance {
        Instance(
            identity: LocalIdentity(id: id, name: name, sessionName: "test", unicastPort: 50_001), seed: id.rawValue,
            now: start, keys: [key])
    }

    /// An agent of the keyed group, started at `start`.
    private func keyed(_ id: PeerID, _ name: String, at start: Timestamp) -> Instance {
        var started = agent(id, name, at: start)
        _ = started.start(now: start)
        return started
    }

    /// Each datagram of `directives` as `sender` puts it on the wire at `now`.
    private func wire(_ directives: [Directive], of sender: Instance, at now: Timestamp) -> [[UInt8]] {
        (directives.multicasts + directives.unicasts.map { $0.0 }).map { sender.encode($0, at: now) }
    }

    /// Alice and bob from `start`, having exchanged hellos and probes until each has measured the
    /// other's clock; every datagram bob put on the wire is returned too (what a recorder kept).
    private func meeting(at start: Double) throws -> (alice: Instance, bob: Instance, recorded: [[UInt8]]) {
        var alice = agent(aliceID, "alice", at: at(start))
        var bob = agent(bobID, "bob", at: at(start))
        var toBob = wire(alice.start(now: at(start)), of: alice, at: at(start))
        var toAlice = wire(bob.start(now: at(start)), of: bob, at: at(start))
        var recorded = toAlice
        var millis = start + 1
        while alice.clockEstimate(of: bobID, at: at(millis).monotonic) == nil
            || bob.clockEstimate(of: aliceID, at: at(millis).monotonic) == nil
        {
            try #require(millis < start + 20, "the clocks are known within a few exchanges")
            let now = at(millis)
            let (forBob, forAlice) = (toBob, toAlice)
            (toBob, toAlice) = ([], [])
            for bytes in forBob {
                toAlice += wire(
                    bob.onDatagram(bytes, from: aliceEndpoint, receivedAt: now, now: now, viaGroup: true), of: bob,
                    at: now)
            }
            for bytes in forAlice {
                toBob += wire(
                    alice.onDatagram(bytes, from: bobEndpoint, receivedAt: now, now: now, viaGroup: true), of: alice,
                    at: now)
            }
            recorded += toAlice
            millis += 0.1
        }
        return (alice, bob, recorded)
    }

    @Test func aRecordedEnd_andHellos_replayedIntoALaterSession_areRefused_andTheSessionGoesOn() throws {
        var (alice, bob, recorded) = try meeting(at: 0)
        let ending = bob.onConsoleLine("end movie-over", now: at(1000))
        recorded += wire(ending, of: bob, at: at(1000))
        for bytes in wire(ending, of: bob, at: at(1000)) {
            _ = alice.onDatagram(bytes, from: bobEndpoint, receivedAt: at(1000), now: at(1000), viaGroup: true)
        }
        #expect(!alice.state.isJoined, "the end, live, ends the session: the recording holds a real end")

        // The next evening, the same group (same key, same session name) meets again.
        var tonight = keyed(aliceID, "alice", at: at(day))
        for (index, bytes) in recorded.enumerated() {
            let now = at(day + 1000 + Double(index))
            _ = tonight.onDatagram(bytes, from: bobEndpoint, receivedAt: now, now: now, viaGroup: true)
        }
        #expect(tonight.state.isJoined, "yesterday's end ends nothing")
        #expect(tonight.peers.isEmpty, "no ghost of yesterday's bob")
        let replies = recorded.filter { (try? WireFormat.decode($0))?.payload.type == .probeReply }.count
        #expect(
            tonight.counters.drops[.stale] == Int64(recorded.count - replies),
            "every recorded datagram refused as stale")
        #expect(
            tonight.counters.dropsTotal == recorded.count,
            "and probe replies, which answer no probe of hers, too: \(tonight.counters.drops)")
        #expect(tonight.log.delivered.isEmpty, "nothing of yesterday's in tonight's log")
    }

    @Test func aLateJoiner_refusesAMemberHeardOnlyInARecording_olderThanTheUnmeasuredWindow() throws {
        let (_, bob, recorded) = try meeting(at: 0)
        _ = bob
        let window = Settings().sentTimeUnsyncedMax
        // Started 6 s after the recording, a newcomer has measured nobody's clock.
        var late = keyed(carolID, "carol", at: at(6000))
        for bytes in recorded {
            _ = late.onDatagram(bytes, from: bobEndpoint, receivedAt: at(6000), now: at(6000), viaGroup: true)
        }
        let replies = recorded.filter { (try? WireFormat.decode($0))?.payload.type == .probeReply }.count
        #expect(late.peers.isEmpty && late.counters.drops[.stale] == Int64(recorded.count - replies))
        // The window's edge: within it, a newcomer takes the same hellos (bob may well be there).
        var early = keyed(carolID, "carol", at: at(window.seconds * 1000 - 100))
        for bytes in recorded {
            let now = at(window.seconds * 1000 - 100)
            _ = early.onDatagram(bytes, from: bobEndpoint, receivedAt: now, now: now, viaGroup: true)
        }
        #expect(early.peers[bobID] != nil && early.counters.drops[.stale] == nil)
    }

    @Test func aThawedBacklog_isRefusedOnceOlderThanTheMeasuredWindow_andALeftPeerStaysGone() throws {
        var (alice, bob, _) = try meeting(at: 0)
        // A heartbeat of bob's, sent at 1 s, is held by a frozen relay server.
        let held = wire(bob.onTick(now: at(1000)), of: bob, at: at(1000))
        let heartbeat = try #require(
            held.first { (try? WireFormat.decode($0))?.payload.type == .heartbeat } ?? held.first)
        // One second late is still news by bob's measured clock…
        _ = alice.onDatagram(heartbeat, from: bobEndpoint, receivedAt: at(2000), now: at(2000), viaGroup: true)
        #expect(alice.counters.drops[.stale] == nil)
        // …bob then leaves, and alice forgets the departure after `departedMemory`.
        let leaving = bob.onConsoleLine("leave", now: at(2100))
        for bytes in wire(leaving, of: bob, at: at(2100)) {
            _ = alice.onDatagram(bytes, from: bobEndpoint, receivedAt: at(2100), now: at(2100), viaGroup: true)
        }
        #expect(alice.peers[bobID] == nil)
        _ = alice.onTick(now: at(14_000))
        // The server thaws at 15 s: the backlog (3 s old is enough: within the unmeasured window,
        // beyond the measured one) re-admits nobody.
        for (index, bytes) in held.enumerated() {
            let arrival = at(4000 + Double(index))
            _ = alice.onDatagram(bytes, from: bobEndpoint, receivedAt: arrival, now: at(15_000), viaGroup: true)
        }
        #expect(alice.peers[bobID] == nil, "bob stays gone")
        #expect((alice.counters.drops[.stale] ?? 0) >= 1)
    }

    @Test func aStampFarAheadOrOutOfRange_isRefused_andNoneAtAllInAKeyedGroup() throws {
        var (alice, bob, _) = try meeting(at: 0)
        let keys = try #require(bob.keys)
        func heartbeat(sequence: UInt32, sentAt: WallInstant?) -> [UInt8] {
            WireFormat.encode(
                Datagram(
                    session: session, sender: bob.member, sequence: sequence, payload: bobHeartbeat, sentAt: sentAt),
                signedWith: keys)
        }
        let now = at(500)
        for (sequence, sentAt) in [
            (900, at(1500).wall), (901, WallInstant(unixNanos: .min)), (902, WallInstant(unixNanos: .max)), (903, nil),
            // A stamp wrapped past Int64's end: an age at the edge of the range, said, not negated.
            (905, WallInstant(unixNanos: at(500).wall.unixNanos &+ Int64.max &- 1)),
        ] as [(UInt32, WallInstant?)] {
            _ = alice.onDatagram(
                heartbeat(sequence: sequence, sentAt: sentAt), from: bobEndpoint, receivedAt: now, now: now,
                viaGroup: true)
        }
        #expect(alice.counters.drops[.stale] == 5)
        _ = alice.onDatagram(
            heartbeat(sequence: 904, sentAt: at(499).wall), from: bobEndpoint, receivedAt: now, now: now,
            viaGroup: true)
        #expect(alice.counters.drops[.stale] == 5, "a fresh one passes")
    }

    @Test func aCommandOfAnOlderIncarnation_isRefusedAtTheGate() throws {
        var alice = try aliceKnowingBobsClock()
        let older = Member(id: bobID, incarnation: Incarnation(bob.incarnation.rawValue - 1))
        let pause = CommandEnvelope(
            dot: Dot(origin: older, counter: 1), lamport: 5, dependencies: VectorClock(),
            command: Command(item: "film", operation: .pause(position: 1, at: at(20).wall)))
        _ = alice.onDatagram(
            bytes(.command(pause, isRepair: false), from: older, sequence: 7), from: bobEndpoint, receivedAt: at(20),
            now: at(20), viaGroup: true)
        #expect(alice.counters.drops[.staleIncarnation] == 1)
        #expect(alice.log.delivered[older] == 0)
    }

    @Test func anEndFromNoMember_endsNothing() throws {
        var alice = makeInstance()
        _ = alice.start(now: at(0))
        let stranger = Member(id: carolID, incarnation: Incarnation(100))
        _ = alice.onDatagram(
            bytes(.end(reason: "movie-over"), from: stranger), from: bobEndpoint, receivedAt: at(5), now: at(5),
            viaGroup: true)
        #expect(alice.state.isJoined)
        #expect(alice.counters.drops[.unknownSender] == 1)
    }
}

import Testing

@testable import CoplayCore

/// The relay as the core carries it (`RelayCarriage`): what a shell publishes and on which
/// subject, what it hands back, and what is refused. Two instances talk through nothing but the
/// frames `PlayerLoop` gives out, as two shells on a NATS cluster would.
@Suite struct RelayCarriageTests {
    private let key = (0..<32).map { UInt8($0 ^ 0x5A) }

    private func agent(_ id: PeerID, _ name: String, entropy: UInt8, key: [UInt8]? = nil) -> Instance {
        Instance(
            identity: LocalIdentity(id: id, name: name, sessionName: "movie night", unicastPort: 50_001), seed: 3,
            now: at(0), keys: [key ?? self.key], relayEntropy: [UInt8](repeating: entropy, count: 32))
    }

    /// Carries out `directives` at `now` and returns what the shell would do with the network.
    private func steps(_ directives: [Directive], _ instance: inout Instance, now: Timestamp)
        -> (lan: [Endpoint?], frames: [(frame: [UInt8], subject: String)])
    {
        var player = NoPlayer()
        var result: (lan: [Endpoint?], frames: [(frame: [UInt8], subject: String)]) = ([], [])
        _ = PlayerLoop.carryOut(
            directives, instance: &instance, player: &player, now: { now },
            carry: { step in
                switch step {
                case .datagram(_, let to, _): result.lan.append(to)
                case .publish(let frame, let subject): result.frames.append((frame, subject))
                default: break
                }
            })
        return result
    }

    private struct NoPlayer: PlayerLoop.Player {
        mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] { [] }
    }

    /// The stage's membership goes on the stage's subject; what everyone needs (commands, the
    /// end) on the group's, which the audience hears too.
    @Test func groupDatagramsGoOnTheLANAndTheGroupSubject_andTheOtherAgentAdmitsThem() {
        var alice = agent(aliceID, "alice", entropy: 1)
        var bob = agent(bobID, "bob", entropy: 2)
        #expect(alice.relaySubscriptions.count == 3)
        let (group, stage) = (alice.relaySubscriptions[0], alice.relaySubscriptions[2])
        #expect(group.hasSuffix(".all") && stage.hasSuffix(".stage"))
        #expect(bob.relaySubscriptions.contains(group), "one group subject for the whole group")
        #expect(bob.relaySubscriptions.contains(stage), "and one for its stage")
        let hello = steps(alice.start(now: at(0)), &alice, now: at(0))
        #expect(hello.lan == [nil], "the hello goes to the LAN's group once")
        #expect(hello.frames.map(\.subject) == [stage], "a hello is the stage's: the audience does not hear it")
        _ = steps(bob.start(now: at(1)), &bob, now: at(1))
        for frame in hello.frames {
            _ = bob.onRelayFrame(frame.frame, subject: frame.subject, receivedAt: at(2), now: at(2))
        }
        #expect(bob.isPeer(aliceID))
        #expect(bob.counters.relayFramesRefused == 0)
    }

    @Test func aDatagramToARelayPeerGoesOnlyToThatPeersSubject() {
        var alice = agent(aliceID, "alice", entropy: 1)
        _ = alice.start(now: at(0))
        let datagram = Datagram(session: alice.session, sender: alice.member, sequence: 9, payload: bobHeartbeat)
        let out = steps([.unicast(datagram, to: .relay(bobID))], &alice, now: at(1))
        #expect(out.lan.isEmpty, "nothing to the discard-only block on the LAN")
        let bob = agent(bobID, "bob", entropy: 2)
        #expect(out.frames.map(\.subject) == [bob.relaySubscriptions[1]], "bob's own subject")
        let lan = steps([.unicast(datagram, to: bobEndpoint)], &alice, now: at(1))
        #expect(lan.lan == [bobEndpoint] && lan.frames.isEmpty, "a LAN endpoint is not the relay's")
    }

    @Test func aFrameUnderAnotherKey_isRefusedCountedAndSaid() {
        var mallory = agent(PeerID(0xBAD), "mallory", entropy: 3, key: [UInt8](repeating: 9, count: 32))
        var bob = agent(bobID, "bob", entropy: 2)
        _ = bob.start(now: at(0))
        let frames = steps(mallory.start(now: at(0)), &mallory, now: at(0)).frames
        let out = bob.onRelayFrame(frames[0].frame, subject: bob.relaySubscriptions[0], receivedAt: at(1), now: at(1))
        #expect(bob.counters.relayFramesRefused == 1)
        #expect(out.contains { if case .diagnose(let text) = $0 { text.contains("did not open") } else { false } })
        #expect(!bob.isPeer(PeerID(0xBAD)))
    }

    /// A frame longer than any sealed datagram is refused unread, though it opens under the key:
    /// no datagram of more than 1,200 bytes is sealed, so nothing longer is opened and decoded.
    @Test func aFrameLongerThanAnySealedDatagram_isRefusedUnopened() {
        var bob = agent(bobID, "bob", entropy: 2)
        _ = bob.start(now: at(0))
        #expect(RelaySeal.overheadBytes - 2 + RelaySeal.paddedSizes.last! == 1231, "the longest v2 frame")
        let seal = RelaySeal(keys: [key], sessionName: "movie night")
        let long = seal.seal(
            bytes(bobHello, from: Member(id: aliceID, incarnation: Incarnation(5)))
                + [UInt8](repeating: 0, count: 1_250),
            subject: seal.groupSubject,
            nonce: [UInt8](repeating: 3, count: 12))
        #expect(long.count > 1231 && seal.open(long, subject: seal.groupSubject) != nil, "it would open")
        _ = bob.onRelayFrame(long, subject: seal.groupSubject, receivedAt: at(1), now: at(1))
        #expect(bob.counters.relayFramesRefused == 1)
        #expect(bob.counters.datagramsReceived == 0, "not decoded")
    }

    /// Viewers (`--audience`) hear the group's subject and their own, not the stage's; their hellos
    /// go to the speaker's subject alone (the stage's other members never open them), to which the
    /// speaker subscribes as it begins to speak; the speaker answers each one, counts them in a table that a
    /// flood fills to its bound and no further, and takes none into its membership.
    @Test func viewersAreAnsweredAndCounted_neverMembers_andAFloodFillsTheTableAndNoMore() {
        var settings = Settings()
        settings.audience.viewersMax = 20
        var alice = Instance(
            identity: LocalIdentity(id: aliceID, name: "alice", sessionName: "movie night", unicastPort: 50_001),
            settings: settings, seed: 3, now: at(0), keys: [key], relayEntropy: [UInt8](repeating: 1, count: 32))
        _ = alice.start(now: at(0))
        let seal = RelaySeal(keys: [key], sessionName: "movie night")
        #expect(!alice.relaySubscriptions.contains(seal.speakerSubject))
        let ticked = alice.onTick(now: at(0))
        #expect(ticked.contains(.resubscribe) && alice.relaySubscriptions.last == seal.speakerSubject, "she speaks")
        var viewerSettings = Settings()
        viewerSettings.audience.role = .viewer
        var answered = 0
        for index in 0..<50 {
            let id = PeerID(0x1000 + UInt64(index))
            var viewer = Instance(
                identity: LocalIdentity(id: id, name: "v\(index)", sessionName: "movie night", unicastPort: 50_002),
                settings: viewerSettings, seed: UInt64(index), now: at(1), keys: [key],
                relayEntropy: [UInt8](repeating: UInt8(10 + index), count: 32))
            #expect(viewer.isViewer && viewer.relaySubscriptions == seal.subscriptions(own: id, onStage: false))
            let hello = steps(viewer.start(now: at(1)), &viewer, now: at(1))
            #expect(hello.lan.isEmpty && hello.frames.map(\.subject) == [seal.speakerSubject], "to the speaker alone")
            for frame in hello.frames {
                let out = alice.onRelayFrame(frame.frame, subject: frame.subject, receivedAt: at(2), now: at(2))
                answered += steps(out, &alice, now: at(2)).frames.filter { $0.subject == seal.peerSubject(id) }.count
            }
        }
        #expect(answered == 50, "every viewer's hello is answered, on its own subject")
        #expect(alice.viewersCounted == 20 && alice.counters.viewersRefused == 30)
        #expect(alice.peers.isEmpty, "no viewer is a member")
    }

    /// Two stage members that started alone each speak, and so hear the viewers' hellos; once each
    /// has the other, the one that ranks second stops speaking and leaves that subject (its shell
    /// told to subscribe again), so that one stage member alone opens a viewer's join.
    @Test func aStageMemberThatFindsAnEarlierOne_stopsHearingTheViewersHellos() {
        var alice = agent(aliceID, "alice", entropy: 1)
        var bob = agent(bobID, "bob", entropy: 2)
        let speaker = RelaySeal(keys: [key], sessionName: "movie night").speakerSubject
        let aliceHello = steps(alice.start(now: at(0)), &alice, now: at(0)).frames
        let bobHello = steps(bob.start(now: at(0)), &bob, now: at(0)).frames
        _ = alice.onTick(now: at(1))
        _ = bob.onTick(now: at(1))
        #expect(
            alice.relaySubscriptions.contains(speaker) && bob.relaySubscriptions.contains(speaker), "alone, each speaks"
        )
        for frame in aliceHello {
            _ = bob.onRelayFrame(frame.frame, subject: frame.subject, receivedAt: at(2), now: at(2))
        }
        for frame in bobHello {
            _ = alice.onRelayFrame(frame.frame, subject: frame.subject, receivedAt: at(2), now: at(2))
        }
        #expect(alice.isPeer(bobID) && bob.isPeer(aliceID))
        let aliceTick = alice.onTick(now: at(3))
        let bobTick = bob.onTick(now: at(3))
        let hearing = [alice, bob].filter { $0.relaySubscriptions.contains(speaker) }
        #expect(hearing.count == 1, "one speaker hears the viewers' hellos")
        #expect(aliceTick.contains(.resubscribe) != bobTick.contains(.resubscribe), "the other was told to leave them")
    }

    /// A member of the stage is never a viewer too: bob, a peer, announcing himself with the viewer
    /// bit is neither counted nor let go (as a viewer his commands' times would read as alice's).
    @Test func aStageMemberClaimingToBeAViewer_isIgnored() {
        var alice = agent(aliceID, "alice", entropy: 1)
        var bob = agent(bobID, "bob", entropy: 2)
        _ = alice.start(now: at(0))
        for frame in steps(bob.start(now: at(1)), &bob, now: at(1)).frames {
            _ = alice.onRelayFrame(frame.frame, subject: frame.subject, receivedAt: at(2), now: at(2))
        }
        #expect(alice.isPeer(bobID))
        let seal = RelaySeal(keys: [key], sessionName: "movie night")
        let claim = Announcement(unicastPort: 50_001, name: "bob", isViewer: true)
        for (sequence, payload) in [(50, Payload.heartbeat(claim)), (51, .hello(claim))] {
            let datagram = Datagram(
                session: bob.session, sender: bob.member, sequence: UInt32(sequence), payload: payload)
            let frame = seal.seal(
                bob.encode(datagram, at: at(3)), subject: seal.stageSubject,
                nonce: [UInt8](repeating: UInt8(sequence), count: 12))
            _ = alice.onRelayFrame(frame, subject: seal.stageSubject, receivedAt: at(3), now: at(3))
        }
        #expect(alice.counters.datagramsReceived >= 3, "the claims were read")
        #expect(alice.viewersCounted == 0, "a member is not counted as a viewer")
        #expect(alice.isPeer(bobID), "and stays a member")
    }

    /// A summary of the audience counts only from a member of the stage: one from a key holder
    /// that is not (a viewer, a stranger) is dropped and counted, however many it claims; bob's
    /// counts toward alice's total. Alone, alice speaks, and her own goes to the group's subject.
    @Test func anAudienceSummary_countsOnlyFromAStageMember() {
        var alice = agent(aliceID, "alice", entropy: 1)
        var bob = agent(bobID, "bob", entropy: 2)
        let aliceFrames =
            steps(alice.start(now: at(0)), &alice, now: at(0)).frames
            + steps(alice.onTick(now: at(0.5)), &alice, now: at(0.5)).frames
        let seal = RelaySeal(keys: [key], sessionName: "movie night")
        let summaries = aliceFrames.filter { frame in
            seal.open(frame.frame, subject: frame.subject).flatMap { try? WireFormat.decode($0) }.map {
                if case .audience = $0.payload { true } else { false }
            } ?? false
        }
        #expect(summaries.map(\.subject) == [seal.groupSubject], "the speaker's summary, to everyone")
        #expect(alice.watching == 0)
        for frame in steps(bob.start(now: at(1)), &bob, now: at(1)).frames {
            _ = alice.onRelayFrame(frame.frame, subject: frame.subject, receivedAt: at(2), now: at(2))
        }
        #expect(alice.isPeer(bobID))
        func summary(from sender: Member, _ viewers: UInt32, sequence: UInt8, encode: (Datagram) -> [UInt8]) -> [UInt8]
        {
            let datagram = Datagram(
                session: bob.session, sender: sender, sequence: UInt32(sequence),
                payload: .audience(AudienceSummary(viewers: viewers, audience: viewers)))
            return seal.seal(
                encode(datagram), subject: seal.stageSubject, nonce: [UInt8](repeating: sequence, count: 12))
        }
        let stranger = Member(id: PeerID(0xBAD), incarnation: Incarnation(1))
        let dropsBefore = alice.counters.drops[.unknownSender] ?? 0
        let forged = summary(from: stranger, 4_000_000, sequence: 60) { bob.encode($0, at: at(3)) }
        _ = alice.onRelayFrame(forged, subject: seal.stageSubject, receivedAt: at(3), now: at(3))
        #expect(alice.counters.drops[.unknownSender] == dropsBefore + 1, "dropped and counted")
        #expect(alice.watching == 0, "a stranger's count counts nothing")
        let bobs = summary(from: bob.member, 7, sequence: 61) { bob.encode($0, at: at(3)) }
        _ = alice.onRelayFrame(bobs, subject: seal.stageSubject, receivedAt: at(3), now: at(3))
        #expect(alice.watching == 7, "bob's seven viewers")
    }

    @Test func nonceSourcesNeverRepeat_andDifferByEntropy() {
        var first = NonceSource(entropy: [UInt8](repeating: 1, count: 32))
        var second = NonceSource(entropy: [UInt8](repeating: 2, count: 32))
        let a = (0..<1000).map { _ in first.next() }
        let b = (0..<1000).map { _ in second.next() }
        #expect(Set(a).count == 1000 && Set(b).count == 1000)
        #expect(Set(a).isDisjoint(with: b))
        #expect(a.allSatisfy { $0.count == 12 })
        // Block n of ChaCha20's key stream under the entropy (RFC 8439 §2.3), its first 12 bytes.
        #expect(
            a[5]
                == Array(
                    ChaCha20.block(
                        key: [UInt8](repeating: 1, count: 32), nonce: [UInt8](repeating: 0, count: 12), counter: 5
                    ).prefix(12)))
    }

    @Test func aRotationMovesTheSubjectsAndSealsUnderTheNewKey() {
        var alice = agent(aliceID, "alice", entropy: 1)
        let before = alice.relaySubscriptions
        var newKey = key
        newKey[0] ^= 1
        alice.onKeysChanged([newKey, key])
        #expect(alice.relaySubscriptions.count == 6)
        #expect(alice.relaySubscriptions.contains(before[0]), "the old key's group subject still heard")
        #expect(alice.relaySubscriptions[0] != before[0], "the new key's first")
        // Sealed now under the new key, on its subject: a holder of the new key alone opens it.
        _ = alice.start(now: at(0))
        let datagram = Datagram(session: alice.session, sender: alice.member, sequence: 9, payload: bobHeartbeat)
        var player = NoPlayer()
        var frames: [(frame: [UInt8], subject: String)] = []
        _ = PlayerLoop.carryOut(
            [.multicast(datagram)], instance: &alice, player: &player, now: { at(1) },
            carry: { if case .publish(let frame, let subject) = $0 { frames.append((frame, subject)) } })
        let newOnly = RelaySeal(keys: [newKey], sessionName: "movie night")
        #expect(frames.map(\.subject) == [newOnly.stageSubject], "a heartbeat: the stage's subject")
        #expect(frames.first.flatMap { newOnly.open($0.frame, subject: $0.subject) } != nil)
    }
}

/// The stranger quota of a turn of reading (`ReceiveTurn`): past its share, strangers are
/// dropped unread and counted; a newcomer's hello is set aside and admitted when the socket
/// emptied within the turn.
@Suite struct ReceiveTurnTests {
    private func crowd(_ count: Int) -> [[UInt8]] {
        (0..<count).map { index in
            bytes(bobHeartbeat, from: Member(id: PeerID(UInt64(0x5000 + index)), incarnation: Incarnation(1)))
        }
    }

    private func alice() -> Instance {
        var settings = Settings()
        settings.receiveQueueDatagramsMax = 100
        settings.receiveQueueStrangersPercent = 10
        settings.peersMax = 500
        var alice = makeInstance(settings: settings)
        _ = alice.start(now: at(0))
        return alice
    }

    @Test func pastTheShare_strangersAreDroppedUnread_andAHelloIsAdmittedWhenTheSocketEmptied() {
        var alice = alice()
        var turn = alice.beginReceiveTurn()
        for datagram in crowd(30) {
            _ = alice.onDatagram(
                datagram[...], from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true, turn: &turn)
        }
        _ = alice.onDatagram(
            bytes(bobHello, from: bob)[...], from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true,
            turn: &turn)
        #expect(alice.counters.receiveQueueDrops == 20, "10 strangers read, 20 dropped unread")
        #expect(alice.counters.datagramsReceived == 10)
        #expect(!alice.isPeer(bobID), "bob's hello set aside")
        _ = alice.endReceiveTurn(turn, drained: true, now: at(2))
        #expect(alice.isPeer(bobID), "and admitted at the turn's end")
        #expect(alice.counters.receiveQueueDrops == 20)
    }

    @Test func aTurnCutShort_dropsTheHellosSetAside() {
        var alice = alice()
        var turn = alice.beginReceiveTurn()
        for datagram in crowd(10) + [bytes(bobHello, from: bob)] {
            _ = alice.onDatagram(
                datagram[...], from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true, turn: &turn)
        }
        _ = alice.endReceiveTurn(turn, drained: false, now: at(2))
        #expect(!alice.isPeer(bobID))
        #expect(alice.counters.receiveQueueDrops == 1)
    }

    /// A datagram on a socket from a relay endpoint (the discard-only block no network has) is
    /// forged: dropped and counted by the core, not silently by one shell.
    @Test func aRelaySourceOnASocket_isAForgeryDroppedAndCounted() {
        var alice = alice()
        var turn = alice.beginReceiveTurn()
        let out = alice.onDatagram(
            bytes(bobHello, from: bob)[...], from: .relay(bobID), receivedAt: at(1), now: at(1), viaGroup: true,
            turn: &turn)
        _ = alice.endReceiveTurn(turn, drained: true, now: at(1))
        #expect(alice.counters.drops[.forgedSource] == 1)
        #expect(!alice.isPeer(bobID))
        #expect(out.contains { if case .diagnose = $0 { true } else { false } }, "said: a hostile sender")
    }

    @Test func membersAreNeverCountedAsStrangers() {
        var alice = alice()
        _ = alice.onDatagram(
            bytes(bobHello, from: bob), from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true)
        var turn = alice.beginReceiveTurn()
        for sequence in 2..<40 {
            _ = alice.onDatagram(
                bytes(bobHeartbeat, from: bob, sequence: UInt32(sequence))[...], from: bobEndpoint, receivedAt: at(2),
                now: at(2),
                viaGroup: true, turn: &turn)
        }
        #expect(alice.counters.receiveQueueDrops == 0)
        #expect(alice.counters.receivedByType[.heartbeat] == 38)
    }
}

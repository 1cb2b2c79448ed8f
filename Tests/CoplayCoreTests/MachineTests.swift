import Testing

@testable import CoplayCore

// Each protocol machine on its own: built alone, fed inputs, its outputs asserted — no router,
// no other machine, no socket. The router and the whole are tested by the other suites and the
// simulation.

private let carol = Member(id: carolID, incarnation: Incarnation(300))
private let carolEndpoint = Endpoint(address: 0x7F00_0003, port: 50_003)
private let alice = Member(id: aliceID, incarnation: Incarnation(1))

@Suite struct SessionLifecycleTests {
    @Test func leave_sendsEveryCopyAtItsOffset_thenInvalidates_andExitsWhenAsked() {
        var lifecycle = SessionLifecycle(session: session, id: aliceID, now: at(0))
        #expect(lifecycle.join(now: at(0)) == false, "the first join is not a rejoin")
        #expect(lifecycle.isJoined)
        lifecycle.leave(
            sending: lifecycle.stamp(.leave(.shutdown)), reason: .shutdown, copyOffsets: [.zero, .milliseconds(10)],
            now: at(5).monotonic)
        #expect(lifecycle.state == .invalidated(reason: .shutdown), "leaving is already invalidated")
        #expect(lifecycle.requestExit() == false, "a copy is still due")
        #expect(lifecycle.tick(now: at(5).monotonic).count == 1)
        #expect(lifecycle.nextWake == at(15).monotonic)
        let last = lifecycle.tick(now: at(15).monotonic)
        #expect(last.count == 2 && last.last == .exit, "the last copy, then the exit: \(last)")
        #expect(lifecycle.nextWake == nil)
    }

    @Test func rejoin_isANewIncarnation_withSequenceNumbersFromOne() {
        var lifecycle = SessionLifecycle(session: session, id: aliceID, now: at(0))
        _ = lifecycle.join(now: at(0))
        let first = lifecycle.member
        #expect(lifecycle.stamp(.leave(.left)).sequence == 1)
        #expect(lifecycle.stamp(.leave(.left)).sequence == 2)
        lifecycle.leave(
            sending: lifecycle.stamp(.leave(.left)), reason: .left, copyOffsets: [.zero], now: at(1).monotonic)
        #expect(lifecycle.join(now: at(2)) == true)
        #expect(lifecycle.member.id == first.id && lifecycle.member.incarnation > first.incarnation)
        #expect(lifecycle.stamp(.leave(.left)).sequence == 1)
    }
}

@Suite struct MembershipMachineTests {
    private func announcement(_ name: String) -> Announcement {
        Announcement(unicastPort: carolEndpoint.port, name: name)
    }

    @Test func hello_fromStranger_admitsAndAnswers_silenceSuspectsThenRemoves() {
        var membership = Membership(settings: Settings())
        var random = SplitMix64(seed: 1)
        membership.start(now: at(0).monotonic, random: &random)
        let out = membership.onAnnouncement(
            announcement("carol"), isHello: true, from: carol, source: carolEndpoint, heardAt: at(1).monotonic)
        #expect(out.contains { if case .joined(let record) = $0 { record.member == carol } else { false } })
        #expect(out.contains(.replyHello(to: carolEndpoint)))
        let settings = Settings()
        let quiet = membership.tick(now: at(1).monotonic + settings.suspectAfter, random: &random)
        #expect(quiet.contains { if case .unresponsive = $0 { true } else { false } })
        let gone = membership.tick(now: at(1).monotonic + settings.deadAfter, random: &random)
        #expect(gone.contains { if case .left(_, .timeout) = $0 { true } else { false } })
        #expect(membership.peers.isEmpty)
        #expect(!membership.hasDeparted(carol), "a silent peer may come back (a healed partition)")
    }

    /// Lifeguard: an agent stalled for 10 s (SIGSTOP) does not declare its peers dead on waking;
    /// the datagrams queued meanwhile are read first, and one that is really gone is found
    /// within `deadAfter` of waking, as if the stall had not happened.
    @Test func aStalledAgent_forgivesItsPeersSilence_butStillFindsTheOnesReallyGone() {
        let settings = Settings()
        var membership = Membership(settings: settings)
        var random = SplitMix64(seed: 1)
        membership.start(now: at(0).monotonic, random: &random)
        let dave = Member(id: PeerID(0xDA7E), incarnation: Incarnation(3))
        for (member, endpoint) in [(carol, carolEndpoint), (dave, Endpoint(address: 0x7F00_0001, port: 50_009))] {
            _ = membership.onAnnouncement(
                announcement("x"), isHello: false, from: member, source: endpoint, heardAt: at(100).monotonic)
        }
        _ = membership.tick(now: at(400).monotonic, random: &random)
        // Stopped from 400 ms to 10.4 s. On waking, the tick comes first.
        let woken = membership.tick(now: at(10_400).monotonic, random: &random)
        #expect(!woken.contains { if case .left = $0 { true } else { false } }, "nobody is blamed for our stall")
        #expect(membership.peers.count == 2)
        // Carol's datagram sent during the stall is read now; dave sent nothing and is gone.
        _ = membership.heard(carol, at: at(10_401).monotonic)
        var later: [Membership.Output] = []
        for millis in stride(from: 10_900.0, through: 11_400, by: 500) {
            later += membership.tick(now: at(millis).monotonic, random: &random)
        }
        #expect(later.contains { if case .left(let record, .timeout) = $0 { record.member == dave } else { false } })
        #expect(membership.peers.keys.sorted() == [carol.id], "carol stays")
    }

    @Test func leave_removesAndRemembers_soReorderedDatagramsCannotBringItBack() {
        var membership = Membership(settings: Settings())
        _ = membership.onAnnouncement(
            announcement("carol"), isHello: false, from: carol, source: carolEndpoint, heardAt: at(1).monotonic)
        let out = membership.onLeave(.left, from: carol, at: at(2).monotonic)
        #expect(out.contains { if case .left(_, .left) = $0 { true } else { false } })
        #expect(membership.hasDeparted(carol))
    }

    @Test func fullTable_dropsNewcomers() {
        var settings = Settings()
        settings.peersMax = 1
        var membership = Membership(settings: settings)
        _ = membership.onAnnouncement(
            announcement("carol"), isHello: false, from: carol, source: carolEndpoint, heardAt: at(1).monotonic)
        let out = membership.onAnnouncement(
            announcement("bob"), isHello: false, from: bob, source: bobEndpoint, heardAt: at(1).monotonic)
        #expect(out.contains { if case .drop(.peerTableFull, _) = $0 { true } else { false } })
        #expect(membership.peers.count == 1)
    }
}

@Suite struct ClockSyncMachineTests {
    /// Answers a probe as a peer whose wall clock is `offsetMillis` ahead, 100 µs each way.
    private func reply(to probe: ClockProbe, offsetMillis: Int64) -> ClockProbeReply {
        let peerWall = WallInstant(unixNanos: probe.originWall.unixNanos + 100_000 + offsetMillis * 1_000_000)
        return ClockProbeReply(
            token: probe.token, originWall: probe.originWall, receiveWall: peerWall, transmitWall: peerWall)
    }

    @Test func newPeer_isProbedAtOnce_andSyncsAfterEnoughReplies() throws {
        let settings = Settings()
        var clocks = ClockSync(settings: settings)
        var random = SplitMix64(seed: 2)
        var now = 0.0
        var probes = clocks.onPeerJoined(carol, now: at(now), random: &random)
        var synced = false
        for _ in 0..<settings.offsetSamplesForSync {
            guard case .probe(let peer, let probe)? = probes.first else {
                Issue.record("expected a probe, got \(probes)")
                return
            }
            #expect(peer == carolID)
            let out = clocks.onProbeReply(
                reply(to: probe, offsetMillis: 250), from: carol, receivedAt: at(now + 0.2).monotonic,
                now: at(now + 0.2), random: &random)
            #expect(out.contains(.sampled(carolID)))
            synced = synced || out.contains(.synced(carolID))
            now += 10
            probes = clocks.tick(now: at(now), random: &random)
        }
        #expect(synced)
        let estimate = try #require(clocks.estimate(of: carolID, at: at(now).monotonic))
        #expect(abs(estimate.offsetNanos - 250_000_000) < 10_000)
    }

    /// The tick rations routine probes (4 a tick), not a new peer's burst: 32 peers joined at
    /// once get bursts of 4, then 8 more take the group past 32, where a burst is one probe; the
    /// first 32 bursts' second probes still go out together. The probes that make good a burst
    /// that got no reply are routine: they come due together 500 ms later, and are spread.
    @Test func theTickRationsProbesAfterTheBurst_notTheBurstPlannedBeforeTheGroupGrew() {
        var clocks = ClockSync(settings: Settings())
        var random = SplitMix64(seed: 5)
        func peer(_ index: Int) -> Member { Member(id: PeerID(0x5000 + UInt64(index)), incarnation: Incarnation(1)) }
        for index in 0..<32 { _ = clocks.onPeerJoined(peer(index), now: at(0), random: &random) }
        for index in 32..<40 { _ = clocks.onPeerJoined(peer(index), now: at(1), random: &random) }
        func probes(at millis: Double) -> Int {
            clocks.tick(now: at(millis), random: &random).filter { if case .probe = $0 { true } else { false } }.count
        }
        #expect(probes(at: 5) == 32, "the bursts' second probes, planned among at most 32")
        for millis in stride(from: 6.0, through: 20, by: 1) { _ = probes(at: millis) }
        #expect(probes(at: 700) == Settings().routineProbesPerTickMax, "40 unanswered peers' next probes, spread")
    }

    @Test func replyToNoProbe_isDropped_andARetiredClockComesBack() {
        var clocks = ClockSync(settings: Settings())
        var random = SplitMix64(seed: 3)
        let first = clocks.onPeerJoined(carol, now: at(0), random: &random)
        let forged = ClockProbeReply(
            token: 999, originWall: at(0).wall, receiveWall: at(0).wall, transmitWall: at(0).wall)
        let dropped = clocks.onProbeReply(
            forged, from: carol, receivedAt: at(1).monotonic, now: at(1), random: &random)
        #expect(dropped.contains { if case .drop(.unexpectedProbeReply, _) = $0 { true } else { false } })
        guard case .probe(_, let probe)? = first.first else {
            Issue.record("no probe")
            return
        }
        _ = clocks.onProbeReply(
            reply(to: probe, offsetMillis: 40), from: carol, receivedAt: at(0.2).monotonic, now: at(0.2),
            random: &random)
        clocks.onPeerLeft(carolID)
        #expect(clocks.peers[carolID] == nil)
        #expect(
            clocks.estimate(of: carolID, at: at(1).monotonic) != nil, "a departed peer's clock is retired, not lost")
        _ = clocks.onPeerJoined(carol, now: at(2), random: &random)
        #expect(clocks.peers[carolID]?.estimator.sampleCount == 1, "restored on return")
    }

    @Test func suspectedPeer_isProbedEverySuspectInterval() {
        let settings = Settings()
        var clocks = ClockSync(settings: settings)
        var random = SplitMix64(seed: 4)
        _ = clocks.onPeerJoined(carol, now: at(0), random: &random)
        clocks.onSuspected(carolID, now: at(5000).monotonic)
        #expect(clocks.tick(now: at(5000), random: &random).count == 1)
        #expect(clocks.nextWake == at(5000).monotonic + settings.suspectProbeInterval)
    }
}

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

@Suite struct SuspensionsMachineTests {
    @Test func idsAreUnique_fullAtTheLimit_andEndByReasonTakesTheOldest() {
        var suspensions = Suspensions()
        let first = suspensions.begin("audioSessionInterrupted", now: at(0).monotonic)
        let second = suspensions.begin("audioSessionInterrupted", now: at(1).monotonic)
        #expect(first.id != second.id)
        #expect(suspensions.end(reason: "audioSessionInterrupted") == first)
        #expect(suspensions.reasons == ["audioSessionInterrupted"])
        for index in 1..<Announcement.suspensionsMax { _ = suspensions.begin("r\(index)", now: at(2).monotonic) }
        #expect(suspensions.isFull && suspensions.active.count == Announcement.suspensionsMax)
        _ = suspensions.begin(Suspension.stallRecovery, now: at(3).monotonic)
        #expect(suspensions.active.count == Announcement.suspensionsMax + 1, "a stall still begins; none is dropped")
        #expect(suspensions.announced.count == Announcement.suspensionsMax, "announcements carry the first 8")
        #expect(suspensions.end(second) == second)
    }
}

@Suite struct MessagingMachineTests {
    @Test func longMessage_isSplit_reassembledOnce_andUnreliableDuplicatesAreSuppressed() throws {
        let settings = Settings()
        var sender = Messaging(settings: settings)
        var counters = Counters()
        let peer = PeerRecord(member: carol, name: "carol", endpoint: carolEndpoint, now: at(0).monotonic)
        let text = String(repeating: "x", count: 3000)
        let result = sender.send(
            to: nil, unreliable: true, text: text, peers: [peer], overheadBytes: { _ in 200 }, counters: &counters)
        let outputs = try result.get()
        let parts = outputs.compactMap { if case .multicast(let part) = $0 { part } else { nil } }
        #expect(parts.count == 3, "3000 bytes in parts of at most 1000")
        var receiver = Messaging(settings: settings)
        var delivered: [MessageReport] = []
        let originator = Originator(member: alice, name: "alice", isLocal: false)
        for part in parts.reversed() + parts {
            if let report = receiver.receive(
                part, from: alice, isReliable: false, local: carol, originator: originator, now: at(1).monotonic,
                counters: &counters)
            {
                delivered.append(report)
            }
        }
        #expect(delivered.count == 1 && delivered.first?.text == text)
    }

    @Test func reassembly_isBounded_givingUpTheOldest() {
        var settings = Settings()
        settings.partialMessagesMax = 4
        var messaging = Messaging(settings: settings)
        var counters = Counters()
        let originator = Originator(member: alice, name: "alice", isLocal: false)
        for id in UInt32(1)...20 {
            let part = MessagePart(messageID: id, index: 1, count: 2, recipients: [], bytes: [1])
            _ = messaging.receive(
                part, from: alice, isReliable: false, local: carol, originator: originator,
                now: at(Double(id)).monotonic, counters: &counters)
        }
        #expect(counters.messagesIncomplete == 16)
    }
}

@Suite struct PlaybackMachineTests {
    private func context(_ now: Timestamp) -> PlaybackContext {
        PlaybackContext(
            now: now, member: alice, name: "alice", state: .joined(since: at(0).monotonic),
            membership: Membership(settings: Settings()),
            clocks: ClockSync(settings: Settings()))
    }

    private func delivered(_ operation: Operation, counter: UInt32) -> Ordering.Delivered {
        Ordering.Delivered(
            envelope: CommandEnvelope(
                dot: Dot(origin: alice, counter: counter), lamport: UInt64(counter), dependencies: VectorClock(),
                command: Command(item: "A", operation: operation)), clockSource: nil)
    }

    @Test func aCoordinatedStart_goesThroughThePlayerBoundary() {
        var playback = Playback(settings: Settings())
        var counters = Counters()
        let load = playback.onCommand(.load(LoadedItem(url: "A")), context(at(0)), counters: &counters)
        #expect(load.contains(.player(.load(LoadedItem(url: "A"), position: 0))))
        #expect(!playback.player.isReady, "not ready until the player says so")
        _ = playback.onPlayerReport(.ready(position: 0), context(at(1)), counters: &counters)
        let play = playback.apply(
            [delivered(.play(rate: 1, position: 0, requestedAt: at(2).wall), counter: 1)], isHistory: false,
            context(at(2)), counters: &counters)
        #expect(play.contains(.player(.prepare(position: 0))))
        #expect(playback.coordination.isWaiting)
        #expect(playback.decideStartIfDue(context(at(3))).isEmpty, "this agent is not ready yet")
        let ready = playback.onPlayerReport(.ready(position: 0), context(at(4)), counters: &counters)
        #expect(ready.contains { if case .ready = $0 { true } else { false } })
        let start = playback.decideStartIfDue(context(at(5)))
        #expect(
            start.contains { if case .issue(let command) = $0 { command.operation.name == "start" } else { false } })
    }

    @Test func aStallReported_becomesStallRecovery_andEndsWhenCaughtUp() {
        var playback = Playback(settings: Settings())
        var counters = Counters()
        _ = playback.onCommand(.load(LoadedItem(url: "A")), context(at(0)), counters: &counters)
        _ = playback.onPlayerReport(.ready(position: 0), context(at(1)), counters: &counters)
        _ = playback.onPlayerReport(.stalled(position: 0), context(at(2)), counters: &counters)
        #expect(playback.catchingUp)
        _ = playback.onPlayerReport(.stallEnded(position: 0), context(at(3)), counters: &counters)
        #expect(!playback.catchingUp, "no group timeline is playing: the stall simply ends")
    }
}

@Suite struct PlaybackEventTests {
    private func context(_ now: Timestamp) -> PlaybackContext {
        PlaybackContext(
            now: now, member: alice, name: "alice", state: .joined(since: at(0).monotonic),
            membership: Membership(settings: Settings()), clocks: ClockSync(settings: Settings()))
    }

    @Test func settlingAgainOnTheSameState_saysNothingMore() {
        var playback = Playback(settings: Settings())
        var counters = Counters()
        _ = playback.onCommand(.load(LoadedItem(url: "A")), context(at(0)), counters: &counters)
        _ = playback.onPlayerReport(.ready(position: 0), context(at(1)), counters: &counters)
        let start = Ordering.Delivered(
            envelope: CommandEnvelope(
                dot: Dot(origin: alice, counter: 1), lamport: 1, dependencies: VectorClock(),
                command: Command(item: "A", operation: .playNow(rate: 1, position: 0, at: at(2).wall))),
            clockSource: nil)
        let first = playback.apply([start], isHistory: false, context(at(2)), counters: &counters)
        #expect(first.filter { if case .emit(.playing) = $0 { true } else { false } }.count == 1)
        // More history arrives (for another item) and the agent settles on the final state again,
        // as a late joiner does once repair completes: the player already follows it.
        let other = Ordering.Delivered(
            envelope: CommandEnvelope(
                dot: Dot(origin: alice, counter: 2), lamport: 2, dependencies: VectorClock(),
                command: Command(item: "B", operation: .pause(position: 3, at: at(3).wall))),
            clockSource: nil)
        _ = playback.apply([other], isHistory: true, context(at(3)), counters: &counters)
        let again = playback.followAfterHistory(isBehind: false, context(at(4)), counters: &counters)
        #expect(!again.contains { if case .emit(.playing) = $0 { true } else { false } }, "\(again)")
        #expect(!again.contains { if case .emit(.rateChanged) = $0 { true } else { false } })
        #expect(playback.player.rate == 1)
    }
}

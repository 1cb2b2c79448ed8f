import Testing

@testable import CoplayCore

// The membership machine on its own: admission, liveness, departures. Built alone, fed inputs, its
// outputs asserted: no router, no other machine, no socket.

private let carol = Member(id: carolID, incarnation: Incarnation(300))
private let carolEndpoint = Endpoint(address: 0x7F00_0003, port: 50_003)

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

    /// In a group of 32 (twice the full-rate group) the silences double: a peer is suspected
    /// after 1.5 s. On a LAN it is given up 2.5 s after it fell silent (a lost heartbeat among
    /// many must not cost it its place); on a relay's stage (`suspicionGapUnscaled`, where no
    /// heartbeat is lost and a probe settles a suspicion in a round trip) 400 ms after the
    /// suspicion, within the 2 s an audience may wait for its next speaker.
    @Test func inAGroupOf32_aSilentPeerIsGivenUp_atTheScaledSilence_orTheStagesGap() {
        func givenUp(gap: Duration?) -> Double? {
            var settings = Settings()
            settings.suspicionGapUnscaled = gap
            var membership = Membership(settings: settings)
            var random = SplitMix64(seed: 2)
            membership.start(now: at(0).monotonic, random: &random)
            let members = (1...31).map { Member(id: PeerID(UInt64(0x100 + $0)), incarnation: Incarnation(7)) }
            let silent = members[0]
            for millis in stride(from: 100.0, through: 4_000, by: 100) {
                for member in members where member != silent || millis <= 200 {
                    _ = membership.onAnnouncement(
                        announcement("x"), isHello: false, from: member,
                        source: Endpoint(address: 0x7F00_0001, port: UInt16(truncatingIfNeeded: member.id.rawValue)),
                        heardAt: at(millis).monotonic)
                }
                let out = membership.tick(now: at(millis).monotonic, random: &random)
                if out.contains(where: {
                    if case .left(let record, .timeout) = $0 { record.member == silent } else { false }
                }) {
                    return millis - 200
                }
            }
            return nil
        }
        let lan = givenUp(gap: nil)
        let stage = givenUp(gap: .milliseconds(400))
        #expect(lan.map { $0 >= 2_500 && $0 < 2_600 } ?? false, "on a LAN after \(lan ?? -1) ms of silence")
        #expect(stage.map { $0 >= 1_900 && $0 < 2_000 } ?? false, "on a stage after \(stage ?? -1) ms")
        let relay = Settings()
        #expect(
            relay.audience.applied(to: relay, isViewer: false).suspicionGapUnscaled == relay.audience.stageSuspicionGap)
        #expect(
            relay.audience.applied(to: relay, isViewer: true).suspicionGapUnscaled == nil,
            "a viewer's peers are one or two")
    }

    /// A party's end: 90 of a group of 102 leave at once. The 11 who stay heartbeated every
    /// 3.2 s (the group's interval) and keep that until their next heartbeat: they are not
    /// suspected for it, though the group's silences are now the small group's. One of them that
    /// crashed as the others left is still given up, at the silence of the group it was heard in.
    @Test func whenMostOfAGroupLeavesAtOnce_thoseStaying_areJudgedAtTheIntervalTheyKept() {
        let settings = Settings()
        var membership = Membership(settings: settings)
        var random = SplitMix64(seed: 3)
        membership.start(now: at(0).monotonic, random: &random)
        let members = (1...101).map { Member(id: PeerID(UInt64(0x200 + $0)), incarnation: Incarnation(9)) }
        let leaving = Set(members.prefix(90))
        let crashed = members[95]
        let endAt = 10_000.0
        let large = settings.heartbeatInterval.milliseconds * 102 / 16
        // Each heartbeats every `large` ms from its own phase; after the end, those staying keep
        // that until their next heartbeat, and beat at the small group's interval from then on.
        func hear(_ member: Member, _ millis: Double) {
            _ = membership.onAnnouncement(
                announcement("x"), isHello: false, from: member,
                source: Endpoint(address: 0x7F00_0001, port: UInt16(truncatingIfNeeded: member.id.rawValue)),
                heardAt: at(millis).monotonic)
        }
        // All heard twice at first (heard once, a peer is judged as a stranger), then each on
        // its own phase.
        for millis in [0.0, 10] { for member in members { hear(member, millis) } }
        var next = Dictionary(uniqueKeysWithValues: members.enumerated().map { ($1, 20 + Double($0) * large / 101) })
        var blamed: [String] = []
        var crashFoundAt: Double?
        var ownAfterEnd: Double?
        for millis in stride(from: 20.0, through: 18_500, by: 10) {
            if millis == endAt {
                for member in leaving { _ = membership.onLeave(.left, from: member, at: at(millis).monotonic) }
            }
            for member in members where !(leaving.contains(member) && millis >= endAt) {
                guard let due = next[member], due <= millis, !(member == crashed && millis >= endAt) else { continue }
                hear(member, millis)
                next[member] = due + (millis >= endAt ? 500 : large)
            }
            for output in membership.tick(now: at(millis).monotonic, random: &random) {
                switch output {
                case .unresponsive(let record) where record.member != crashed,
                    .left(let record, .timeout) where record.member != crashed:
                    blamed.append("\(record.member.id) at \(millis) ms")
                case .left(let record, .timeout) where record.member == crashed: crashFoundAt = millis
                case .announce(isHello: false) where millis > endAt: ownAfterEnd = ownAfterEnd ?? millis
                default: break
                }
            }
        }
        #expect(blamed.isEmpty, "blamed though heartbeating: \(blamed.prefix(5))")
        #expect(membership.peers.count == 10, "the 10 staying")
        // Its last heartbeat came within `large` before the end; it is given up at most the large
        // group's departure silence after that.
        let limit = endAt + settings.deadAfter.milliseconds * 102 / 16
        #expect(crashFoundAt.map { $0 > endAt && $0 <= limit } ?? false, "found at \(crashFoundAt ?? -1) ms")
        // Its own next heartbeat was due up to 3.5 s later; the wait left shrank with the group
        // (to the small group's interval at most, jittered).
        let smallInterval = settings.heartbeatInterval.milliseconds * (1 + settings.heartbeatJitterFraction)
        #expect(
            ownAfterEnd.map { $0 <= endAt + smallInterval + 10 } ?? false, "own heartbeat at \(ownAfterEnd ?? -1) ms")
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

import Testing

@testable import CoplayCore

/// The stage's table of viewers and who speaks (`Audience`): bounded, expiring, and agreed on.
@Suite struct AudienceMachineTests {
    private func instant(_ milliseconds: Int64) -> MonotonicInstant {
        MonotonicInstant(nanos: milliseconds * 1_000_000)
    }
    private func member(_ id: UInt64, _ incarnation: UInt32 = 1) -> Member {
        Member(id: PeerID(id), incarnation: Incarnation(incarnation))
    }

    /// A flood of invented viewers fills the table to its bound and no further (each one past it
    /// counted); the table forgets the silent after `viewerExpiry`, and a known viewer heard again
    /// stays.
    @Test func aFloodOfViewersFillsTheTableAndNoMore_andTheSilentExpire() {
        var settings = AudienceSettings()
        settings.viewersMax = 100
        var audience = Audience(settings: settings, hasRelay: true)
        for id in 1...10_000 { _ = audience.heard(member(UInt64(id)), digest: VectorClock(), at: instant(0)) }
        #expect(audience.viewers.count == 100)
        #expect(audience.refused == 9_900)
        var digest = VectorClock()
        digest[member(7)] = 3
        let refreshed = audience.heard(member(1), digest: digest, at: instant(5_000))
        let older = audience.heard(member(1, 0), digest: VectorClock(), at: instant(5_000))
        #expect(refreshed, "a known viewer is refreshed")
        #expect(!older, "not by an older incarnation")
        // Its clock probes keep it counted, with the digest it last told.
        let probed = audience.probed(by: member(1), at: instant(15_000))
        #expect(probed)
        audience.tick(now: instant(16_500))
        #expect(audience.viewers.count == 1, "the silent expired, the one probing stayed")
        #expect(audience.isViewer(member(1)) && !audience.isViewer(member(2)))
        #expect(audience.viewer(PeerID(1))?.digest == digest)
        audience.left(member(1))
        #expect(audience.viewers.isEmpty)
    }

    /// How many watch: a stage member counts the stage's fresh summaries (each at most
    /// `viewersMax`; one from a member that left, or past `summaryExpiry`, no more), and its own
    /// table while it speaks. The speaker tells its count at once, then (looked at every
    /// `summaryInterval`) when it changed or `summaryRefresh` after it last told; no other member
    /// tells its own (its table holds only viewers that followed it before, until they expire);
    /// a viewer shows its anchor's total while fresh, at most `viewersMax` per seat.
    @Test func aStageMemberCountsItsTableAndTheStagesSummaries_andAViewerShowsItsAnchors() {
        var named = AudienceSettings()
        named.role = .stage
        named.viewersMax = 1_000
        var speaker = Audience(settings: named, hasRelay: true)
        for id in 100..<130 { _ = speaker.heard(member(UInt64(id)), digest: VectorClock(), at: instant(0)) }
        func told(_ milliseconds: Int64, speaking: Bool = true) -> UInt32? {
            speaker.summaryDue(isSpeaker: speaking, now: instant(milliseconds), isMember: { _ in true })?.viewers
        }
        let (atOnce, soon, unchanged) = (told(0), told(4_999), told(5_000))
        #expect(atOnce == 30 && soon == nil && unchanged == nil, "at once, then only when it changed")
        _ = speaker.heard(member(130), digest: VectorClock(), at: instant(6_000))
        let (changed, same, refreshed) = (told(10_000), told(15_000), told(40_000))
        #expect(changed == 31 && same == nil && refreshed == 31, "when it changed, and 30 s after it last told")
        let (silent, anew) = (told(41_000, speaking: false), told(42_000))
        #expect(silent == nil && anew == 31, "one that stops speaking tells nothing; speaking anew, at once")

        var stage = Audience(settings: named, hasRelay: true)
        let (first, second, gone) = (member(1), member(2), member(3))
        for id in 100..<130 { _ = stage.heard(member(UInt64(id)), digest: VectorClock(), at: instant(0)) }
        stage.heardSummary(AudienceSummary(viewers: 400, audience: 430), from: first, at: instant(1_000))
        stage.heardSummary(AudienceSummary(viewers: .max, audience: .max), from: second, at: instant(1_000))
        stage.heardSummary(AudienceSummary(viewers: 50, audience: 50), from: gone, at: instant(1_000))
        let isMember: (Member) -> Bool = { $0 != gone }
        #expect(stage.watching(now: instant(2_000), speaks: true, isMember: isMember) == 30 + 400 + 1_000)
        #expect(
            stage.summary(now: instant(2_000), isMember: isMember) == AudienceSummary(viewers: 30, audience: 1_430))
        stage.heardSummary(AudienceSummary(viewers: 10, audience: 10), from: first, at: instant(70_000))
        #expect(
            stage.watching(now: instant(76_000), speaks: true, isMember: isMember) == 30 + 10,
            "the second's is 75 s old")
        stage.tick(now: instant(80_000))
        #expect(stage.viewers.isEmpty && stage.summaries.count == 1, "the silent viewers and old summaries forgotten")
        #expect(stage.nextWake != nil, "the last summary is still to expire")

        #expect(
            stage.watching(now: instant(80_000), speaks: false, isMember: isMember) == 10,
            "one that no longer speaks counts the speaker's summary, not the viewers left in its table")
        let otherSends = stage.summaryDue(isSpeaker: false, now: instant(81_000), isMember: isMember)
        #expect(otherSends == nil, "nor does it send its own")

        var viewerSettings = named
        viewerSettings.role = .viewer
        var viewer = Audience(settings: viewerSettings, hasRelay: true)
        let viewerSends = viewer.summaryDue(isSpeaker: true, now: instant(0), isMember: { _ in true })
        #expect(viewerSends == nil && viewer.watching(now: instant(0), speaks: false, isMember: { _ in true }) == nil)
        viewer.heardSummary(AudienceSummary(viewers: 30, audience: 1_430), from: first, at: instant(0))
        #expect(viewer.watching(now: instant(74_999), speaks: false, isMember: { _ in true }) == 1_430)
        #expect(viewer.watching(now: instant(75_000), speaks: false, isMember: { _ in true }) == nil, "stale")
        viewer.heardSummary(AudienceSummary(viewers: 0, audience: .max), from: first, at: instant(76_000))
        #expect(viewer.watching(now: instant(76_000), speaks: false, isMember: { _ in true }) == 1_000 * 32)
    }

    /// A viewer heartbeats only with something to tell its anchor: the first time, a new anchor,
    /// commands delivered since; a viewer that wants a seat asks at 2, 4, 8, 16 s and then every
    /// 32 s, and from 2 s again of a new speaker (asked at once).
    @Test func aViewerHeartbeatsOnlyWithSomethingToTell_andAsksForASeatLessOftenEachTime() {
        var named = AudienceSettings()
        named.role = .viewer
        var viewer = Audience(settings: named, hasRelay: true)
        let (anchor, next) = (member(1), member(2))
        var delivered: Int64 = 0
        let first = viewer.heartbeatDue(to: anchor, delivered: delivered, now: instant(0))
        #expect(first, "the first")
        var idle = 0
        for tick in Int64(1)...20
        where viewer.heartbeatDue(to: anchor, delivered: delivered, now: instant(tick * 2_000)) {
            idle += 1
        }
        #expect(idle == 0, "nothing to tell for 40 s: no heartbeat")
        delivered += 1
        let afterCommand = viewer.heartbeatDue(to: anchor, delivered: delivered, now: instant(42_000))
        #expect(afterCommand, "a command delivered")
        let again = viewer.heartbeatDue(to: anchor, delivered: delivered, now: instant(44_000))
        #expect(!again)
        let newAnchor = viewer.heartbeatDue(to: next, delivered: delivered, now: instant(46_000))
        #expect(newAnchor, "a new anchor")

        var asking = AudienceSettings()
        asking.role = .firstCome
        var waiting = Audience(settings: asking, hasRelay: true)
        var asked: [Int64] = []
        for second in stride(from: Int64(0), through: 120, by: 2)
        where waiting.heartbeatDue(to: anchor, delivered: 0, now: instant(second * 1_000)) {
            asked.append(second)
        }
        #expect(asked == [0, 2, 6, 14, 30, 62, 94], "backed off to every 32 s")
        let asks = waiting.asksForSeat(of: next)
        #expect(asks)
        let atOnce = waiting.heartbeatDue(to: next, delivered: 0, now: instant(121_000))
        #expect(atOnce, "a new speaker, at once")
        let tooSoon = waiting.heartbeatDue(to: next, delivered: 0, now: instant(122_000))
        #expect(!tooSoon)
        let fromTwo = waiting.heartbeatDue(to: next, delivered: 0, now: instant(123_000))
        #expect(fromTwo, "then from 2 s")
    }

    /// Every stage member works out the same speaker from the same peers: one named (or seated by
    /// itself) before one seated by a grant, then the earliest incarnation, then the lowest id. A
    /// viewer's anchor is found the same way among the speakers it hears.
    @Test func theSpeakerIsTheEarliestToJoin_seenAlikeFromEveryMember() {
        func record(_ member: Member, seated: Bool = false) -> PeerRecord {
            var record = PeerRecord(member: member, name: "", endpoint: .relay(member.id), now: instant(0))
            record.seated = seated
            return record
        }
        let stage = [
            record(member(9, 5)), record(member(3, 7)), record(member(4, 5)), record(member(1, 2), seated: true),
        ]
        for own in stage {
            let peers = stage.filter { $0.member != own.member }
            #expect(Audience.speaker(own: own.member, ownSeated: own.seated, peers: peers) == member(4, 5))
        }
        #expect(Audience.anchor(among: stage) == member(4, 5), "not the earlier member seated by a grant")
        #expect(Audience.anchor(among: [PeerRecord]()) == nil)
        let seatedOnly = [record(member(9, 5), seated: true), record(member(3, 7), seated: true)]
        #expect(Audience.anchor(among: seatedOnly) == member(9, 5), "among the seated, the earliest")
    }

    /// Only the speaker beacons, once per `beaconInterval`, and at once when it becomes the speaker.
    @Test func onlyTheSpeakerBeacons_onItsInterval() {
        var audience = Audience(settings: AudienceSettings(), hasRelay: true)
        let notSpeaking = audience.beaconDue(isSpeaker: false, now: instant(0))
        #expect(!notSpeaking)
        let (first, early, next) = (
            audience.beaconDue(isSpeaker: true, now: instant(10)),
            audience.beaconDue(isSpeaker: true, now: instant(500)),
            audience.beaconDue(isSpeaker: true, now: instant(1_010))
        )
        #expect(first && !early && next)
        var viewer = AudienceSettings()
        viewer.role = .viewer
        var listening = Audience(settings: viewer, hasRelay: true)
        let viewerBeacons = listening.beaconDue(isSpeaker: true, now: instant(0))
        #expect(!viewerBeacons, "a viewer never beacons")
        #expect(!Audience(settings: viewer, hasRelay: false).isViewer, "without a relay there is no audience")
    }

    /// The speaker's grants: never past the seats (the stage and the grants not yet taken), the
    /// same viewer granted again (its answer may be lost), a grant not taken in time freed, and a
    /// grant taken when its holder joins the stage. A flood of requests cannot grow the table.
    @Test func seatsAreGrantedUpToTheStagesSize_andAGrantNotTakenIsFreed() {
        var settings = AudienceSettings()
        settings.stageSeats = 4
        var speaker = Audience(settings: settings, hasRelay: true)
        let granted = (10...20).filter { speaker.grantSeat(to: member(UInt64($0)), stageCount: 2, now: instant(0)) }
        #expect(granted == [10, 11], "two seats free beside a stage of two")
        let again = speaker.grantSeat(to: member(10), stageCount: 2, now: instant(100))
        #expect(again, "asked again, granted again")
        speaker.tookSeat(member(10))
        let afterTaken = speaker.grantSeat(to: member(12), stageCount: 3, now: instant(200))
        #expect(!afterTaken, "taken: the stage of three and one grant fill the four seats")
        let afterExpiry = speaker.grantSeat(to: member(13), stageCount: 3, now: instant(3_100))
        #expect(afterExpiry && speaker.grants.count == 1, "11's grant expired, 13 has the seat")

        var waiting = AudienceSettings()
        waiting.role = .firstCome
        var viewer = Audience(settings: waiting, hasRelay: true)
        var random = SplitMix64(seed: 1)
        #expect(viewer.isViewer && viewer.wantsSeat)
        viewer.listenForStage(now: instant(0), random: &random)
        let due = viewer.seatAt ?? instant(0)
        #expect(due >= instant(1_250) && due < instant(2_250), "it seats itself after 1.25 s and its jitter")
        viewer.heardStage()
        #expect(viewer.seatAt == nil, "a stage heard: no seat of its own")
        viewer.seated(byGrant: false, now: instant(2_000))
        #expect(!viewer.isViewer && !viewer.wantsSeat)
        let settling = viewer.grantSeat(to: member(30), stageCount: 1, now: instant(2_400))
        #expect(!settling, "one just seated grants nothing for 500 ms")
        #expect(viewer.settledAsks(now: instant(2_450)).isEmpty, "not yet settled")
        #expect(viewer.settledAsks(now: instant(2_500)) == [member(30)], "then answers who asked meanwhile")
        let settled = viewer.grantSeat(to: member(30), stageCount: 1, now: instant(2_500))
        #expect(settled && viewer.askedWhileSettling.isEmpty)
        var named = AudienceSettings()
        named.role = .viewer
        #expect(!Audience(settings: named, hasRelay: true).wantsSeat, "a named viewer never asks")
    }
}

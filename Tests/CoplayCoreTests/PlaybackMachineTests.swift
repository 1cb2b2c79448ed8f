import Testing

@testable import CoplayCore

// The playback machine on its own: the player boundary, stalls, settling. Built alone, fed inputs, its
// outputs asserted: no router, no other machine, no socket.

private let alice = Member(id: aliceID, incarnation: Incarnation(1))

@Suite struct PlaybackMachineTests {
    private func context(_ now: Timestamp) -> PlaybackContext {
        PlaybackContext(
            now: now, member: alice, name: "alice", state: .joined(since: at(0).monotonic),
            peers: [:], offset: { _ in nil })
    }

    @Test func theStartLead_coversTwiceTheLongestRoundTrip_withinItsBounds() {
        let settings = Settings()
        let playback = Playback(settings: settings)
        let (bob, carol) = (
            Member(id: bobID, incarnation: Incarnation(1)), Member(id: carolID, incarnation: Incarnation(1))
        )
        func lead(delays: [PeerID: Int64]) -> Duration {
            var context = context(at(0))
            context.offset = { peer in
                delays[peer].map {
                    OffsetEstimate(offsetNanos: 0, driftPPM: 0, delayNanos: $0, sampleCount: 8, at: at(0).monotonic)
                }
            }
            return playback.startLead(to: [alice, bob, carol], context)
        }
        // A wire: the floor. Wi-Fi round trips of 7.5 and 12 ms: 2 × 12 + 5. A clock not known
        // yet: the fixed lead. Two sites far apart: the ceiling.
        #expect(lead(delays: [bobID: 100_000, carolID: 150_000]) == settings.startLeadMin)
        #expect(lead(delays: [bobID: 7_500_000, carolID: 12_000_000]) == .milliseconds(29))
        #expect(lead(delays: [bobID: 7_500_000]) == settings.startLead)
        #expect(lead(delays: [bobID: 100_000, carolID: 900_000_000]) == settings.startLeadMax)
    }

    private func delivered(_ operation: Operation, counter: UInt32) -> Ordering.Delivered {
        Ordering.Delivered(
            envelope: CommandEnvelope(
                dot: Dot(origin: alice, counter: counter), lamport: UInt64(counter), dependencies: VectorClock(),
                command: Command(item: "A", operation: operation)), clockSource: nil)
    }

    @Test func aCoordinatedStart_goesThroughThePlayerBoundary() {
        var playback = Playback(settings: Settings())
        let load = playback.onCommand(.load(LoadedItem(url: "A")), context(at(0)))
        #expect(load.contains(.player(.load(LoadedItem(url: "A"), position: 0))))
        #expect(!playback.player.isReady, "not ready until the player says so")
        _ = playback.onPlayerReport(.ready(position: 0), context(at(1)))
        let play = playback.apply(
            [delivered(.play(rate: 1, position: 0, requestedAt: at(2).wall), counter: 1)], isHistory: false,
            context(at(2)))
        #expect(play.contains(.player(.prepare(position: 0))))
        #expect(playback.coordination.isWaiting)
        #expect(playback.decideStartIfDue(context(at(3))).isEmpty, "this agent is not ready yet")
        let ready = playback.onPlayerReport(.ready(position: 0), context(at(4)))
        #expect(ready.contains { if case .ready = $0 { true } else { false } })
        let start = playback.decideStartIfDue(context(at(5)))
        #expect(
            start.contains { if case .issue(let command) = $0 { command.operation.name == "start" } else { false } })
    }

    /// A sample the player took before a pause reached it arrives after the pause (a browser
    /// tab's, crossing the pause on its way to the worker): it is stale, and must not make the
    /// paused player count as moving again, or a seek typed next would resume the group at that
    /// sample's rate (CI's browser check: a seek in the paused tab started everyone playing).
    @Test func aSampleTakenBeforeAPause_doesNotResumeThePlayer_soASeekAfterItStaysPaused() throws {
        var playback = Playback(settings: Settings())
        _ = playback.onCommand(.load(LoadedItem(url: "A")), context(at(0)))
        _ = playback.onPlayerReport(.ready(position: 0), context(at(1)))
        let pause = playback.apply(
            [delivered(.pause(position: 11, at: at(2).wall), counter: 1)], isHistory: false, context(at(2)))
        #expect(pause.contains(.player(.pause(position: 11))))
        _ = playback.onPlayerReport(.sample(position: 11.05, rate: 1.0037, at: at(3).wall), context(at(3)))
        #expect(playback.player.rate == 0, "still paused")
        let seek = playback.onCommand(.seek(seconds: 21), context(at(4)))
        let resumeRate = try #require(
            seek.lazy.compactMap { output -> Double? in
                guard case .issue(let command) = output, case .seek(_, let rate, _) = command.operation else {
                    return nil
                }
                return rate
            }.first)
        #expect(resumeRate == 0, "the seek keeps the group paused")
    }

    @Test func aStallReported_becomesStallRecovery_andEndsWhenCaughtUp() {
        var playback = Playback(settings: Settings())
        _ = playback.onCommand(.load(LoadedItem(url: "A")), context(at(0)))
        _ = playback.onPlayerReport(.ready(position: 0), context(at(1)))
        _ = playback.onPlayerReport(.stalled(position: 0), context(at(2)))
        #expect(playback.catchingUp)
        _ = playback.onPlayerReport(.stallEnded(position: 0), context(at(3)))
        #expect(!playback.catchingUp, "no group timeline is playing: the stall simply ends")
    }
}

@Suite struct PlaybackEventTests {
    private func context(_ now: Timestamp) -> PlaybackContext {
        PlaybackContext(
            now: now, member: alice, name: "alice", state: .joined(since: at(0).monotonic),
            peers: [:], offset: { _ in nil })
    }

    @Test func settlingAgainOnTheSameState_saysNothingMore() {
        var playback = Playback(settings: Settings())
        _ = playback.onCommand(.load(LoadedItem(url: "A")), context(at(0)))
        _ = playback.onPlayerReport(.ready(position: 0), context(at(1)))
        let start = Ordering.Delivered(
            envelope: CommandEnvelope(
                dot: Dot(origin: alice, counter: 1), lamport: 1, dependencies: VectorClock(),
                command: Command(item: "A", operation: .playNow(rate: 1, position: 0, at: at(2).wall))),
            clockSource: nil)
        let first = playback.apply([start], isHistory: false, context(at(2)))
        #expect(first.filter { if case .emit(.playing) = $0 { true } else { false } }.count == 1)
        // More history arrives (for another item) and the agent settles on the final state again,
        // as a late joiner does once repair completes: the player already follows it.
        let other = Ordering.Delivered(
            envelope: CommandEnvelope(
                dot: Dot(origin: alice, counter: 2), lamport: 2, dependencies: VectorClock(),
                command: Command(item: "B", operation: .pause(position: 3, at: at(3).wall))),
            clockSource: nil)
        _ = playback.apply([other], isHistory: true, context(at(3)))
        let again = playback.followAfterHistory(isBehind: false, context(at(4)))
        #expect(!again.contains { if case .emit(.playing) = $0 { true } else { false } }, "\(again)")
        #expect(!again.contains { if case .emit(.rateChanged) = $0 { true } else { false } })
        #expect(playback.player.rate == 1)
    }
}

/// A load the player could not do ends in a clear state: the item is left, and a `play` after
/// it leaves nobody suspended (it left the agent in a stallRecovery suspension until another
/// item was shared).
@Suite struct LoadFailureTests {
    /// An agent that has started and shared `url` as item "a".
    func sharing(_ url: String, duration: Double) -> Instance {
        var alice = makeInstance()
        _ = alice.start(now: at(0))
        _ = alice.onCommand(
            .share(Activity(url: url, itemID: "a"), durationSeconds: duration, bufferSeconds: 0), now: at(1))
        return alice
    }

    @Test func aFailedLoad_leavesTheItem_andAPlayAfterItSuspendsNobody() {
        var alice = makeInstance()
        _ = alice.start(now: at(0))
        _ = alice.onCommand(
            .share(
                Activity(url: "https://example.com/missing.mkv", itemID: "a"), durationSeconds: 100, bufferSeconds: 0),
            now: at(1))
        #expect(alice.player.item?.id == "a")
        let failed = alice.onPlayerReport(.loadFailed("mpv could not play it: loading failed"), now: at(2))
        #expect(failed.events.contains(.itemUnloaded(item: "a", reason: "the player could not load it")))
        #expect(failed.events.contains(.playerError("mpv could not play it: loading failed")))
        #expect(alice.player.item == nil)
        _ = alice.onCommand(.play(rate: 1), now: at(3))
        var millis = 3.0
        while millis < 8_000 {
            millis += 50
            _ = alice.onTick(now: at(millis))
        }
        #expect(!alice.isSuspended, "\(alice.suspensions)")
        #expect(alice.statusReport(now: at(millis)).suspensions == ["cannotPlay:other"], "no stallRecovery, only why")
    }

    /// The group is told why: the kind of failure is announced beside the suspensions, so every
    /// peer's list says why this participant is not watching. It is not a suspension (its
    /// commands still drive the group), and another item clears it.
    @Test func aFailedLoadsKind_isAnnouncedToTheGroup_untilAnotherItemIsLoaded() {
        var alice = sharing("https://example.com/film.mkv", duration: 100)
        let failed = alice.onPlayerReport(
            .loadFailed("this browser cannot play film.mkv", problem: .format), now: at(2))
        #expect(failed.events.contains(.playerError("this browser cannot play film.mkv")))
        #expect(alice.statusReport(now: at(2)).suspensions == ["cannotPlay:format"])
        #expect(alice.announcement(isReply: false).suspensions == ["cannotPlay:format"])
        #expect(!alice.isSuspended, "its commands still drive the group")
        // A full list of suspensions keeps the last place for the problem.
        for index in 0..<Announcement.suspensionsMax { _ = alice.onCommand(.suspend(reason: "r\(index)"), now: at(3)) }
        let announced = alice.announcement(isReply: false).suspensions
        #expect(announced.count == Announcement.suspensionsMax && announced.last == "cannotPlay:format")
        _ = alice.onCommand(
            .share(Activity(url: "https://example.com/film.webm", itemID: "b"), durationSeconds: 100, bufferSeconds: 0),
            now: at(4))
        #expect(!alice.statusReport(now: at(4)).suspensions.contains("cannotPlay:format"))
    }

    /// A participant with no copy of a film known by its content stands aside; once its person
    /// picks a copy (a page's file input) the player says so, and the item is loaded again where
    /// the group is: nothing is lost, `cannotPlay` is cleared for everyone. A report of it at any
    /// other moment (the player has an item, or never failed) reloads nothing.
    @Test func aCopyFoundAfterNoCopy_loadsTheGroupsItemAgain_whereTheGroupIs() {
        var alice = sharing("/home/ann/Films/film.webm", duration: 600)
        func playerCommands(_ directives: [Directive]) -> [PlayerCommand] {
            directives.compactMap { if case .player(let command) = $0 { command } else { nil } }
        }
        #expect(playerCommands(alice.onPlayerReport(.copyFound, now: at(1.5))).isEmpty, "it has the item")
        _ = alice.onPlayerReport(.ready(position: 0), now: at(2))
        _ = alice.onCommand(.play(rate: 1), now: at(3))
        var millis = 3.0
        while millis < 10_000 {
            millis += 50
            _ = alice.onTick(now: at(millis))
            if millis == 2_003 {
                _ = alice.onPlayerReport(.loadFailed("no copy of film.webm", problem: .noCopy), now: at(millis))
                #expect(alice.player.item == nil)
                #expect(alice.announcement(isReply: false).suspensions == ["cannotPlay:noCopy"])
            }
        }
        let found = alice.onPlayerReport(.copyFound, now: at(10_000))
        let loads = found.compactMap { directive -> Double? in
            if case .player(.load(let item, let position)) = directive, item.id == "a" { position } else { nil }
        }
        #expect(loads.count == 1, "\(found)")
        // The group has played since its start lead after the play at 3 ms: about 10 s in.
        #expect(loads.first.map { (9.5...10.0).contains($0) } == true, "\(loads)")
        #expect(alice.player.item?.id == "a")
        #expect(!alice.announcement(isReply: false).suspensions.contains("cannotPlay:noCopy"))
        #expect(playerCommands(alice.onPlayerReport(.copyFound, now: at(10_050))).isEmpty, "loaded once")
    }

    /// Another encode played: announced after the suspensions until another item is loaded; not
    /// a suspension (this participant is followed and waited for as anyone), and only with an item.
    @Test func anotherEncode_isAnnounced_untilAnotherItem() {
        var alice = sharing("/home/ann/Films/film.webm", duration: 600)
        _ = alice.onPlayerReport(.anotherEncode, now: at(2))
        #expect(alice.announcement(isReply: false).suspensions == [Suspensions.anotherEncode])
        #expect(!alice.isSuspended)
        _ = alice.onCommand(
            .share(Activity(url: "https://example.com/b.webm", itemID: "b"), durationSeconds: 100, bufferSeconds: 0),
            now: at(3))
        #expect(alice.announcement(isReply: false).suspensions.isEmpty)
        _ = alice.onCommand(.quit, now: at(4))
        var idle = makeInstance()
        _ = idle.start(now: at(0))
        _ = idle.onPlayerReport(.anotherEncode, now: at(1))
        #expect(idle.announcement(isReply: false).suspensions.isEmpty, "no item: nothing to say")
    }

    /// A stall its player never ends (an mpv that cannot seek where the group is) ends after
    /// `stallRecoveryMax` with the reason: not suspended any more (its commands drive the group
    /// again), standing aside from the item, and no suspension carried into the next item.
    @Test func aStallThePlayerNeverEnds_endsWithItsReason_withinItsBound() {
        var alice = sharing("http://example.com/film.mp4", duration: 600)
        _ = alice.onPlayerReport(.stalled(position: 0), now: at(2))
        #expect(alice.isSuspended)
        var millis = 2.0
        var events: [Event] = []
        while millis < 29_000 {
            millis += 250
            events += alice.onTick(now: at(millis)).events
        }
        #expect(alice.isSuspended, "not before its bound: a real network stall may take a while")
        while millis < 33_000 {
            millis += 250
            events += alice.onTick(now: at(millis)).events
        }
        #expect(!alice.isSuspended, "\(alice.suspensions)")
        #expect(
            events.contains { if case .playerError(let text) = $0 { text.contains("did not catch up") } else { false } }
        )
        #expect(alice.statusReport(now: at(millis)).suspensions == ["cannotPlay:other"])
        _ = alice.onCommand(
            .share(Activity(url: "http://example.com/next.mp4", itemID: "b"), durationSeconds: 600, bufferSeconds: 0),
            now: at(millis + 1))
        #expect(alice.statusReport(now: at(millis + 1)).suspensions.isEmpty, "the next item starts clean")
    }
}

/// One group, one story: a group interstitial that carol scheduled is credited to carol by
/// every agent, also by one whose hold came from alice (who reached the time first) before it
/// reached the time itself (that agent said alice; the others said carol).
@Suite struct InterstitialAttributionTests {
    @Test func aHoldFromAnotherAgent_isCreditedToTheScheduler() throws {
        let bob = Member(id: bobID, incarnation: Incarnation(1))
        let carol = Member(id: carolID, incarnation: Incarnation(1))
        func context(_ millis: Double) -> PlaybackContext {
            PlaybackContext(
                now: at(millis), member: bob, name: "bob", state: .joined(since: at(0).monotonic), peers: [:],
                offset: { _ in nil })
        }
        func delivered(_ operation: Operation, by origin: Member, counter: UInt32) -> Ordering.Delivered {
            Ordering.Delivered(
                envelope: CommandEnvelope(
                    dot: Dot(origin: origin, counter: counter), lamport: UInt64(counter), dependencies: VectorClock(),
                    command: Command(item: "A", operation: operation)), clockSource: nil)
        }
        var playback = Playback(settings: Settings())
        _ = playback.onCommand(.load(LoadedItem(url: "A")), context(0))
        _ = playback.onPlayerReport(.ready(position: 0), context(1))
        let ad = Interstitial(id: "ad", url: "https://example.com/ad.mp4", durationSeconds: 2)
        _ = playback.apply(
            [delivered(.scheduleInterstitial(ad, at: 5), by: carol, counter: 1)], isHistory: false, context(2))
        let hold = playback.apply(
            [delivered(.interstitial(ad, position: 5, rate: 0, requestedAt: at(3).wall), by: alice, counter: 2)],
            isHistory: false, context(3))
        let began = try #require(
            hold.compactMap { output -> InterstitialReport? in
                guard case .emit(.interstitial(let report)) = output, report.phase == .began else { return nil }
                return report
            }.first)
        #expect(began.originator.member == carol, "credited to \(began.originator.name)")
    }
}

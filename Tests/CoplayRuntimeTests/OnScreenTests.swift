import Testing

@testable import CoplayCore
@testable import CoplayRuntime

/// Who did what, on the player's own screen: another participant's pause, seek, play, speed,
/// share, arrival, departure and message; never this agent's own action or the follower's
/// correction; as text; and no faster than a person reads.
@Suite struct OnScreenTests {
    let ann = Originator(member: Member(id: PeerID(7), incarnation: Incarnation(1)), name: "Ann", isLocal: false)
    let here = Originator(member: Member(id: PeerID(8), incarnation: Incarnation(1)), name: "me", isLocal: true)

    func playback(_ reason: String, by originator: Originator, at position: Double = 754, rate: Double = 1)
        -> PlaybackReport
    {
        PlaybackReport(
            item: "film", rate: rate, position: position, originator: originator, reason: reason,
            dot: Dot(origin: originator.member, counter: 1))
    }

    @Test func anotherParticipantsAction_isSaid_andOnesOwnOrTheFollowersIsNot() {
        #expect(OnScreen.text(for: .paused(playback("pause", by: ann))) == "paused by Ann at 12:34")
        #expect(OnScreen.text(for: .timeJumped(playback("seek", by: ann, at: 3725))) == "Ann jumped to 1:02:05")
        #expect(OnScreen.text(for: .playing(playback("start", by: ann))) == "played by Ann")
        #expect(OnScreen.text(for: .rateChanged(playback("rate", by: ann, rate: 1.5))) == "speed 1.5× by Ann")
        #expect(OnScreen.text(for: .paused(playback("pause", by: here))) == nil, "one's own pause")
        #expect(OnScreen.text(for: .paused(playback("seek", by: ann))) == nil, "a seek's pause: said once, as the jump")
        #expect(OnScreen.text(for: .playing(playback("catch-up", by: ann))) == nil, "the follower's own correction")
        #expect(OnScreen.text(for: .paused(playback("pause", by: ann, at: .nan))) == "paused by Ann at ?")
        let message = MessageReport(from: ann, messageID: 1, text: "popcorn?", isReliable: true, recipientCount: 2)
        #expect(OnScreen.text(for: .message(message)) == "Ann: popcorn?")
        let ended = SessionReport(
            state: .invalidated(reason: .ended(by: "tv", reason: "the party is over")), member: here.member)
        #expect(OnScreen.text(for: .session(ended)) == "tv ended the session: the party is over")
    }

    @Test func textFromTheNetwork_isShownAsText_withinItsBound() {
        #expect(OnScreen.shown("Ann\u{1B}[2J\r\nBen\u{7F}") == "Ann [2J  Ben ")
        let long = OnScreen.shown(String(repeating: "é", count: 200))
        #expect(long.utf8.count <= Settings.OnScreen.textBytesMax && long.hasSuffix("…"), "\(long.utf8.count)")
    }

    @Test func noMoreLinesThanAPersonReads_theRestCounted() {
        var screen = OnScreen()
        let start = MonotonicInstant(nanos: 1_000_000_000)
        let shown = (0..<10).filter { _ in screen.admit(now: start) }.count
        #expect(shown == Settings.OnScreen.perWindowMax && screen.dropped == 10 - shown)
        let later = screen.admit(now: start + Settings.OnScreen.window)
        #expect(later, "a new second, a new allowance")
    }
}

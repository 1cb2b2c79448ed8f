import Testing

@testable import CoplayCore

/// An item shared without `duration=` (the newcomer's `share film.mp4`) learns its length from
/// its player: a seek past the end then stops at the end, in the command itself (so every
/// participant lands there) and in `status`; a live item ignores a length.
@Suite struct PlayerDurationTests {
    private func at(_ millis: Int64) -> Timestamp {
        Timestamp(
            monotonic: MonotonicInstant(nanos: 1_000_000_000 + millis * 1_000_000),
            wall: WallInstant(unixNanos: 1_800_000_000_000_000_000 + millis * 1_000_000))
    }

    /// The seek commands an instance issued, by their positions, from its time-jumped events.
    private func jumps(_ directives: [Directive]) -> [Double] {
        directives.compactMap { if case .emit(.timeJumped(let report)) = $0 { report.position } else { nil } }
    }

    @Test func aSeekPastTheEndTheMediaHas_stopsAtTheEnd() {
        var instance = Instance(
            identity: LocalIdentity(id: PeerID(1), name: "a", sessionName: "s", unicastPort: 40000), seed: 1,
            now: at(0))
        _ = instance.start(now: at(0))
        for step in 1...40 { _ = instance.onTick(now: at(Int64(step) * 25)) }
        _ = instance.onConsoleLine("share https://example.com/film.mp4 id=film", now: at(1100))
        _ = instance.onPlayerReport(.ready(position: 0), now: at(1150))
        // Unknown length: the seek is taken as typed (the player would stop at its end).
        #expect(jumps(instance.onConsoleLine("seek 500", now: at(1200))) == [500])
        // The player found the length: from now on a seek past it stops at it.
        _ = instance.onPlayerReport(.duration(120), now: at(1300))
        #expect(instance.player.item?.durationSeconds == 120)
        #expect(jumps(instance.onConsoleLine("seek 400", now: at(1400))) == [120])
        #expect(instance.statusReport(now: at(1500)).positionSeconds == 120)
        // A share's own duration is not overridden by the player's.
        _ = instance.onConsoleLine("share https://example.com/b.mp4 id=b duration=60", now: at(1600))
        _ = instance.onPlayerReport(.duration(90), now: at(1700))
        #expect(instance.player.item?.durationSeconds == 60)
        // Out of range: refused by the one check.
        #expect(PlayerReport.duration(.nan).refusal() != nil && PlayerReport.duration(0).refusal() != nil)
    }

    @Test func aLiveItem_ignoresALength() {
        var model = PlayerModel()
        model.apply(.load(LoadedItem(id: "tv", url: "https://example.com/live.m3u8"), position: 0))
        model.apply(.duration(30))
        #expect(model.item?.durationSeconds == 30)
        model.apply(.liveWindow(LiveWindow(dates: 1.8e9...1.8e9 + 60, targetDuration: 6)))
        #expect(model.item?.durationSeconds == nil, "dropped once the item is found live")
        #expect(model.clamp(1.8e9 + 30) == 1.8e9 + 30)
        model.apply(.duration(45))
        #expect(model.item?.durationSeconds == nil, "a live item takes no length")
    }
}

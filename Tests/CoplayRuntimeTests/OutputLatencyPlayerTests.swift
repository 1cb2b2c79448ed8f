import CoplayCore
import Testing

@testable import CoplayRuntime

/// `--audio-latency`: the player is aimed early by its sound's delay, and its reports come back
/// on the group's timeline.
@Suite struct OutputLatencyPlayerTests {
    let now = Timestamp(monotonic: MonotonicInstant(nanos: 1_000_000_000), wall: WallInstant(unixNanos: 5_000_000_000))

    /// A player that keeps the commands it is given and says what it is told to say.
    struct Recording: PlayerDriver {
        var kind: String { "recording" }
        var commands: [PlayerCommand] = []
        var says: [PlayerReport] = []
        mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
            commands.append(command)
            return says
        }
        func nextEvent(now: Timestamp) -> MonotonicInstant? { nil }
        func advance(now: Timestamp) -> [PlayerReport] { says }
        func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] { says }
        func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) { (says, false) }
        func close() {}
    }

    @Test func commandsGoAheadByTheLatency_andReportsComeBackOnTheGroupsTimeline() {
        var player = OutputLatencyPlayer(Recording(), latency: 0.2)
        let item = LoadedItem(id: "film", url: "/films/film.mkv")
        _ = player.perform(.load(item, position: 0), now: now)
        _ = player.perform(.prepare(position: 10), now: now)
        _ = player.perform(.pause(position: 12), now: now)
        _ = player.perform(.adjustRate(1.004, at: now.wall), now: now)
        _ = player.perform(.unload, now: now)
        #expect(
            player.inner.commands == [
                .load(item, position: 0.2), .prepare(position: 10.2), .pause(position: 12.2),
                .adjustRate(1.004, at: now.wall), .unload,
            ])
        // At twice the speed the sound's 200 ms late are 400 ms of media.
        _ = player.perform(.play(rate: 2, position: 30, at: now.wall), now: now)
        #expect(player.inner.commands.last == .play(rate: 2, position: 30.4, at: now.wall))
        player.inner.says = [
            .ready(position: 30.4), .sample(position: 31.4, rate: 2, at: now.wall), .stalled(position: 32.4),
            .userAction(.seek(position: 40.4)), .userAction(.pause), .ended(position: 0.1),
        ]
        #expect(
            player.receive(line: [], at: now) == [
                .ready(position: 30), .sample(position: 31, rate: 2, at: now.wall), .stalled(position: 32),
                .userAction(.seek(position: 40)), .userAction(.pause),
                .ended(position: 0),  // never before the item's start
            ])
        #expect(player.advance(now: now).first == .ready(position: 30))
    }

    @Test func noLatency_passesEverythingUntouched() {
        var player = OutputLatencyPlayer(Recording(says: [.ready(position: 0.000_001)]), latency: 0)
        let commands: [PlayerCommand] = [
            .load(LoadedItem(id: "a", url: "/a.mkv"), position: 0), .play(rate: 1, position: 3.25, at: now.wall),
            .pause(position: 4.5),
        ]
        for command in commands { #expect(player.perform(command, now: now) == [.ready(position: 0.000_001)]) }
        #expect(player.inner.commands == commands)
    }
}

import CoplayCore
import Foundation
import Testing

@testable import CoplayRuntime

/// The Kodi driver against a simulated Kodi 20 on a simulated clock, for ten minutes of play:
/// Kodi's clock runs a little fast and now and then stands (a busy box), so the follower skips,
/// and every notification Kodi writes reaches the agent 50-500 ms late, each on its own delay (so
/// that two written together may arrive the other way round), several that come due together
/// read at one instant. Kodi's own answers come in a few milliseconds. Nobody presses anything:
/// not one group command may come of it. Then the person pauses with Kodi's remote, and that one
/// is the group's pause, however late its notification.
@Suite struct KodiLateEventsTests {
    /// Kodi as far as the driver sees it: its player's state, its 200 ms clock, its answers, and its
    /// notifications on their delays.
    final class SimulatedKodi {
        /// The driver over a socket pair, and the requests it sent (`KodiPlayerTests.FakeKodi`).
        let wire = KodiPlayerTests.FakeKodi()
        var player: KodiPlayer {
            get { wire.player }
            set { wire.player = newValue }
        }
        var now: Timestamp {
            get { wire.now }
            set { wire.now = newValue }
        }
        var random: SplitMix64
        /// Kodi's clock: where it stood at `anchor` (monotonic ns), and whether it runs.
        var anchorPosition = 0.0
        var anchor: Int64 = 0
        var playing = false
        /// Kodi's clock against true time: a little fast, so that the follower must skip.
        let rate = 1.004
        /// Messages written and not yet read by the driver: when each arrives, in the order made.
        var outbox: [(due: Int64, order: Int, text: String)] = []
        var written = 0
        var skips = 0
        /// When the driver last asked Kodi to pause or play.
        var lastAsked: Int64 = 0
        var groupCommands: [PlayerReport] = []

        init(seed: UInt64) { random = SplitMix64(seed: seed) }

        /// Where Kodi's player is now (true position), and what its `time` says (it steps every
        /// 200 ms, at the true position of the step).
        func position(at nanos: Int64) -> Double {
            guard playing, nanos > anchor else { return anchorPosition }
            return anchorPosition + Double(nanos - anchor) / 1e9 * rate
        }

        var reportedTime: Double {
            let step = now.monotonic.nanos / 200_000_000 * 200_000_000
            return position(at: max(step, anchor))
        }

        func timeObject(_ seconds: Double) -> String {
            let millis = Int64((max(seconds, 0) * 1000).rounded())
            return
                #"{"hours":\#(millis / 3_600_000),"minutes":\#(millis / 60_000 % 60),"seconds":\#(millis / 1000 % 60),"milliseconds":\#(millis % 1000)}"#
        }

        func delay(_ range: ClosedRange<Int64>) -> Int64 {
            range.lowerBound + Int64(random.nextUnit() * Double(range.upperBound - range.lowerBound))
        }

        func write(_ text: String, after millis: ClosedRange<Int64>) {
            written += 1
            outbox.append((now.monotonic.nanos + delay(millis) * 1_000_000, written, text))
        }

        func answer(_ id: Int64, _ result: String) {
            write(#"{"id":\#(id),"jsonrpc":"2.0","result":\#(result)}"#, after: 1...15)
        }

        func notify(_ method: String, _ data: String) {
            write(
                #"{"jsonrpc":"2.0","method":"\#(method)","params":{"data":\#(data),"sender":"xbmc"}}"#, after: 50...500)
        }

        var speed: Int { playing ? 1 : 0 }

        /// Kodi's player, as the notifications say it.
        var playerData: String { #"{"playerid":1,"speed":\#(speed)}"# }

        /// Kodi plays or pauses: its clock holds where it was (a play starts 70 ms late, as
        /// measured), and it says so.
        func setPlaying(_ play: Bool) {
            guard play != playing else { return }
            anchorPosition = position(at: now.monotonic.nanos)
            playing = play
            anchor = now.monotonic.nanos + (play ? 70_000_000 : 0)
            notify(play ? "Player.OnResume" : "Player.OnPause", #"{"item":{"type":"movie"},"player":\#(playerData)}"#)
        }

        /// Reads what the driver asked, and does it.
        func serve() {
            for (id, method, params) in wire.sent() {
                switch method {
                case "Player.Open":
                    (anchorPosition, anchor, playing) = (0, now.monotonic.nanos, true)
                    answer(id, #""OK""#)
                    notify("Player.OnPlay", #"{"item":{"type":"movie"},"player":\#(playerData)}"#)
                    notify("Player.OnAVStart", #"{"item":{"type":"movie"},"player":\#(playerData)}"#)
                case "Player.PlayPause":
                    lastAsked = now.monotonic.nanos
                    let play = params?["play"] == .bool(true)
                    setPlaying(play)
                    answer(id, #"{"speed":\#(speed)}"#)
                case "Player.Seek":
                    guard let target = KodiPlayer.seconds(params?["value"]?["time"]) else { continue }
                    skips += 1
                    (anchorPosition, anchor) = (target, now.monotonic.nanos + (playing ? 400_000_000 : 0))
                    answer(id, #"{"percentage":10,"time":\#(timeObject(target)),"totaltime":\#(timeObject(3600))}"#)
                    notify(
                        "Player.OnSeek",
                        #"{"item":{"type":"movie"},"player":{"playerid":1,"speed":\#(speed),"time":\#(timeObject(target)),"seekoffset":{"hours":0,"minutes":0,"seconds":0,"milliseconds":0}}}"#
                    )
                case "Player.GetProperties":
                    if params?["properties"]?.array?.contains(.string("totaltime")) == true {
                        answer(id, #"{"totaltime":\#(timeObject(3600))}"#)
                    } else {
                        answer(id, #"{"speed":\#(speed),"time":\#(timeObject(reportedTime))}"#)
                    }
                case "JSONRPC.Ping": answer(id, #""pong""#)
                case "JSONRPC.Version": answer(id, #"{"version":{"major":13,"minor":0,"patch":0}}"#)
                default: answer(id, #""OK""#)
                }
            }
        }

        /// The reports the driver made: any `userAction` is a group command nobody typed.
        func take(_ reports: [PlayerReport]) {
            groupCommands += reports.filter { if case .userAction = $0 { return true } else { return false } }
        }

        /// Runs the simulated clock to `seconds` from now: the driver's timers, Kodi's messages as
        /// they arrive (those due within 10 ms of each other read together), Kodi answering.
        func run(seconds: Double, stallEvery: Double? = nil) {
            let end = now.monotonic.nanos + Int64(seconds * 1e9)
            var nextStall = stallEvery.map { now.monotonic.nanos + Int64($0 * 1e9) }
            while now.monotonic.nanos < end {
                var next = min(end, now.monotonic.nanos + 50_000_000)
                if let wake = player.nextEvent(now: now) { next = min(next, wake.nanos) }
                if let due = outbox.map(\.due).min() { next = min(next, due + 10_000_000) }
                if let stall = nextStall { next = min(next, stall) }
                now = now.advanced(by: .nanoseconds(max(next - now.monotonic.nanos, 1_000_000)))
                if let stall = nextStall, let every = stallEvery, now.monotonic.nanos >= stall {
                    // Kodi's clock stands 300 ms (a busy box): it falls behind the group.
                    if playing {
                        anchorPosition = position(at: now.monotonic.nanos)
                        anchor = max(anchor, now.monotonic.nanos) + 300_000_000
                    }
                    nextStall = stall + Int64(every * 1e9)
                }
                let arrived = outbox.filter { $0.due <= now.monotonic.nanos }.sorted { $0.due < $1.due }
                outbox.removeAll { $0.due <= now.monotonic.nanos }
                for message in arrived { take(player.receive(line: Array(message.text.utf8), at: now)) }
                take(player.advance(now: now))
                serve()
            }
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func tenMinutesOfLateAndReorderedNotifications_whileTheFollowerSkips_makeNoGroupCommand(seed: UInt64) throws {
        let kodi = SimulatedKodi(seed: seed)
        _ = kodi.player.perform(
            .load(LoadedItem(id: "film", url: "/films/a.mkv", durationSeconds: 3600), position: 0), now: kodi.now)
        kodi.serve()
        kodi.run(seconds: 3)
        #expect(!kodi.playing, "the driver paused Kodi at the film's start")
        let startAt = kodi.now.wall + .milliseconds(500)
        kodi.take(kodi.player.perform(.play(rate: 1, position: 0, at: startAt), now: kodi.now))
        kodi.serve()
        kodi.run(seconds: 540, stallEvery: 45)
        // Kodi plays where the group is (its clock against the group's, which started at startAt),
        // read once a second over the last minute: a skip holds it paused a moment, so the median.
        var errors: [Double] = []
        for _ in 0..<60 {
            kodi.run(seconds: 1, stallEvery: 45)
            let group = Double(kodi.now.wall.unixNanos - startAt.unixNanos) / 1e9
            errors.append(abs(kodi.position(at: kodi.now.monotonic.nanos) - group))
        }
        errors.sort()
        print(
            "seed \(seed): \(kodi.skips) skips; |Kodi − group| over the last minute: median \(errors[30]), max \(errors[59])"
        )
        #expect(kodi.skips >= 10, "the follower skipped \(kodi.skips) times")
        #expect(errors[30] < 0.1, "Kodi is \(errors[30]) s from the group (median of the last minute)")
        #expect(kodi.groupCommands.isEmpty, "group commands nobody typed: \(kodi.groupCommands.prefix(5))")

        // The person then pauses with Kodi's remote, away from coplay's own asks: that one is the
        // group's pause, however late its notification.
        while !kodi.playing || kodi.now.monotonic.nanos - kodi.lastAsked < 3_000_000_000 { kodi.run(seconds: 0.1) }
        kodi.setPlaying(false)
        kodi.run(seconds: 1)
        #expect(kodi.groupCommands == [.userAction(.pause)], "\(kodi.groupCommands)")
    }
}

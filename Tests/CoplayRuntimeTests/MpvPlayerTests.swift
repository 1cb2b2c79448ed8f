import CoplayCore
import Foundation
import Testing

@testable import CoplayRuntime

/// The mpv driver against a scripted mpv: the other end of a socket pair, whose lines the test
/// reads and to which it answers as mpv would.
@Suite struct MpvPlayerTests {
    final class FakeMpv {
        let descriptor: Int32
        private var pending: [UInt8] = []
        var player: MpvPlayer
        var now = Timestamp(
            monotonic: MonotonicInstant(nanos: 5_000_000_000), wall: WallInstant(unixNanos: 1_780_000_000_000_000_000))

        init(options: [String] = [], settings: Settings = Settings()) {
            var pair: [Int32] = [0, 0]
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair)
            descriptor = pair[1]
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            player = MpvPlayer(
                socket: LineSocket(descriptor: pair[0]), process: nil, settings: settings, options: options)
        }

        deinit { close(descriptor) }

        /// Commands read from the socket and not yet returned by `sent()`.
        private var unread: [[Any]] = []
        /// `loadfile` requests not answered yet, and the playlist entry mpv gives the next one.
        var loadsUnanswered: [Int] = []
        var nextEntry = 1

        private func read() {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                pending += chunk[..<count]
            }
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(pending[..<newline])
                pending.removeSubrange(...newline)
                if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any],
                    let command = object["command"] as? [Any]
                {
                    unread.append(command + [object["request_id"] ?? 0])
                    if command.first as? String == "loadfile", let id = object["request_id"] as? Int {
                        loadsUnanswered.append(id)
                    }
                }
            }
        }

        /// The commands the driver sent since the last call, each as its JSON array.
        func sent() -> [[Any]] {
            read()
            defer { unread.removeAll() }
            return unread
        }

        /// mpv's answers to the `loadfile`s sent, as it gives them: success, and the entry it
        /// made (before any event of that file).
        func answersLoads() {
            read()
            for id in loadsUnanswered {
                _ = player.receive(
                    line: Array(
                        #"{"request_id":\#(id),"error":"success","data":{"playlist_entry_id":\#(nextEntry)}}"#.utf8),
                    at: now)
                nextEntry += 1
            }
            loadsUnanswered.removeAll()
        }

        /// A line from mpv; a file's event comes after mpv's answers to the loads sent.
        @discardableResult
        func says(_ json: String) -> [PlayerReport] {
            if ["start-file", "file-loaded", "end-file"].contains(where: { json.contains("\"\($0)\"") }) {
                answersLoads()
            }
            return player.receive(line: Array(json.utf8), at: now)
        }

        func wait(_ interval: Duration) -> [PlayerReport] {
            now = now.advanced(by: interval)
            return player.advance(now: now)
        }

        /// Loads a file at 0 and answers as mpv does, up to its `ready`.
        func loadAndPlay() {
            _ = player.perform(.load(LoadedItem(url: "/media/a.mkv"), position: 0), now: now)
            says(#"{"event":"file-loaded"}"#)
            says(#"{"event":"playback-restart"}"#)
            _ = player.perform(.play(rate: 1, position: 0, at: now.wall), now: now)
            _ = wait(.zero)
            says(#"{"event":"property-change","name":"pause","data":false}"#)
        }

        /// The first sample after an unpause: waits `firstSampleDelay`, then answers the driver's
        /// request for audio-pts with `position`. What the driver reported.
        func answersFirstSample(_ position: Double) throws -> [PlayerReport] {
            _ = sent()
            _ = wait(Settings().follower.firstSampleDelay)
            let ask = try #require(sent().first { $0.first as? String == "get_property" })
            let id = try #require(ask.last as? Int)
            return says(#"{"request_id":\#(id),"error":"success","data":\#(position)}"#)
        }

        /// A rejoin after a stall: playing at 0, prepared at 10 s (a seek in the item), then
        /// started 100 ms late; its first reading is `error` off the group's timeline. What the
        /// driver reported of it.
        func rejoins(firstReadingOff error: Double) throws -> [PlayerReport] {
            loadAndPlay()
            _ = try answersFirstSample(0.06)
            _ = player.perform(.prepare(position: 10), now: now)
            says(#"{"event":"seek"}"#)
            says(#"{"event":"playback-restart"}"#)
            let anchorAt = WallInstant(unixNanos: now.wall.unixNanos - 100_000_000)  // the group is 100 ms on
            _ = player.perform(.play(rate: 1, position: 10, at: anchorAt), now: now)
            says(#"{"event":"seek"}"#)
            says(#"{"event":"playback-restart"}"#)
            _ = wait(.seconds(1))  // the unpause
            says(#"{"event":"property-change","name":"pause","data":false}"#)
            // Where the timeline is by the sample, plus the error.
            let sampledAt = now.wall.unixNanos + Settings().follower.firstSampleDelay.nanoseconds
            return try answersFirstSample(10 + Double(sampledAt - anchorAt.unixNanos) / 1e9 + error)
        }

        static func isSeek(_ command: [Any]) -> Bool { command.first as? String == "seek" }
        static func isPause(_ command: [Any], _ value: Bool) -> Bool {
            command.count >= 3 && command[0] as? String == "set_property" && command[1] as? String == "pause"
                && command[2] as? Bool == value
        }
    }

    /// mpv's video output blocks until a frame's time once it has rendered it, and a `loadfile`
    /// waits for it: the driver shortens that wait (a `next` while playing cost 40 ms more), unless
    /// the person gave mpv a value of their own.
    @Test func theVideoOutputsWaitIsShortened_unlessThePersonSetIt() {
        func timingOffsets(_ sent: [[Any]]) -> [Double] {
            sent.filter {
                $0.count >= 3 && $0[0] as? String == "set_property" && $0[1] as? String == "video-timing-offset"
            }
            .compactMap { ($0[2] as? NSNumber)?.doubleValue }
        }
        #expect(timingOffsets(FakeMpv().sent()) == [Settings().mpvVideoTimingOffset.seconds])
        #expect(Settings().mpvVideoTimingOffset.seconds < 0.05)
        #expect(timingOffsets(FakeMpv(options: ["vo=null", "video-timing-offset=0.05"]).sent()).isEmpty)
    }

    @Test func aGroupPause_pausesAtOnce_andSeeksToTheGroupsPositionOnlyOnceMpvSaysItPaused() {
        let mpv = FakeMpv()
        mpv.loadAndPlay()
        _ = mpv.wait(.seconds(1))
        _ = mpv.sent()
        // The group paused at 5 s, mpv plays at about 1 s: a snap is due, after the pause.
        _ = mpv.player.perform(.pause(position: 5), now: mpv.now)
        let first = mpv.sent()
        #expect(first.contains { FakeMpv.isPause($0, true) })
        #expect(!first.contains(where: FakeMpv.isSeek))
        mpv.says(#"{"event":"property-change","name":"pause","data":true}"#)
        let seeks = mpv.sent().filter(FakeMpv.isSeek)
        #expect(seeks.count == 1)
        #expect((seeks.first?[1] as? Double) == 5)
    }

    /// A rejoin after a stall (a seek in the item, then a late start) whose first reading is
    /// 20 ms ahead holds still for those 20 ms, then plays on: back on the group's timeline at
    /// once rather than steered in over a second. Ahead by less than 5 ms, it is left to the nudges.
    @Test func aStartAfterASeekFoundAhead_holdsStillForAsLong() throws {
        let mpv = FakeMpv()
        let reports = try mpv.rejoins(firstReadingOff: 0.020)
        #expect(reports.isEmpty, "the early reading is not a sample to steer by")
        #expect(mpv.sent().contains { FakeMpv.isPause($0, true) }, "it holds still")
        let due = try #require(mpv.player.nextEvent(now: mpv.now))
        #expect(abs((due - mpv.now.monotonic).nanoseconds - 20_000_000) < 1_000_000, "for 20 ms")
        _ = mpv.wait(.milliseconds(20))
        #expect(mpv.sent().contains { FakeMpv.isPause($0, false) }, "then plays on")
    }

    /// mpv reads ahead only so far from where it stands (`cache-secs`). A live seek whose target
    /// lies beyond a cached range that has stopped growing first moves mpv inside that range's
    /// end, so that it reads on, then seeks to the target once the cache holds it: it does not
    /// wait out `Settings.live.mpvSeekWaitMax` and then seek beyond the cache (to the HLS demuxer, which lands
    /// seconds off). What the live stall test caught: 9 s to rejoin, with `cache-secs=2`.
    @Test func aLiveSeekBeyondTheReadAhead_movesMpvInsideTheCachesEnd_thenSeeksExactly() throws {
        let mpv = FakeMpv()
        let item = LoadedItem(url: "http://10.77.0.1/live.m3u8", live: true)
        _ = mpv.player.perform(.load(item, position: 0), now: mpv.now)
        mpv.says(#"{"event":"file-loaded"}"#)
        mpv.says(#"{"event":"playback-restart"}"#)
        _ = mpv.sent()
        _ = mpv.player.perform(.prepare(position: 18.4), now: mpv.now)
        var commands = mpv.sent()
        var seeks: [Double] = []
        /// Answers the pending question about the cache with `end` as its range's end, 20 ms on.
        func cacheEnds(at end: Double) throws {
            let ask = try #require(
                commands.last { $0.first as? String == "get_property" && $0[1] as? String == "demuxer-cache-state" },
                "the driver asks about mpv's cache")
            let id = try #require(ask.last as? Int)
            let ranges = #"[{"start":16.42,"end":\#(end)}]"#
            mpv.says(#"{"request_id":\#(id),"error":"success","data":{"seekable-ranges":\#(ranges)}}"#)
            _ = mpv.wait(Settings().live.mpvSeekLookInterval)
            commands = mpv.sent()
            seeks += commands.filter(FakeMpv.isSeek).compactMap { ($0[1] as? NSNumber)?.doubleValue }
        }
        for end in stride(from: 16.9, through: 18.38, by: 0.2) { try cacheEnds(at: end) }
        #expect(seeks.isEmpty, "a cache still growing is waited for")
        for _ in 0..<12 { try cacheEnds(at: 18.38) }  // stopped, for 240 ms
        #expect(seeks.count == 1, "one move, not one every look: \(seeks)")
        #expect(
            abs((seeks.first ?? 0) - (18.38 - Settings().live.mpvSeekStepInside)) < 1e-9, "inside the cache: \(seeks)")
        try cacheEnds(at: 20.3)
        #expect(seeks.count == 2 && seeks.last == 18.4, "then to the target, in the cache: \(seeks)")
        // The move's restart is not the prepare's: ready only after the seek to the target.
        mpv.says(#"{"event":"seek"}"#)
        #expect(mpv.says(#"{"event":"playback-restart"}"#).isEmpty)
        mpv.says(#"{"event":"seek"}"#)
        let reports = mpv.says(#"{"event":"playback-restart"}"#)
        #expect(reports.count == 1)
        if case .ready(let position) = reports.first { #expect(position == 18.4) } else { Issue.record("\(reports)") }
    }

    /// The same rejoin found 20 ms behind plays at the catch-up rate (5%) for the 0.4 s that make
    /// the time up, steered by no sample meanwhile, then at the group's rate again.
    @Test func aStartAfterASeekFoundBehind_catchesUpAtTheCatchUpRate() throws {
        func speeds(_ sent: [[Any]]) -> [Double] {
            sent.filter { $0.count >= 3 && $0[0] as? String == "set_property" && $0[1] as? String == "speed" }
                .compactMap { ($0[2] as? NSNumber)?.doubleValue }
        }
        let mpv = FakeMpv()
        let reports = try mpv.rejoins(firstReadingOff: -0.020)
        #expect(reports.isEmpty, "the late reading is not a sample to steer by")
        let sent = mpv.sent()
        #expect(speeds(sent) == [1 + Settings().rateCatchUpMax], "it plays faster")
        #expect(!sent.contains { FakeMpv.isPause($0, true) }, "without stopping")
        let due = try #require(mpv.player.nextEvent(now: mpv.now))
        let expected = 0.020 / Settings().rateCatchUpMax
        #expect(abs(Double((due - mpv.now.monotonic).nanoseconds) / 1e9 - expected) < 0.001, "for 0.4 s")
        // A nudge from the core meanwhile waits for the catch-up's end.
        _ = mpv.player.perform(.adjustRate(1.002, at: mpv.now.wall), now: mpv.now)
        #expect(speeds(mpv.sent()).isEmpty)
        _ = mpv.wait(.milliseconds(200))
        #expect(!mpv.sent().contains { $0.first as? String == "get_property" }, "no sample in the catch-up")
        _ = mpv.wait(.milliseconds(200))
        #expect(speeds(mpv.sent()) == [1.002], "then the speed the core asked for")
    }

    /// `audio-pts` unavailable once (the audio not started yet, just after a load over a slow
    /// link) is no reason to sample the frames' clock for the rest of the item; unavailable
    /// `audioUnavailableMax` times in a row, the item has no audio; the next item is asked again.
    @Test func theAudioClockUnavailableOnce_isStillTheClockSampled() throws {
        func nextAsk(_ mpv: FakeMpv) throws -> (property: String, id: Int) {
            _ = mpv.wait(Settings().follower.sampleInterval)
            let ask = try #require(mpv.sent().first { $0.first as? String == "get_property" })
            return (try #require(ask[1] as? String), try #require(ask.last as? Int))
        }
        let mpv = FakeMpv()
        mpv.loadAndPlay()
        _ = try mpv.answersFirstSample(0.06)
        var ask = try nextAsk(mpv)
        #expect(ask.property == "audio-pts")
        mpv.says(#"{"request_id":\#(ask.id),"error":"property unavailable"}"#)
        ask = try nextAsk(mpv)
        #expect(ask.property == "audio-pts", "one answer without audio is the audio not started yet")
        for _ in 1..<MpvPlayer.audioUnavailableMax {
            mpv.says(#"{"request_id":\#(ask.id),"error":"property unavailable"}"#)
            ask = try nextAsk(mpv)
        }
        mpv.says(#"{"request_id":\#(ask.id),"error":"property unavailable"}"#)
        ask = try nextAsk(mpv)
        #expect(ask.property == "time-pos", "again and again: no audio, the frames' clock")
        mpv.says(#"{"request_id":\#(ask.id),"error":"success","data":1.0}"#)
        mpv.loadAndPlay()
        _ = mpv.sent()
        _ = mpv.wait(Settings().follower.firstSampleDelay)
        let first = try #require(mpv.sent().first { $0.first as? String == "get_property" })
        #expect(first[1] as? String == "audio-pts", "a new item's audio is asked for again")
    }

    @Test func theStartBiasAfterALoad_isNotTheOneAfterAPause() throws {
        let mpv = FakeMpv()
        mpv.loadAndPlay()
        // 60 ms after the unpause (`firstSampleDelay`) the driver asks for audio-pts; mpv's clock
        // reads 29 ms ahead (a load's priming): the bias after a load is learnt from it.
        _ = try mpv.answersFirstSample(0.089)
        // The person pauses in mpv 1 s on, then the group starts from there 100 ms later.
        _ = mpv.wait(.seconds(1))
        mpv.says(#"{"event":"property-change","name":"pause","data":true}"#)
        let position = 1.089  // where its clock said it was: 89 ms at 60 ms, and 1 s on
        let at = mpv.now.wall + .milliseconds(100)
        _ = mpv.player.perform(.play(rate: 1, position: position, at: at), now: mpv.now)
        // From where a pause stopped mpv its clock does not jump: the unpause is at the instant,
        // not the load's bias later.
        let due = try #require(mpv.player.nextEvent(now: mpv.now))
        #expect(abs((due - mpv.now.monotonic).nanoseconds - 100_000_000) < 1_000)
        // A new load: its start is delayed by what the last load measured (half of 29 ms).
        _ = mpv.player.perform(.load(LoadedItem(url: "/media/b.mkv"), position: 0), now: mpv.now)
        mpv.says(#"{"event":"file-loaded"}"#)
        mpv.says(#"{"event":"playback-restart"}"#)
        _ = mpv.player.perform(.play(rate: 1, position: 0, at: mpv.now.wall + .milliseconds(100)), now: mpv.now)
        let delayed = try #require(mpv.player.nextEvent(now: mpv.now))
        #expect(abs((delayed - mpv.now.monotonic).nanoseconds - 114_500_000) < 1_000)
    }

    /// Two loads in a row: the first file's `file-loaded` comes after the second `loadfile` was
    /// sent and before mpv answered it. It is not the second file's: the driver neither seeks
    /// (mpv would refuse it until the new file is loaded, and a refused seek reads as a server
    /// with no byte ranges) nor says the item failed when the replaced file ends in an error.
    /// It seeks once the second file, the entry mpv named, is loaded.
    @Test func aFileLoadedOfAReplacedFile_isNotTheNewLoads_noSeekUntilItsOwn() throws {
        let mpv = FakeMpv()
        _ = mpv.player.perform(.load(LoadedItem(url: "/media/a.mkv"), position: 0), now: mpv.now)
        mpv.answersLoads()  // entry 1
        mpv.says(#"{"event":"start-file","playlist_entry_id":1}"#)
        _ = mpv.sent()
        _ = mpv.player.perform(.load(LoadedItem(url: "/media/b.mkv"), position: 42), now: mpv.now)
        // The first file's, before mpv answered the second load.
        #expect(mpv.player.receive(line: Array(#"{"event":"file-loaded"}"#.utf8), at: mpv.now).isEmpty)
        #expect(!mpv.sent().contains(where: FakeMpv.isSeek), "no seek on the replaced file's file-loaded")
        #expect(
            mpv.player.receive(
                line: Array(#"{"event":"end-file","reason":"error","playlist_entry_id":1,"file_error":"x"}"#.utf8),
                at: mpv.now
            ).isEmpty, "the replaced file's error is not the item's")
        mpv.answersLoads()  // entry 2
        // Still the first file's (a late event of entry 1): no seek.
        mpv.says(#"{"event":"start-file","playlist_entry_id":1}"#)
        #expect(mpv.player.receive(line: Array(#"{"event":"file-loaded"}"#.utf8), at: mpv.now).isEmpty)
        #expect(!mpv.sent().contains(where: FakeMpv.isSeek))
        mpv.says(#"{"event":"start-file","playlist_entry_id":2}"#)
        mpv.says(#"{"event":"file-loaded"}"#)
        #expect(mpv.sent().filter(FakeMpv.isSeek).map { $0[1] as? Double } == [42], "the seek goes once b is loaded")
    }

    /// A load whose answer is forgotten (more requests than `playerRequestsMax` went unanswered
    /// after it) does not hold its `file-loaded` back for ever: the next one is taken.
    @Test func aLoadForgottenUnanswered_takesTheNextFileLoaded() throws {
        var settings = Settings()
        settings.playerRequestsMax = 0  // every request forgotten as it is sent
        let mpv = FakeMpv(settings: settings)
        _ = mpv.player.perform(.load(LoadedItem(url: "/media/a.mkv"), position: 42), now: mpv.now)
        _ = mpv.sent()
        mpv.loadsUnanswered.removeAll()  // mpv never answered it
        #expect(mpv.player.receive(line: Array(#"{"event":"file-loaded"}"#.utf8), at: mpv.now).isEmpty)
        #expect(mpv.sent().filter(FakeMpv.isSeek).map { $0[1] as? Double } == [42])
    }

    /// A transition loads the next item and at once asks every player to prepare at its start.
    /// The driver seeks there as the file is loaded (one seek, ending with the load's restart),
    /// which is the ready: without that seek, after a load at an item's end mpv began its audio
    /// output while paused and three players began the item 5 ms apart instead of 1.
    @Test func aPrepareWhereTheLoadIsGoing_seeksOnceTheFileIsLoaded_andIsReadyAtTheRestart() {
        let mpv = FakeMpv()
        mpv.loadAndPlay()
        _ = mpv.wait(.seconds(1))
        _ = mpv.sent()
        #expect(mpv.player.perform(.load(LoadedItem(url: "/media/b.mkv"), position: 0), now: mpv.now).isEmpty)
        #expect(mpv.player.perform(.prepare(position: 0), now: mpv.now).isEmpty)
        let beforeLoaded = mpv.sent()
        #expect(beforeLoaded.contains { $0.first as? String == "loadfile" })
        #expect(!beforeLoaded.contains(where: FakeMpv.isSeek), "mpv refuses a seek before the file is loaded")
        #expect(mpv.says(#"{"event":"file-loaded"}"#).isEmpty)
        #expect(mpv.sent().filter(FakeMpv.isSeek).map { $0[1] as? Double } == [0])
        mpv.says(#"{"event":"seek"}"#)
        let reports = mpv.says(#"{"event":"playback-restart"}"#)
        #expect(reports.contains { if case .ready(0) = $0 { true } else { false } })
    }

    @Test func aPauseSetInMpv_holdsWhereItStopped_soTheGroupsPauseThereMakesNoSeek() throws {
        let mpv = FakeMpv()
        mpv.loadAndPlay()
        _ = mpv.wait(Settings().follower.firstSampleDelay)
        let ask = try #require(mpv.sent().first { $0.first as? String == "get_property" })
        let id = try #require(ask.last as? Int)
        mpv.says(#"{"request_id":\#(id),"error":"success","data":0.060}"#)
        _ = mpv.wait(.seconds(2))
        // The person pauses mpv at 2.06 s; the group's pause comes back with that position.
        let reports = mpv.says(#"{"event":"property-change","name":"pause","data":true}"#)
        #expect(reports.contains { if case .userAction(.pause) = $0 { true } else { false } })
        _ = mpv.sent()
        _ = mpv.player.perform(.pause(position: 2.060), now: mpv.now)
        #expect(!mpv.sent().contains(where: FakeMpv.isSeek))
    }

    /// mpv's `end-file` with an error is a load the player could not do, which the core answers
    /// by leaving the item (it was a generic failure, and the agent waited for it forever).
    @Test func aFileMpvCannotOpen_isALoadFailure() {
        let mpv = FakeMpv()
        _ = mpv.player.perform(.load(LoadedItem(url: "/media/missing.mkv"), position: 0), now: mpv.now)
        let reports = mpv.says(#"{"event":"end-file","reason":"error","file_error":"loading failed"}"#)
        #expect(
            reports == [
                .loadFailed(
                    "mpv could not play /media/missing.mkv: no such file (No such file or directory)",
                    problem: .notFound)
            ], "a missing file is said to be missing (mpv says only 'loading failed')")
        // A file that exists but that mpv cannot read, and a URL whose failure mpv does not explain.
        let unreadable = MpvPlayer.loadFailure(url: "/etc/hostname", fileError: "unrecognized file format")
        #expect(
            unreadable == .loadFailed("mpv could not play /etc/hostname: unrecognized file format", problem: .format))
        let remote = MpvPlayer.loadFailure(url: "http://h/film.mp4", fileError: "loading failed")
        #expect(remote == .loadFailed("mpv could not play http://h/film.mp4: loading failed", problem: .other))
    }

    /// A stream whose server takes no byte ranges: mpv refuses a seek beyond its cache. A prepare
    /// (a stalled player catching up to the group) waited for a restart that never came, and the
    /// participant stayed suspended without a word; now the player says why. Refused once, the
    /// seek is asked again 300 ms later (mpv refuses one for a moment, too, while it still opens
    /// a network stream); refused again, the player fails.
    @Test func aSeekMpvRefuses_whilePreparing_isReportedWithItsReason() throws {
        let mpv = FakeMpv()
        mpv.loadAndPlay()
        _ = mpv.wait(.seconds(1))
        _ = mpv.sent()
        _ = mpv.player.perform(.prepare(position: 18.5), now: mpv.now)
        let seek = try #require(mpv.sent().first(where: FakeMpv.isSeek))
        let id = try #require(seek.last as? Int)
        #expect(mpv.says(#"{"request_id":\#(id),"error":"error running command"}"#).isEmpty, "asked again first")
        #expect(mpv.wait(.milliseconds(200)).isEmpty)
        #expect(mpv.sent().first(where: FakeMpv.isSeek) == nil, "not before 300 ms")
        _ = mpv.wait(.milliseconds(150))
        let again = try #require(mpv.sent().first(where: FakeMpv.isSeek), "the seek asked again")
        #expect((again[1] as? Double).map { abs($0 - 18.5) < 0.001 } ?? false, "\(again)")
        let againID = try #require(again.last as? Int)
        let reports = mpv.says(#"{"request_id":\#(againID),"error":"error running command"}"#)
        #expect(reports.count == 1)
        guard case .failed(let text) = reports.first else {
            Issue.record("no failure reported: \(reports)")
            return
        }
        #expect(text.contains("18.5") && text.contains("byte ranges"), "\(text)")
    }
}

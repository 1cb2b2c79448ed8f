import CoplayCore
import Foundation
import Testing

@testable import CoplayRuntime

/// The VLC driver against a scripted script: the other end of a socket pair, whose lines the test
/// reads and to which it answers as coplay's script inside VLC would.
@Suite struct VlcPlayerTests {
    final class FakeScript {
        let descriptor: Int32
        var player: VlcPlayer
        var now = Timestamp(
            monotonic: MonotonicInstant(nanos: 5_000_000_000), wall: WallInstant(unixNanos: 1_780_000_000_000_000_000))
        private var pending: [UInt8] = []

        init() {
            var pair: [Int32] = [0, 0]
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair)
            descriptor = pair[1]
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            player = VlcPlayer(link: VlcLink(connected: LineSocket(descriptor: pair[0])), settings: Settings())
        }

        deinit { close(descriptor) }

        /// The lines the driver sent since the last call.
        func sent() -> [String] {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                pending += chunk[..<count]
            }
            var lines: [String] = []
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[..<end], as: UTF8.self))
                pending.removeSubrange(...end)
            }
            return lines
        }

        @discardableResult
        func say(_ line: String) -> [PlayerReport] { player.receive(line: Array(line.utf8), at: now) }
    }

    @Test func aLocalPath_becomesAFileURI_andNothingInAURLBreaksTheLine() {
        #expect(VlcPlayer.uri(of: "/home/ann/Our Film 100%.mkv") == "file:///home/ann/Our%20Film%20100%25.mkv")
        #expect(VlcPlayer.uri(of: "/films/café\nquit") == "file:///films/caf%C3%A9%0Aquit")
        #expect(VlcPlayer.uri(of: "http://10.0.0.1:8080/a%20b.mkv?x=1 2") == "http://10.0.0.1:8080/a%20b.mkv?x=1%202")
        #expect(VlcPlayer.percentDecoded("/home/ann/Our%20Film%20100%25.mkv") == "/home/ann/Our Film 100%.mkv")
        #expect(VlcPlayer.percentDecoded("/bad%zz") == nil)
        #expect(VlcPlayer.percentDecoded("/cut%2") == nil)
        #expect(VlcPlayer.percentDecoded("/not-utf8%FF") == nil)
    }

    @Test func aLoadIsLoadedOnlyByItsOwnAnswer_thenSeeksWhereTheCoreAsked() throws {
        let vlc = FakeScript()
        let item = LoadedItem(id: "film", url: "/films/a.mkv", durationSeconds: 60)
        _ = vlc.player.perform(.load(item, position: 12.5), now: vlc.now)
        let load = try #require(vlc.sent().first { $0.hasPrefix("load ") })
        let id = try #require(Int(load.split(separator: " ")[1]))
        #expect(load == "load \(id) file:///films/a.mkv")
        // An earlier load's answer, or none of the driver's, loads nothing.
        vlc.say("loaded \(id + 100)")
        #expect(vlc.sent().allSatisfy { !$0.hasPrefix("seek ") })
        #expect(vlc.say("loaded \(id)").isEmpty, "not ready before the seek")
        // The follower seeks to where the core asked, then waits for VLC's clock to show it.
        let seek = try #require(vlc.sent().first { $0.hasPrefix("seek ") })
        #expect(seek.hasSuffix(" 12500000"))
        let reports = vlc.say("restarted")
        #expect(reports.contains { if case .ready(12.5) = $0 { return true } else { return false } }, "\(reports)")
    }

    @Test func aLoadAtTheStart_isReadyOnceLoaded_andAReadingIsInMicroseconds() throws {
        let vlc = FakeScript()
        _ = vlc.player.perform(.load(LoadedItem(id: "film", url: "/films/a.mkv"), position: 0), now: vlc.now)
        let id = try #require(vlc.sent().first { $0.hasPrefix("load ") }?.split(separator: " ")[1])
        let reports = vlc.say("loaded \(id)")
        #expect(reports.contains { if case .ready(0) = $0 { return true } else { return false } }, "\(reports)")
        vlc.say("length 60000000")
        vlc.say("path file:///films/a%20copy.mkv")
        #expect(vlc.player.openFile == "/films/a copy.mkv")
    }

    @Test func linesOutOfRangeOrUnknown_changeNothing_andNeverTrap() {
        let vlc = FakeScript()
        let item = LoadedItem(id: "film", url: "/films/a.mkv", durationSeconds: 60)
        _ = vlc.player.perform(.load(item, position: 0), now: vlc.now)
        _ = vlc.sent()
        let hostile = [
            "", " ", "time", "time x y", "time 1 99999999999999999999999", "time 1 -5", "rate 0", "rate -1",
            "rate 99999999999", "length -5", "length 0", "length 9223372036854775807", "jump", "jump -1",
            "jump 9223372036854775807", "paused 2", "paused", "done", "done -1", "nosuch 18446744073709551616",
            "path", "path file:///%zz", "path http://host/x", "loaded", "loaded 99999999999999999999",
            "hello", String(repeating: "x", count: 100_000), "\u{0}\u{1}\u{2}", "restarted", "ended", "failed extra",
        ]
        var reports: [PlayerReport] = []
        for line in hostile { reports += vlc.say(line) }
        // Only a `failed` reaches the core (the item is loading, and VLC says it failed).
        #expect(
            reports.allSatisfy { if case .loadFailed = $0 { return true } else { return false } }, "\(reports)")
        #expect(vlc.player.openFile == nil)
    }
}

import CoplayCore
import Foundation
import Glibc
import Testing

@testable import CoplayRuntime

/// A live item's playlist as the agent reads it (`HTTPFetch`, `LivePlayer.read`), from a server
/// on loopback that answers each request as the test says: a good stream, and hostile ones
/// (huge, endless, slow, malformed), each refused with its reason, in bounded time and memory.
@Suite(.serialized) struct LiveFetchTests {
    /// Serves on 127.0.0.1 (a port of its own) until released: each connection's request path
    /// goes to `answer`, which writes to the socket whatever it likes.
    final class Server: @unchecked Sendable {
        let descriptor: Int32
        let port: UInt16
        private let stopped = NSLock()
        private var isStopped = false

        init(_ answer: @escaping @Sendable (_ path: String, _ socket: Int32) -> Void) throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.descriptor = descriptor
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var size = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, size) }
            }
            guard bound == 0, listen(descriptor, 8) == 0 else { throw HTTPFetch.Failure("cannot listen") }
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &size) }
            }
            port = UInt16(bigEndian: address.sin_port)
            let listener = descriptor
            Thread {
                while true {
                    let client = accept(listener, nil, nil)
                    guard client >= 0 else { return }
                    Thread {
                        var buffer = [UInt8](repeating: 0, count: 4096)
                        let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                        let request = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
                        let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
                        answer(path, client)
                        close(client)
                    }.start()
                }
            }.start()
        }

        deinit {
            shutdown(descriptor, Int32(SHUT_RDWR))
            close(descriptor)
        }

        var base: String { "http://127.0.0.1:\(port)" }
    }

    static func write(_ socket: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }

    static func respond(_ socket: Int32, _ body: [UInt8], status: String = "200 OK") {
        write(
            socket,
            Array("HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body)
    }

    /// A segment's head: one PES packet of video with `pts` (90 kHz).
    static func segment(pts: UInt64) -> [UInt8] {
        var bytes: [UInt8] = [0x47, 0x41, 0x00, 0x10, 0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5]
        bytes += [
            0x21 | UInt8((pts >> 29) & 0x0E), UInt8((pts >> 22) & 0xFF), UInt8(((pts >> 14) & 0xFE) | 1),
            UInt8((pts >> 7) & 0xFF), UInt8(((pts << 1) & 0xFE) | 1),
        ]
        return bytes + [UInt8](repeating: 0xFF, count: 188 - bytes.count)
    }

    static let playlist = """
        #EXTM3U
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:4
        #EXTINF:2.000000,
        #EXT-X-PROGRAM-DATE-TIME:2026-11-26T05:00:00.000Z
        seg4.ts
        #EXTINF:2.000000,
        #EXT-X-PROGRAM-DATE-TIME:2026-11-26T05:00:02.000Z
        seg5.ts

        """

    static var settings: Settings {
        var settings = Settings()
        settings.live.fetchTimeout = .seconds(1)
        settings.live.playlistBytesMax = 64 * 1024
        return settings
    }

    @Test func aLiveStream_isReadThroughItsMasterPlaylist_andItsDatesMapTheNewestSegmentsPTS() throws {
        let server = try Server { path, socket in
            switch path {
            case "/tv/master.m3u8":
                Self.respond(socket, Array("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow/live.m3u8\n".utf8))
            case "/tv/low/live.m3u8": Self.respond(socket, Array(Self.playlist.utf8))
            // The newest segment starts at 10 s of media time (900,000 at 90 kHz).
            case "/tv/low/seg5.ts":
                Self.respond(socket, Self.segment(pts: 900_000) + [UInt8](repeating: 0xFF, count: 188 * 10))
            default: Self.respond(socket, [], status: "404 Not Found")
            }
        }
        let reading = try LivePlayer<MpvPlayer>.read(
            server.base + "/tv/master.m3u8", anchor: true, settings: Self.settings
        )
        .get()
        #expect(reading.url == server.base + "/tv/low/live.m3u8")
        #expect(reading.playlist.segments.count == 2)
        // 2026-11-26T05:00:02Z is 1795669202; at media time 10 s.
        let offset = try #require(reading.offset)
        #expect(abs(offset - (1_795_669_202 - 10)) < 1e-6)
    }

    @Test func aDeletedNewestSegment_fallsBackToTheOneBefore() throws {
        let server = try Server { path, socket in
            switch path {
            case "/live.m3u8": Self.respond(socket, Array(Self.playlist.utf8))
            case "/seg4.ts": Self.respond(socket, Self.segment(pts: 720_000))
            default: Self.respond(socket, [], status: "404 Not Found")
            }
        }
        let reading = try LivePlayer<MpvPlayer>.read(server.base + "/live.m3u8", anchor: true, settings: Self.settings)
            .get()
        #expect(abs((reading.offset ?? 0) - (1_795_669_200 - 8)) < 1e-6)
    }

    @Test func anEndedPlaylist_isOnDemand_andNoSegmentIsRead() throws {
        let server = try Server { path, socket in
            switch path {
            case "/film.m3u8": Self.respond(socket, Array((Self.playlist + "#EXT-X-ENDLIST\n").utf8))
            default: Self.respond(socket, [], status: "500 Do Not Ask")  // a segment read would fail
            }
        }
        let reading = try LivePlayer<MpvPlayer>.read(server.base + "/film.m3u8", anchor: true, settings: Self.settings)
            .get()
        #expect(reading.playlist.ended && reading.offset == nil)
        // Shared as live all the same: its segment is read, and here it cannot be.
        let declared = LivePlayer<MpvPlayer>.read(
            server.base + "/film.m3u8", anchor: true, declaredLive: true, settings: Self.settings)
        guard case .failure(let failure) = declared else {
            Issue.record("a segment that answers 500 gave a map")
            return
        }
        #expect(failure.description.contains("answered 500"), "\(failure)")
    }

    /// Each hostile answer fails with its reason within the fetch's time limit (1 s here, plus
    /// the thread's start), holding no more than the playlist's byte limit.
    @Test func hostileServers_areRefusedWithAReason_inBoundedTimeAndMemory() throws {
        let cases: [(String, @Sendable (Int32) -> Void, String)] = [
            (
                "a huge playlist",
                { socket in
                    Self.write(socket, Array("HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n#EXTM3U\n".utf8))
                    for _ in 0..<200 { Self.write(socket, [UInt8](repeating: 0x23, count: 4096)) }
                }, "larger than 65536 bytes"
            ),
            (
                "an endless answer without a length",
                { socket in
                    Self.write(socket, Array("HTTP/1.1 200 OK\r\n\r\n#EXTM3U\n".utf8))
                    for _ in 0..<200 { Self.write(socket, Array("#EXT-X-FOO\n".utf8)) }
                    usleep(3_000_000)
                }, "did not answer in time"
            ),
            ("silence", { _ in usleep(3_000_000) }, "did not answer in time"),
            (
                "a malformed date",
                { socket in
                    Self.respond(
                        socket,
                        Array(
                            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-PROGRAM-DATE-TIME:not-a-date\n#EXTINF:1,\na.ts\n"
                                .utf8))
                }, "EXT-X-PROGRAM-DATE-TIME 'not-a-date' is not a date"
            ),
            ("a web page", { socket in Self.respond(socket, Array("<html>hello</html>".utf8)) }, "no #EXTM3U"),
            ("not found", { socket in Self.respond(socket, [], status: "404 Not Found") }, "answered 404"),
            ("not HTTP", { socket in Self.write(socket, Array("SSH-2.0-OpenSSH\r\n\r\n".utf8)) }, "HTTP/1.x"),
            (
                "a head without end",
                { socket in
                    for _ in 0..<500 {
                        Self.write(socket, Array("X-Junk: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".utf8))
                    }
                },
                "head longer than"
            ),
        ]
        for (name, answer, reason) in cases {
            let server = try Server { _, socket in answer(socket) }
            let started = ContinuousClock.now
            let result = LivePlayer<MpvPlayer>.read(server.base + "/live.m3u8", anchor: true, settings: Self.settings)
            let elapsed = ContinuousClock.now - started
            guard case .failure(let failure) = result else {
                Issue.record("\(name) was accepted")
                continue
            }
            #expect(failure.description.contains(reason), "\(name): \(failure)")
            #expect(elapsed < .seconds(2), "\(name) took \(elapsed)")
        }
    }

    @Test func onlyHTTPIsRead_andRelativeURIsResolveAgainstThePlaylist() {
        #expect(throws: HTTPFetch.Failure.self) { try HTTPFetch.Target("https://example.com/live.m3u8") }
        #expect(throws: HTTPFetch.Failure.self) { try HTTPFetch.Target("http://user@example.com/live.m3u8") }
        #expect(throws: HTTPFetch.Failure.self) { try HTTPFetch.Target("http://example.com:99999/") }
        let base = "http://10.0.0.1:8080/tv/live.m3u8?token=1"
        #expect(HTTPFetch.resolve("seg1.ts", against: base) == "http://10.0.0.1:8080/tv/seg1.ts")
        #expect(HTTPFetch.resolve("/other/seg1.ts", against: base) == "http://10.0.0.1:8080/other/seg1.ts")
        #expect(HTTPFetch.resolve("http://cdn.example/seg1.ts", against: base) == "http://cdn.example/seg1.ts")
        #expect(HTTPFetch.resolve("seg1.ts", against: "http://host") == "http://host/seg1.ts")
        #expect(LivePlayer<MpvPlayer>.readsPlaylist(of: LoadedItem(url: "http://h/a.m3u8?x=1")))
        #expect(!LivePlayer<MpvPlayer>.readsPlaylist(of: LoadedItem(url: "http://h/a.mp4")))
        #expect(LivePlayer<MpvPlayer>.readsPlaylist(of: LoadedItem(url: "http://h/stream", live: true)))
        #expect(!LivePlayer<MpvPlayer>.readsPlaylist(of: LoadedItem(url: "file:///a.m3u8")))
    }
}

/// `LivePlayer` around a player that records what it is told: a live stream is loaded at the
/// segment holding the group's date, then moved there in media time; every position crosses
/// the boundary mapped; a live playlist without dates fails to load, saying why.
@Suite(.serialized) struct LivePlayerTests {
    /// Records commands; reports ready after each load or prepare when asked to.
    struct Recorder: LiveStreamPlayer {
        var kind: String { "recorder" }
        var told: [String] = []
        var loadedFromEnd: Int?
        func nextEvent(now: Timestamp) -> MonotonicInstant? { nil }
        mutating func advance(now: Timestamp) -> [PlayerReport] { [] }
        mutating func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] { [] }
        func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) { ([], false) }
        func close() {}
        mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
            told.append("\(command)")
            switch command {
            case .load(_, let position), .prepare(let position): return [.ready(position: position)]
            default: return []
            }
        }
        mutating func loadLive(_ item: LoadedItem, fromEnd: Int, now: Timestamp) -> [PlayerReport] {
            loadedFromEnd = fromEnd
            return perform(.load(item, position: 0), now: now)
        }
    }

    static func now() -> Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        let monotonic = MonotonicInstant(nanos: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
        return Timestamp(monotonic: monotonic, wall: WallInstant(unixNanos: 1_795_669_210_000_000_000))
    }

    /// Drives `player` until its reading is done (at most 3 s): what it reported.
    static func settle(_ player: inout LivePlayer<Recorder>) -> [PlayerReport] {
        var reports: [PlayerReport] = []
        for _ in 0..<300 {
            reports += player.advance(now: now())
            if reports.contains(where: { if case .liveWindow = $0 { true } else { false } })
                || reports.contains(where: { if case .loadFailed = $0 { true } else { false } })
            {
                return reports
            }
            usleep(10_000)
        }
        return reports
    }

    @Test func aLiveLoad_startsAtTheSegmentHoldingTheDate_andEveryPositionIsMapped() throws {
        let server = try LiveFetchTests.Server { path, socket in
            switch path {
            case "/live.m3u8": LiveFetchTests.respond(socket, Array(LiveFetchTests.playlist.utf8))
            // The newest segment (05:00:02Z, 1795669202) starts at media time 10 s.
            case "/seg5.ts": LiveFetchTests.respond(socket, LiveFetchTests.segment(pts: 900_000))
            default: LiveFetchTests.respond(socket, [], status: "404 Not Found")
            }
        }
        var player = LivePlayer(Recorder(), settings: Settings())
        let offset = 1_795_669_202.0 - 10
        // The group is at 05:00:00.5Z, in the first segment (05:00:00-05:00:02), more than 1.5 target
        // durations behind the edge (05:00:04).
        #expect(
            player.perform(
                .load(LoadedItem(url: server.base + "/live.m3u8"), position: 1_795_669_200.5), now: Self.now()
            ).isEmpty)
        let reports = Self.settle(&player)
        #expect(reports.first == .liveWindow(LiveWindow(dates: 1_795_669_200...1_795_669_204, targetDuration: 2)))
        // Loaded from the first of the two segments (one before the one holding the date, not
        // before the first), then prepared at the date in media time; ready at the date.
        #expect(player.inner.loadedFromEnd == -2)
        #expect(player.inner.told.last == "\(PlayerCommand.prepare(position: 1_795_669_200.5 - offset))")
        #expect(reports.last == .ready(position: 1_795_669_200.5))
        // A play is sent in media time.
        _ = player.perform(.play(rate: 1, position: 1_795_669_203, at: WallInstant(unixNanos: 0)), now: Self.now())
        #expect(
            player.inner.told.last
                == "\(PlayerCommand.play(rate: 1, position: 1_795_669_203 - offset, at: WallInstant(unixNanos: 0)))")
    }

    @Test func aLivePlaylistWithoutDates_failsToLoad_sayingWhy() throws {
        let server = try LiveFetchTests.Server { _, socket in
            LiveFetchTests.respond(socket, Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n".utf8))
        }
        var player = LivePlayer(Recorder(), settings: Settings())
        _ = player.perform(.load(LoadedItem(url: server.base + "/live.m3u8"), position: 0), now: Self.now())
        let reports = Self.settle(&player)
        guard case .loadFailed(let text, _)? = reports.last else {
            Issue.record("no load failure: \(reports)")
            return
        }
        #expect(text.contains("no EXT-X-PROGRAM-DATE-TIME"), "\(text)")
        #expect(!player.inner.told.contains { $0.hasPrefix("load") }, "the player loaded it anyway")
    }
}

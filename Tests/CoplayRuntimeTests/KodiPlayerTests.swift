import CoplayCore
import Foundation
import Testing

@testable import CoplayRuntime

/// The Kodi driver against a scripted Kodi: the other end of a socket pair, whose JSON-RPC
/// requests the test reads and to which it answers, and notifies, as Kodi 20 does.
@Suite struct KodiPlayerTests {
    final class FakeKodi {
        let descriptor: Int32
        var player: KodiPlayer
        var now = Timestamp(
            monotonic: MonotonicInstant(nanos: 5_000_000_000), wall: WallInstant(unixNanos: 1_780_000_000_000_000_000))
        private var pending: [UInt8] = []

        init() {
            var pair: [Int32] = [0, 0]
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair)
            descriptor = pair[1]
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            let link = KodiLink(options: KodiOptions(), connected: LineSocket(descriptor: pair[0]))
            player = KodiPlayer(link: link, settings: Settings())
        }

        deinit { close(descriptor) }

        /// The requests the driver sent since the last call: (id, method, params).
        func sent() -> [(id: Int64, method: String, params: JSONValue?)] {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                pending += chunk[..<count]
            }
            var requests: [(Int64, String, JSONValue?)] = []
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                if let message = try? JSONParser.parse(Array(pending[..<end])), let id = message["id"]?.integer,
                    let method = message["method"]?.string
                {
                    requests.append((id, method, message["params"]))
                }
                pending.removeSubrange(...end)
            }
            return requests
        }

        /// Plays from the start now, as the core asks, letting the follower's timer run to the unpause.
        func play() {
            _ = player.perform(.play(rate: 1, position: 0, at: now.wall), now: now)
            for _ in 0..<20 {
                now = now.advanced(by: .milliseconds(5))
                _ = player.advance(now: now)
            }
        }

        @discardableResult
        func say(_ text: String) -> [PlayerReport] { player.receive(line: Array(text.utf8), at: now) }

        @discardableResult
        func answer(_ id: Int64, _ result: String = #""OK""#) -> [PlayerReport] {
            say(#"{"id":\#(id),"jsonrpc":"2.0","result":\#(result)}"#)
        }

        @discardableResult
        func notify(_ method: String, _ data: String) -> [PlayerReport] {
            say(#"{"jsonrpc":"2.0","method":"\#(method)","params":{"data":\#(data),"sender":"xbmc"}}"#)
        }

        /// Loads `item` as Kodi does it: opened, playing at once, paused at its first OnPlay.
        func load(_ item: LoadedItem) throws -> [PlayerReport] {
            _ = player.perform(.load(item, position: 0), now: now)
            let requests = sent()
            let open = try #require(requests.first { $0.method == "Player.Open" })
            #expect(open.params?["item"]?["file"]?.string == item.url)
            for request in requests where request.method != "Player.Open" { answer(request.id, #"{"speed":0}"#) }
            answer(open.id)
            #expect(notify("Player.OnPlay", #"{"item":{"type":"movie"},"player":{"playerid":1,"speed":1}}"#).isEmpty)
            let pause = try #require(sent().first { $0.method == "Player.PlayPause" })
            #expect(pause.params?["play"] == .bool(false))
            let reports = answer(pause.id, #"{"speed":0}"#)
            // Its echo is the driver's own.
            #expect(notify("Player.OnPause", #"{"player":{"playerid":1,"speed":0}}"#).isEmpty)
            return reports
        }
    }

    @Test func kodiObjects_areCutByTheirBraces_outsideStrings() {
        var framer = LineSocket.Framer(.jsonObjects, bytesMax: 64)
        let text = #" {"a":"}{\"","b":[1,{"c":2}]}{"d":3}  x{"e":"\\"}"#
        let frames = text.utf8.compactMap { framer.take($0) }.map { String(decoding: $0, as: UTF8.self) }
        #expect(frames == [#"{"a":"}{\"","b":[1,{"c":2}]}"#, #"{"d":3}"#, #"{"e":"\\"}"#])
        // An object longer than the bound is cut there (and then refused by the parser).
        var small = LineSocket.Framer(.jsonObjects, bytesMax: 8)
        let cut = #"{"long":"0123456789"}{"f":1}"#.utf8.compactMap { small.take($0) }
        #expect(cut.map(\.count) == [9, 7])
        var lines = LineSocket.Framer(.lines, bytesMax: 4)
        #expect("ab\nabcdefg\n".utf8.compactMap { lines.take($0) }.map(\.count) == [2, 5])
    }

    @Test func theKodiFlag_takesAHostAndAPort_andRefusesNonsense() {
        #expect(KodiOptions.parse("kodi") == KodiOptions())
        #expect(KodiOptions.parse("kodi:tv.local")?.endpoint == "tv.local:9090")
        #expect(KodiOptions.parse("kodi:192.168.1.20:8080")?.endpoint == "192.168.1.20:8080")
        #expect(KodiOptions.parse("kodi:[fe80::1]:9090")?.host == "fe80::1")
        #expect(KodiOptions.parse("kodi:[::1]")?.endpoint == "[::1]:9090")
        #expect(KodiOptions.parse("kodi:127.0.0.1")?.isLoopback == true)
        #expect(KodiOptions.parse("kodi:tv.local")?.isLoopback == false)
        for bad in [
            "kodi:", "kodi:host:", "kodi:host:0", "kodi:host:70000", "kodi:fe80::1", "kodi:[::1", "kodi:a b", "kodix",
        ] {
            #expect(KodiOptions.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func aFilmIsReadyOnlyOncePausedAtItsStart_andKodisTimeObjectIsExact() throws {
        let kodi = FakeKodi()
        let reports = try kodi.load(LoadedItem(id: "film", url: "/films/a.mkv", durationSeconds: 60))
        #expect(reports.contains { if case .ready = $0 { return true } else { return false } }, "\(reports)")
        #expect(
            KodiPlayer.time(3725.042) == .object([("hours", 1), ("minutes", 2), ("seconds", 5), ("milliseconds", 42)]))
        #expect(KodiPlayer.seconds(KodiPlayer.time(3725.042)) == 3725.042)
        #expect(
            KodiPlayer.seconds(.object([("hours", 0), ("minutes", 61), ("seconds", 0), ("milliseconds", 0)])) == nil)
        #expect(KodiPlayer.seconds(.string("soon")) == nil)
    }

    @Test func kodisRemote_isThePerson_butItsEchoesOfCoplayAreNot() throws {
        let kodi = FakeKodi()
        _ = try kodi.load(LoadedItem(id: "film", url: "/films/a.mkv", durationSeconds: 60))
        kodi.play()
        let asked = kodi.sent()
        #expect(asked.contains { $0.method == "Player.PlayPause" && $0.params?["play"] == .bool(true) })
        for request in asked { kodi.answer(request.id, #"{"speed":1}"#) }
        #expect(kodi.notify("Player.OnResume", #"{"player":{"playerid":1,"speed":1}}"#).isEmpty, "its own play")
        kodi.now = kodi.now.advanced(by: .seconds(5))
        // The person pauses with Kodi's remote: a group pause.
        let paused = kodi.notify("Player.OnPause", #"{"player":{"playerid":1,"speed":0}}"#)
        #expect(paused.contains { if case .userAction(.pause) = $0 { return true } else { return false } }, "\(paused)")
        // The person seeks with it: a group seek, to where Kodi says it went.
        let seeked = kodi.notify(
            "Player.OnSeek",
            #"{"player":{"playerid":1,"speed":0,"time":{"hours":0,"minutes":0,"seconds":42,"milliseconds":500}}}"#)
        #expect(
            seeked.contains { if case .userAction(.seek(42.5)) = $0 { return true } else { return false } }, "\(seeked)"
        )
        // The core's own seek, and its OnSeek: nothing for the group.
        _ = kodi.player.perform(.prepare(position: 20), now: kodi.now)
        let seek = try #require(kodi.sent().first { $0.method == "Player.Seek" })
        #expect(seek.params?["value"]?["time"]?["seconds"]?.integer == 20)
        kodi.answer(seek.id, #"{"percentage":33.3,"time":{"hours":0,"minutes":0,"seconds":20,"milliseconds":0}}"#)
        let echo = kodi.notify(
            "Player.OnSeek",
            #"{"player":{"playerid":1,"speed":0,"time":{"hours":0,"minutes":0,"seconds":20,"milliseconds":0}}}"#)
        #expect(!echo.contains { if case .userAction = $0 { return true } else { return false } }, "\(echo)")
    }

    @Test func garbageFromKodi_isCountedAndSaidOnce_andSilenceStandsAside() throws {
        let kodi = FakeKodi()
        _ = try kodi.load(LoadedItem(id: "film", url: "/films/a.mkv", durationSeconds: 60))
        _ = kodi.player.takeNotes()
        for junk in ["not json", "[1,2]", #"{"id":"x"}"#, #"{"method":7}"#, String(repeating: "{", count: 40)] {
            #expect(kodi.say(junk).isEmpty)
        }
        #expect(kodi.player.unknownFrames == 5)
        #expect(kodi.player.takeNotes().count == 1)
        // A request Kodi never answers (stopped, hung): said, and a stall of this participant.
        kodi.play()
        kodi.now = kodi.now.advanced(by: .milliseconds(2100))
        let reports = kodi.player.advance(now: kodi.now)
        #expect(reports.contains { if case .stalled = $0 { return true } else { return false } }, "\(reports)")
        #expect(kodi.player.takeNotes().contains { $0.contains("answered nothing") })
        let back = kodi.say(#"{"id":999,"jsonrpc":"2.0","result":"pong"}"#)
        #expect(back.contains { if case .stallEnded = $0 { return true } else { return false } }, "\(back)")
    }

    @Test func aPositionIsReadAtTheStepOfKodisTime() throws {
        let kodi = FakeKodi()
        _ = try kodi.load(LoadedItem(id: "film", url: "/films/a.mkv", durationSeconds: 60))
        kodi.play()
        let asked = kodi.sent()
        #expect(asked.contains { $0.method == "Player.PlayPause" && $0.params?["play"] == .bool(true) })
        for request in asked { kodi.answer(request.id, #"{"speed":1}"#) }
        var polls = 0
        var answeredAt: Double?
        // Kodi's time stands at 1.000 s until it steps to 1.200 s: each reading before the step asks
        // again after the poll interval; the one after it is the position.
        for step in 0..<200 {
            kodi.now = kodi.now.advanced(by: .milliseconds(5))
            _ = kodi.player.advance(now: kodi.now)
            for request in kodi.sent() where request.method == "Player.GetProperties" {
                polls += 1
                let millis = step < 30 ? 0 : 200
                kodi.answer(
                    request.id, #"{"speed":1,"time":{"hours":0,"minutes":0,"seconds":1,"milliseconds":\#(millis)}}"#)
                if millis == 200, answeredAt == nil { answeredAt = Double(step) }
            }
            if answeredAt != nil, step > Int(answeredAt!) + 1 { break }
        }
        #expect(polls >= 10, "read \(polls) times while the time stood")
        #expect(answeredAt != nil, "the step was seen")
    }
}

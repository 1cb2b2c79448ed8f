import Foundation
import Testing

@testable import CoplayCore
@testable import CoplayRuntime

@Suite struct EventFormatterTests {
    let clock = AgentClock(skewNanos: 250_000_000)
    let member = Member(id: PeerID(0xA11CE), incarnation: Incarnation(7))

    func object(_ event: Event) throws -> [String: Any] {
        let lines = EventFormatter(json: true, clock: clock).lines(for: event, wire: .init(), atUnixNanos: 42)
        #expect(lines.count == 1)
        return try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
    }

    @Test func statusJSON_carriesEveryContractFieldWithTrueSampleTime() throws {
        let sampled = Timestamp(
            monotonic: MonotonicInstant(nanos: 1), wall: WallInstant(unixNanos: 1_800_000_000_250_000_000))
        let report = StatusReport(
            member: member, name: "alice", sessionName: "s", state: .joined(since: MonotonicInstant(nanos: 0)),
            item: nil,
            rate: 0, positionSeconds: 0, sampledAt: sampled, isWaiting: false, suspensions: [], peerCount: 2,
            counters: Counters())
        let json = try object(.status(report))
        for key in [
            "event", "peer", "name", "session", "state", "item", "rate", "position", "sampledAtUnixNanos", "waiting",
            "suspensions", "peers",
        ] {
            #expect(json[key] != nil, "status lacks \(key)")
        }
        #expect(json["event"] as? String == "status")
        #expect(json["peer"] as? String == "00000000000a11ce")
        #expect(json["item"] is NSNull)
        #expect(json["state"] as? String == "joined")
        #expect(
            (json["sampledAtUnixNanos"] as? NSNumber)?.int64Value == 1_800_000_000_000_000_000, "the skew is undone")
        #expect((json["peers"] as? NSNumber)?.intValue == 2)
        #expect((json["atUnixNanos"] as? NSNumber)?.int64Value == 42)
    }

    @Test func everyEvent_isOneJSONObjectWithAnEventField() throws {
        let info = PeerInfo(
            member: member, name: "bob \"the\" builder\n", endpoint: Endpoint(address: 0x7F00_0001, port: 9),
            isSuspected: true,
            lastSeenAgo: .milliseconds(800), offset: nil, isClockSynced: false)
        // The names are the contract scripts rely on: written out here, not read back from the formatter.
        let events: [(Event, String)] = [
            (.session(SessionReport(state: .invalidated(reason: .left), member: member)), "session"),
            (.peerJoined(info), "peer-joined"), (.peerLeft(info, reason: .timeout), "peer-left"),
            (.peerUnresponsive(info), "peer-unresponsive"), (.peerResponsive(info), "peer-responsive"),
            (.clockSynced(info), "clock-synced"), (.peers([info, info]), "peers"),
            (.help(ConsoleCommand.usages), "help"), (.commandError(.init(message: "bad", usage: "status")), "error"),
        ]
        for (event, name) in events {
            let json = try object(event)
            #expect(json["event"] as? String == name)
        }
        let left = try object(.peerLeft(info, reason: .timeout))
        #expect(left["reason"] as? String == "timeout")
        #expect((left["peer"] as? [String: Any])?["name"] as? String == "bob \"the\" builder\n", "escaping round-trips")
        #expect((left["peer"] as? [String: Any])?["state"] as? String == "suspected")
        #expect((left["peer"] as? [String: Any])?["kind"] as? String == "web", "port 9 is a browser's")
        // One schema: the agent's line is the core's record (what the page gets) with the time
        // it was printed added last, for every event.
        let formatter = EventFormatter(json: true, clock: AgentClock())
        for (event, _) in events {
            let record = EventRecord.json(event)
            #expect(
                formatter.lines(for: event, wire: .init(), atUnixNanos: 42) == [
                    record.dropLast() + #","atUnixNanos":42}"#
                ])
            #expect(record.hasPrefix(#"{"v":1,"event":"#))
            // The page's module hands on the record's bytes: the same record.
            #expect(EventRecord.bytes(event) == Array(record.utf8))
        }
    }

    @Test func textLines_areOneLinePerEventExceptHelp() {
        let formatter = EventFormatter(json: false, clock: clock)
        let error = formatter.lines(
            for: .commandError(.init(message: "unknown command 'x'", usage: "status")), wire: .init(), atUnixNanos: 0)
        #expect(error == ["error: unknown command 'x'; usage: status"])
        #expect(formatter.lines(for: .peers([]), wire: .init(), atUnixNanos: 0) == ["peers none"])
    }

    /// `help` lists every command on an 80-column terminal (it once padded every line to 277
    /// characters); `help COMMAND` gives its usage, rules and example, as wide.
    @Test func help_fitsEightyColumns_andHelpCommandExplainsOne() throws {
        let formatter = EventFormatter(json: false, clock: clock)
        let list = formatter.lines(for: .help(ConsoleCommand.usages), wire: .init(), atUnixNanos: 0)
        #expect(list.allSatisfy { $0.count <= 80 }, "\(list.map(\.count).max() ?? 0) columns")
        for usage in ConsoleCommand.usages {
            #expect(list.contains { $0.hasPrefix("  \(usage.name) ") }, "\(usage.name) listed")
            let one = formatter.lines(for: .help([usage]), wire: .init(), atUnixNanos: 0)
            #expect(one.allSatisfy { $0.count <= 80 }, "help \(usage.name): \(one.map(\.count).max() ?? 0) columns")
            #expect(one.first?.hasPrefix("help \(usage.name): ") == true)
            #expect(one.joined(separator: " ").contains("example:"))
        }
        let queue = try #require(ConsoleCommand.usages.first { $0.name == "queue" })
        let rules = formatter.lines(for: .help([queue]), wire: .init(), atUnixNanos: 0).joined(separator: " ")
        #expect(rules.contains("while the") && rules.contains("group watches nothing"))
        guard case .success(.help(let topic))? = Optional(ConsoleCommand.parse("help Queue")) else {
            Issue.record("help Queue does not parse")
            return
        }
        #expect(topic == "queue")
        guard case .failure(let error) = ConsoleCommand.parse("help nope") else {
            Issue.record("help nope parses")
            return
        }
        #expect(error.message.contains("no command 'nope'"))
    }

    /// A nudged player's rate reads as a person would write it (it printed 0.9987975837240562).
    @Test func ratesPrintWithAtMostFourDecimals() {
        #expect(EventFormatter.rateText(0.998_797_583_724_056_2) == "0.9988")
        #expect(EventFormatter.rateText(1) == "1.0")
        #expect(EventFormatter.rateText(1.005) == "1.005")
        #expect(EventFormatter.rateText(.infinity) == "inf")
    }

    /// A drift not fitted yet is unknown (it printed drift=0.000ppm); a fitted one comes with
    /// its doubt.
    @Test func driftIsUnknownUntilFitted_thenGivenWithItsError() {
        var estimator = OffsetEstimator(settings: Settings())
        estimator.add(OffsetSample(receivedAt: MonotonicInstant(nanos: 1_000_000), offsetNanos: 0, delayNanos: 60_000))
        guard var estimate = estimator.estimate(at: MonotonicInstant(nanos: 2_000_000)) else {
            Issue.record("no estimate from a sample")
            return
        }
        #expect(EventFormatter.driftText(estimate) == "drift=unknown")
        (estimate.driftPPM, estimate.driftErrorPPM) = (-41.26, 38.04)
        #expect(EventFormatter.driftText(estimate) == "drift=-41.3±38.0ppm")
    }

    @Test func controlCharactersInStrings_areEscaped() {
        #expect(JSONValue.string("a\u{1}b").serialized == "\"a\\u0001b\"")
        // The events' own writer: quotes, backslashes, newlines and control characters.
        #expect(JSONObject.quoted("a\u{1}\"\\\n\u{1F}\u{7F}é") == #""a\u0001\"\\\n\u001f\u007fé""#)
        // A string with nothing to escape is taken whole (read in place); one escapable byte
        // anywhere, even last, is escaped.
        #expect(JSONObject.quoted("film é 🎬") == "\"film é 🎬\"")
        for (byte, escaped) in [
            ("\"", "\\\""), ("\\", "\\\\"), ("\n", "\\n"), ("\u{7F}", "\\u007f"), ("\u{0}", "\\u0000"),
        ] {
            #expect(JSONObject.quoted("ab" + byte) == "\"ab" + escaped + "\"")
        }
        // Decimals: trimmed by number (12.5, 1, 1.05), fixed with all their places, null when absent.
        var json = JSONObject()
        for (name, value) in [
            ("a", 12.5), ("b", 1.0), ("c", 1.05), ("d", -2.5), ("e", -0.000_000_1), ("f", 0.123_456_7),
        ] {
            json.decimal(name, value)
        }
        json.decimal("g", nil)
        json.decimal("h", .infinity)
        json.number("i", 1.5)
        json.number("j", -0.25, decimals: 1)
        // Past what an Int64 holds in its last place's units: null, not a trap.
        #expect(JSONObject.fixed(1e14, decimals: 6) == "null")
        #expect(JSONObject.fixed(1e14, decimals: 3) == "100000000000000.000")
        #expect(
            json.closed
                == #"{"a":12.5,"b":1,"c":1.05,"d":-2.5,"e":0,"f":0.123457,"g":null,"h":null,"i":1.500,"j":-0.3}"#)
        let dot = Dot(origin: Member(id: PeerID(0x0A1B_2C3D_4E5F_6071), incarnation: Incarnation(42)), counter: 7)
        #expect(dot.description == "0a1b2c3d/42#7", "a command's dot: its origin's first 8 hex digits")
        #expect(
            JSONValue.object([("k", .array([.int(1), .double(1.5), .null, .bool(true)]))]).serialized
                == "{\"k\":[1,1.5,null,true]}")
    }

    @Test func skewedClock_readsSkewedWallButReportsTrueTime() {
        let now = clock.now()
        let truth = AgentClock.trueUnixNanosNow()
        #expect(abs(now.wall.unixNanos - truth - 250_000_000) < 50_000_000)
        #expect(abs(clock.trueUnixNanos(of: now.wall) - truth) < 50_000_000)
    }

    /// A live item's position is a program date: printed as the UTC date and time it is (it read
    /// `position=1795822862.951`), a film's as seconds.
    @Test func aLivePosition_readsAsADate_aFilmsAsSeconds() {
        #expect(String(position: 1_795_822_862.951) == "2026-11-27T23:41:02.951Z")
        #expect(String(position: 1_795_822_862.9996) == "2026-11-27T23:41:03.000Z")
        #expect(String(position: 596.5) == "596.500")
        #expect(String(position: .infinity) == "inf")
    }

    /// `status` on a live item says how far it plays behind the live edge (the playlist's newest
    /// date at the player's last reading), in text and JSON; on a film it says nothing of it.
    @Test func statusOnALiveItem_saysHowFarBehindTheEdge() throws {
        func report(item: String?, position: Double, edge: Double?) -> StatusReport {
            StatusReport(
                member: member, name: "alice", sessionName: "s", state: .joined(since: MonotonicInstant(nanos: 0)),
                item: item, rate: 1, positionSeconds: position,
                sampledAt: Timestamp(monotonic: MonotonicInstant(nanos: 1), wall: WallInstant(unixNanos: 1)),
                isWaiting: false, suspensions: [], peerCount: 1, counters: Counters(), liveEdge: edge)
        }
        let text = EventFormatter(json: false, clock: clock)
        let live = text.lines(
            for: .status(report(item: "tv", position: 1_795_822_862.5, edge: 1_795_822_874.75)), wire: .init(),
            atUnixNanos: 0)[0]
        #expect(live.contains("position=2026-11-27T23:41:02.500Z behind-edge=12.250s "), "\(live)")
        let film = text.lines(
            for: .status(report(item: "film", position: 30, edge: nil)), wire: .init(), atUnixNanos: 0)[0]
        #expect(!film.contains("behind-edge"))
        let json = try object(.status(report(item: "tv", position: 1_795_822_862.5, edge: 1_795_822_874.75)))
        #expect(json["liveEdge"] as? Double == 1_795_822_874.75)
        // And the playback events: how far behind the edge the group starts, pauses, jumps.
        let playing = PlaybackReport(
            item: "tv", rate: 1, position: 1_795_822_862.5,
            originator: Originator(member: member, name: "alice", isLocal: true), reason: "start",
            dot: Dot(origin: member, counter: 3), liveEdge: 1_795_822_871)
        let line = text.lines(for: .playing(playing), wire: .init(), atUnixNanos: 0)[0]
        #expect(line.contains("position=2026-11-27T23:41:02.500Z behind-edge=8.500s reason=start"), "\(line)")
        #expect(try object(.playing(playing))["liveEdge"] as? Double == 1_795_822_871)
        var notLive = playing
        notLive.liveEdge = nil
        #expect(!text.lines(for: .paused(notLive), wire: .init(), atUnixNanos: 0)[0].contains("behind-edge"))
    }
}

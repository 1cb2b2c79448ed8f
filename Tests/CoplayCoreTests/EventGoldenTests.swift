import Foundation
import Testing

@testable import CoplayCore

/// The event schema's golden file (PROTOCOL.md, "Events"): one scripted session (Tests/Vectors/
/// events-script.json: a share, a start, seeks, a pause, the queue, a message, the answers to
/// `peers`, `status` and `help`, an error, the end) on one instance with a fixed clock, its
/// events written as the core writes them for every shell. The page's module runs the same
/// script (Tools/web/golden-events.mjs, in Tools/wasm-core) and must write the same bytes; the
/// agent's `--json` line is the same record with `atUnixNanos` added (EventFormatterTests).
/// `COPLAY_UPDATE_GOLDEN=1 swift test --filter EventGoldenTests` writes the file anew, for a
/// change of the schema that is meant (then `v` moves, if a field was renamed or removed).
@Suite struct EventGoldenTests {
    static let goldenURL = vectorsDirectory.appendingPathComponent("events.jsonl")

    /// The script's events, as records, in order.
    static func scriptedRecords() throws -> [String] {
        let script = try JSONParser.parse(
            Array(try Data(contentsOf: vectorsDirectory.appendingPathComponent("events-script.json"))))
        guard let id = script["id"]?.integer, let seed = script["seed"]?.integer, let port = script["port"]?.integer,
            let name = script["name"]?.string, let session = script["session"]?.string,
            let endMillis = script["endMillis"]?.integer, let steps = script["steps"]?.array
        else { throw CocoaError(.fileReadCorruptFile) }
        let mono0: Int64 = 1_000_000_000
        let wall0: Int64 = 1_800_000_000_000_000_000
        func at(_ mono: Int64) -> Timestamp {
            Timestamp(monotonic: MonotonicInstant(nanos: mono), wall: WallInstant(unixNanos: wall0 + (mono - mono0)))
        }
        // As the module's coplay_create makes it.
        let identity = LocalIdentity(
            id: PeerID(UInt64(id)), name: name, sessionName: session, unicastPort: UInt16(port), playerKind: "web")
        var instance = Instance(identity: identity, seed: UInt64(seed), now: at(mono0))
        var records: [String] = []
        var wake: Int64?
        struct Silent: PlayerLoop.Player {
            mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] { [] }
        }
        func carry(_ directives: [Directive], _ now: Timestamp) {
            var player = Silent()
            _ = PlayerLoop.carryOut(
                directives, instance: &instance, player: &player, now: { now },
                carry: { step in
                    switch step {
                    case .emit(let event): records.append(EventRecord.json(event))
                    case .wake(let instant): wake = instant.nanos
                    default: break
                    }
                })
        }
        var now = mono0
        carry(instance.start(now: at(now)), at(now))
        var remaining = steps[...]
        let end = mono0 + endMillis * 1_000_000
        while true {
            let next = remaining.first.flatMap { $0["at"]?.integer }.map { mono0 + $0 * 1_000_000 } ?? end
            if let due = wake, due < next, due > now {
                now = due
                carry(instance.onTick(now: at(now)), at(now))
                continue
            }
            guard let step = remaining.popFirst() else { break }
            now = max(now, next)
            if let line = step["console"]?.string {
                carry(instance.onConsoleLine(line, now: at(now)), at(now))
            } else if let kind = step["report"]?.integer {
                let position = step["position"]?.number ?? 0
                let report: PlayerReport = kind == 4 ? .ended(position: position) : .ready(position: position)
                carry(instance.onPlayerReport(report, now: at(now)), at(now))
            }
        }
        return records
    }

    @Test func theScriptedSessionsRecords_areTheGoldenFilesBytes() throws {
        let records = try Self.scriptedRecords()
        if ProcessInfo.processInfo.environment["COPLAY_UPDATE_GOLDEN"] == "1" {
            try (records.joined(separator: "\n") + "\n").write(to: Self.goldenURL, atomically: true, encoding: .utf8)
        }
        let golden = try String(contentsOf: Self.goldenURL, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(records.count == golden.count)
        for (index, (record, line)) in zip(records, golden).enumerated() {
            #expect(record == line, "record \(index + 1)")
        }
        // The session says what the schema promises: each event kind the script causes, each
        // record versioned.
        let names = Set(records.compactMap { try? JSONParser.parse($0)["event"]?.string })
        for expected in [
            "session", "activity", "item-changed", "waiting", "playing", "time-jumped", "paused", "queue-changed",
            "queue", "suspension-began", "suspension-ended", "peers", "status", "error", "help",
        ] {
            #expect(names.contains(expected), "no \(expected) event in the script's session")
        }
        #expect(records.allSatisfy { $0.hasPrefix(#"{"v":1,"event":""#) })
    }
}

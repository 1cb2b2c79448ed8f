import CoplayCore

/// The table `coplay ctl PATH --watch` redraws: what a person running a video wall looks at —
/// each participant, its item and state, how far this agent's player is from the group, the
/// clock offset to each peer, and the loss and repair counts. Made from the agent's `status`
/// and `peers` replies alone, so any client of the control socket could draw the same.
public enum WatchTable {
    public static func render(status: JSONValue, peers: JSONValue?, atUnixNanos: Int64) -> String {
        let counters = status["counters"]
        func count(_ key: String) -> Int64 { counters?[key]?.integer ?? 0 }
        let player = status["player"]
        var rows: [[String]] = [
            ["PARTICIPANT", "ID", "ITEM", "STATE", "POSITION s", "ERROR ms", "CLOCK ms", "SEEN ms"]
        ]
        let ownState: String = {
            let suspensions = strings(status["suspensions"])
            if !suspensions.isEmpty { return "suspended (" + suspensions.joined(separator: ",") + ")" }
            if status["waiting"]?.bool == true { return "waiting" }
            guard status["item"]?.string != nil else { return status["state"]?.string ?? "-" }
            return (status["rate"]?.number ?? 0) == 0 ? "paused" : "playing ×\(format(status["rate"]?.number, 2))"
        }()
        rows.append([
            (status["name"]?.string ?? "-") + " (this)", shortID(status["peer"]?.string), status["item"]?.string ?? "-",
            ownState, format(status["position"]?.number, 3), signed(player?["sampleErrorMs"]?.number, 2), "0", "-",
        ])
        var peerList: [JSONValue] = []
        if case .array(let values) = peers { peerList = values }
        for peer in peerList.sorted(by: { ($0["name"]?.string ?? "") < ($1["name"]?.string ?? "") }) {
            let suspensions = strings(peer["suspensions"])
            let state: String
            if peer["state"]?.string == "suspected" {
                state = "silent"
            } else if !suspensions.isEmpty {
                state = "suspended (" + suspensions.joined(separator: ",") + ")"
            } else if peer["waiting"]?.bool == true {
                state = peer["ready"]?.bool == true ? "ready" : "waiting"
            } else {
                state = peer["item"]?.string == nil ? "idle" : "with the group"
            }
            rows.append([
                peer["name"]?.string ?? "-", shortID(peer["id"]?.string), peer["item"]?.string ?? "-", state, "-", "-",
                signed(peer["offsetNanos"]?.number.map { $0 / 1e6 }, 3), format(peer["lastSeenMillis"]?.number, 0),
            ])
        }
        let drops: String = {
            guard case .object(let members) = counters?["drops"], !members.isEmpty else { return "none" }
            return members.map { "\($0.0) \($0.1.integer ?? 0)" }.joined(separator: ", ")
        }()
        let header =
            "coplay — session \(status["session"]?.string ?? "-"), \(peerList.count + 1) participant\(peerList.isEmpty ? "" : "s"), "
            + "\(clockText(atUnixNanos)) UTC"
        return
            ([header, ""] + columns(rows) + [
                "",
                "received \(count("datagramsReceived")), sent \(count("datagramsSent")), dropped \(count("dropped")) (\(drops)); "
                    + "receive-queue drops \(count("receiveQueueDrops")), kernel drops \(count("kernelDrops"))",
                "repair: nacks sent \(count("nacksSent")), duplicates received \(count("duplicateCommands")); "
                    + "correction: nudge \(signed(player?["rateNudgePercent"]?.number, 3))%, rate nudges \(count("rateNudges")), "
                    + "seek corrections \(count("seekCorrections"))",
            ] + relayLine(status["relay"])).joined(separator: "\n")
    }

    /// With `--relay`: its server, whether connected, reconnections and frames.
    private static func relayLine(_ relay: JSONValue?) -> [String] {
        guard let relay, relay != .null else { return [] }
        func number(_ key: String) -> Int64 { relay[key]?.integer ?? 0 }
        let state = relay["connected"] == .bool(true) ? "connected to" : "not connected; trying"
        return [
            "relay: \(state) \(relay["server"]?.string ?? "-"), reconnections \(number("reconnections")); frames "
                + "published \(number("framesPublished")), received \(number("framesReceived")), dropped \(number("framesDropped")), "
                + "refused \(number("framesRefused"))"
        ]
    }

    private static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let values) = value else { return [] }
        return values.compactMap(\.string)
    }

    private static func shortID(_ id: String?) -> String { id.map { String($0.prefix(8)) } ?? "-" }

    private static func format(_ value: Double?, _ decimals: Int) -> String {
        guard let value, value.isFinite else { return "-" }
        return String(format3: value, decimals: decimals)
    }

    private static func signed(_ value: Double?, _ decimals: Int) -> String {
        guard let value, value.isFinite else { return "-" }
        return (value >= 0 ? "+" : "") + String(format3: value, decimals: decimals)
    }

    private static func clockText(_ unixNanos: Int64) -> String {
        let seconds = unixNanos / 1_000_000_000 % 86_400
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60))"
    }

    /// Rows padded into left-aligned columns two spaces apart.
    private static func columns(_ rows: [[String]]) -> [String] {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { $0.0.padded(to: $0.1) }.joined(separator: "  ").trailingSpacesTrimmed
        }
    }
}

extension String {
    fileprivate var trailingSpacesTrimmed: String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

import CoplayCore
import Glibc

/// Turns the core's events into output lines: readable text, or one JSON object per line with
/// an `"event"` field. Every JSON line also carries `atUnixNanos`, the true time it was printed.
public struct EventFormatter: Sendable {
    public var json: Bool
    public var clock: AgentClock

    public init(json: Bool, clock: AgentClock) {
        self.json = json
        self.clock = clock
    }

    /// Shell-side figures added to `status`: what the sockets sent, and the relay.
    public typealias WireStatistics = EventRecord.Wire

    /// A line per event: the core's record (PROTOCOL.md, "Events") with `atUnixNanos`, when it was printed,
    /// as its last field; or readable text.
    public func lines(for event: Event, wire: WireStatistics, atUnixNanos: Int64) -> [String] {
        if json {
            var record = EventRecord.open(event, wire: wire, trueUnixNanos: { clock.trueUnixNanos(of: $0) })
            record.int("atUnixNanos", atUnixNanos)
            return [record.closed]
        }
        return text(of: event, wire: wire)
    }

    public static func name(of event: Event) -> String { EventRecord.name(of: event) }

    /// How far a live item plays behind its edge (the playlist's newest date at the player's
    /// last reading), for `status`: `behind-edge=12.345s `; empty for an item that is not live.
    static func behindEdgeText(_ report: StatusReport) -> String {
        guard let edge = report.liveEdge, report.item != nil else { return "" }
        return "behind-edge=\(String(format3: max(0, edge - report.positionSeconds)))s "
    }

    /// The same for a playback event (a start, a pause, a jump on a live item).
    static func behindEdgeText(_ report: PlaybackReport) -> String {
        guard let edge = report.liveEdge else { return "" }
        return "behind-edge=\(String(format3: max(0, edge - report.position)))s "
    }

    private static func correctionText(_ report: StatusReport) -> String {
        let correction = report.correction
        var text =
            "player=\(report.playerKind) nudge=\(String(format3: correction.nudge * 100))% "
            + "error=\(correction.sampleError.map { String(format3: $0 * 1000) + "ms" } ?? "-")"
        if let seek = correction.lastSeek { text += " last-seek-correction=\(String(format3: seek * 1000))ms" }
        return text
    }

    // MARK: Text

    private func text(of event: Event, wire: WireStatistics) -> [String] {
        switch event {
        case .session(let report):
            var line = "session \(report.state.name) as \(report.member)"
            if case .invalidated(let reason) = report.state { line += " (\(reason))" }
            return [line]
        case .peerJoined(let info):
            return ["peer-joined \(info.name) \(info.member) at \(info.endpoint)"]
        case .peerLeft(let info, let reason):
            return ["peer-left \(info.name) \(info.member) reason=\(reason.rawValue)"]
        case .peerUnresponsive(let info):
            return ["peer-unresponsive \(info.name) \(info.member) silent for \(Self.millis(info.lastSeenAgo))"]
        case .message(let message):
            return [
                "message from \(Self.who(message.from))\(message.isReliable ? "" : " (unreliable)"): \(message.text)"
            ]
        case .messageSent(let sent):
            return [
                "message-sent id=\(sent.messageID) \(sent.bytes) bytes in \(sent.parts) datagram\(sent.parts == 1 ? "" : "s") to \(sent.recipients.joined(separator: ","))\(sent.isReliable ? "" : " (unreliable)")"
            ]
        case .peerChanged(let info):
            return ["peer-changed \(info.name) \(Self.participantText(info))"]
        case .peerResponsive(let info):
            return ["peer-responsive \(info.name) \(info.member)"]
        case .clockSynced(let info):
            return ["clock-synced \(info.name) \(Self.clockText(info))"]
        case .status(let report):
            let suspensions = report.suspensions.isEmpty ? "-" : report.suspensions.joined(separator: ",")
            return [
                "status \(report.name) id=\(report.member.id) session=\(report.sessionName) state=\(report.state.name) "
                    + "item=\(report.item ?? "-") rate=\(Self.rateText(report.rate)) position=\(String(position: report.positionSeconds)) "
                    + Self.behindEdgeText(report)
                    + "waiting=\(report.isWaiting ? "yes" : "no") suspensions=\(suspensions) "
                    + (report.interstitial.map { "interstitial=\($0) " } ?? "") + "peers=\(report.peerCount) "
                    + "received=\(report.counters.datagramsReceived) sent=\(wire.datagramsSent) dropped=\(report.counters.dropsTotal) "
                    + (wire.relay.map {
                        "relay=\($0.server ?? "-")(\($0.connected ? "connected" : "not connected"), \($0.reconnections) reconnections) "
                    } ?? "") + Self.correctionText(report)
            ]
        case .peers(let infos):
            guard !infos.isEmpty else { return ["peers none"] }
            let entries = infos.map { info in
                "\(info.name) \(info.member) \(info.isSuspected ? "suspected" : "alive") \(Self.participantText(info)) \(Self.clockText(info)) seen \(Self.millis(info.lastSeenAgo)) ago"
            }
            return ["peers \(infos.count): " + entries.joined(separator: " | ")]
        case .help(let usages):
            return Self.helpText(usages)
        case .commandError(let error):
            return ["error: \(error.message); usage: \(error.usage)"]
        case .activityChanged(let activity, let originator):
            let title = activity.title.isEmpty ? "" : " \"\(activity.title)\""
            let live = activity.live ? " live" : ""
            return ["activity \(activity.itemID)\(title) url=\(activity.url)\(live) by \(Self.who(originator))"]
        case .itemUnloaded(let item, let reason):
            return ["item-unloaded \(item) (\(reason))"]
        case .playerError(let text):
            return ["player-error \(text)"]
        case .activityUnchanged(let activity):
            return ["activity-unchanged \(activity.itemID) is already the group's activity: not shared again"]
        case .queueChanged(let report):
            let change = report.change
            let what =
                change.id.map { id in " \(id)" + (report.title.map { $0.isEmpty ? "" : " \"\($0)\"" } ?? "") } ?? ""
            return ["queue-changed \(change.kind.rawValue)\(what) by \(Self.who(change.originator))"]
        case .interstitial(let report):
            let what =
                "\(report.interstitial.id) \(report.interstitial.url) duration=\(String(format3: report.interstitial.durationSeconds)) "
                + "for=\(report.forAll ? "all" : "me") at \(report.item) \(String(position: report.position))"
            switch report.phase {
            case .scheduled: return ["interstitial-scheduled \(what) by \(Self.who(report.originator))"]
            case .began: return ["interstitial-began \(what) by \(Self.who(report.originator))"]
            case .ended:
                return ["interstitial-ended \(what)\(report.cutShort.map { " (cut short: \($0))" } ?? "")"]
            }
        case .queue(let report):
            guard !report.entries.isEmpty else {
                return ["queue empty\(report.current.map { " (the group is on \($0))" } ?? "")"]
            }
            return ["queue \(report.entries.count):"]
                + report.entries.map { entry in
                    let mark = entry.item.id == report.current ? "▶" : " "
                    let title = entry.item.title.isEmpty ? "" : " \"\(entry.item.title)\""
                    return "  \(mark) \(entry.item.id)\(title) \(entry.item.url) (added by \(entry.addedBy.name))"
                }
        case .stateAdopted(let report):
            return [
                "state-adopted from \(Self.who(report.from)): a snapshot of \(report.winners) winning commands stood for \(report.commandsCovered) commands not delivered here"
            ]
        case .proposal(let report):
            let head = "proposal \(report.item) at=\(String(position: report.position))"
            switch report.outcome {
            case .held(let remaining):
                return ["\(head) held until the last suspension ends (\(remaining) remain)"]
            case .sent:
                return ["\(head) sent to the group"]
            case .superseded(let by):
                return ["\(head) not sent: superseded by \(by)"]
            }
        case .itemChanged(let report):
            return [
                "item-changed \(report.item.id) (\(report.source))\(report.adoptedGroupState ? ", adopting the group's state" : "")"
            ]
        case .waiting(let report):
            return [
                "waiting \(report.item) at \(String(position: report.position)) for a coordinated \(report.reason) by \(Self.who(report.originator))"
            ]
        case .playing(let report):
            return [
                "playing \(report.item) rate=\(report.rate) position=\(String(position: report.position)) \(Self.behindEdgeText(report))reason=\(report.reason) by \(Self.who(report.originator))"
            ]
        case .paused(let report):
            return [
                "paused \(report.item) position=\(String(position: report.position)) \(Self.behindEdgeText(report))reason=\(report.reason) by \(Self.who(report.originator))"
            ]
        case .rateChanged(let report):
            return [
                "rate-changed \(report.item) to \(report.rate) reason=\(report.reason) by \(Self.who(report.originator))"
            ]
        case .timeJumped(let report):
            return [
                "time-jumped \(report.item) to \(String(position: report.position)) \(Self.behindEdgeText(report))by \(Self.who(report.originator))"
            ]
        case .commandIgnored(let ignored):
            return [
                "command-ignored \(ignored.operation) for \(ignored.commandItem) by \(Self.who(ignored.originator)): current item is \(ignored.currentItem ?? "none") (kept as that item's group state)"
            ]
        case .suspension(let report):
            return [
                "suspension-\(report.began ? "began" : "ended") id=\(report.id) \(report.reason) on \(report.item.isEmpty ? "-" : report.item)"
            ]
        }
    }

    private static func participantText(_ info: PeerInfo) -> String {
        let suspensions = info.suspensions.isEmpty ? "" : " suspended=\(info.suspensions.joined(separator: ","))"
        let copies = (info.wantsUnicast ? " unicast-copies" : "") + (info.copy.map { " copy=\($0)" } ?? "")
        return
            "item=\(info.item ?? "-") \(info.isWaiting ? "waiting" : (info.isReady ? "ready" : "not-ready"))\(suspensions)\(copies)"
    }

    private static func who(_ originator: Originator) -> String {
        originator.isLocal ? "\(originator.name) (here)" : originator.name
    }

    private static func clockText(_ info: PeerInfo) -> String {
        guard let offset = info.offset else { return "offset=unknown" }
        let sign = offset.offsetNanos >= 0 ? "+" : "-"
        return
            "offset=\(sign)\(String(format3: Double(abs(offset.offsetNanos)) / 1e6))ms±\(String(format3: Double(offset.errorNanos) / 1e6))ms delay=\(String(format3: Double(offset.delayNanos) / 1e6))ms \(driftText(offset))"
    }

    /// The drift with its standard error, or `drift=unknown` before it is fitted (it printed
    /// `drift=0.000ppm`, and 41–67 ppm between two agents of one host a few seconds in).
    public static func driftText(_ offset: OffsetEstimate) -> String {
        guard let error = offset.driftErrorPPM else { return "drift=unknown" }
        return "drift=\(offset.driftPPM >= 0 ? "+" : "")\(String(format3: offset.driftPPM, decimals: 1))"
            + "±\(String(format3: error, decimals: 1))ppm"
    }

    private static func millis(_ duration: Duration) -> String { "\(Int(duration.milliseconds.rounded()))ms" }

    /// A rate as a person reads it: at most 4 decimals (a player's rate nudged by the drift
    /// correction printed as 0.9987975837240562), 1.0 as 1.0.
    public static func rateText(_ rate: Double) -> String {
        guard rate.isFinite, abs(rate) < 1e9 else { return "\(rate)" }
        return "\((rate * 10_000).rounded() / 10_000)"
    }

    /// `help`: the commands, one line each, names aligned; `help COMMAND` (one usage): its
    /// summary, usage, rules and an example. Every line fits 80 columns.
    static func helpText(_ usages: [ConsoleCommand.Usage]) -> [String] {
        if usages.count == 1, let usage = usages.first {
            return wrapped("help \(usage.name): \(usage.summary)", indent: "  ")
                + wrapped("usage: \(usage.synopsis)", indent: "    ", first: "  ")
                + (usage.details.isEmpty ? [] : wrapped(usage.details, indent: "  ", first: "  "))
                + wrapped("example: \(usage.example)", indent: "    ", first: "  ")
        }
        let width = usages.map(\.name.count).max() ?? 0
        return ["help: one command per line; help COMMAND for its usage and rules"]
            + usages.flatMap { usage in
                wrapped(
                    usage.summary, indent: String(repeating: " ", count: width + 4),
                    first: "  \(usage.name.padded(to: width))  ")
            }
    }

    /// `text` in lines of at most `columns`, broken at spaces: the first after `first`, the
    /// others after `indent` (a word longer than a line stands alone).
    static func wrapped(_ text: String, indent: String, first: String = "", columns: Int = 80) -> [String] {
        var lines: [String] = []
        var line = first
        var lineHasWord = false
        for word in text.split(separator: " ") {
            if lineHasWord, line.count + 1 + word.count > columns {
                lines.append(line)
                (line, lineHasWord) = (indent, false)
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        return lines + [line]
    }
}

extension String {
    /// A media position as a person reads it: seconds with 3 decimals, or, for a live item's
    /// position (a program date: Unix seconds, at least `liveDateMin`; no film is 31 years long),
    /// the UTC date and time. `--json` keeps the number.
    init(position value: Double) {
        guard value.isFinite, value >= String.liveDateMin, value < 1e11 else {
            self.init(format3: value)
            return
        }
        let millis = Int64((value * 1000).rounded())
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ number: Int32) -> String { number < 10 ? "0\(number)" : "\(number)" }
        let fraction = String(millis % 1000)
        self =
            "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)Z"
    }

    /// The smallest position read as a program date: 2001-09-09, 1e9 Unix seconds.
    static let liveDateMin = 1e9

    /// The string followed by spaces up to `width` characters.
    func padded(to width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }

    /// A number with exactly `decimals` decimals (0 to 6), without Foundation's formatter. Total:
    /// a value too large for that (or not finite) is written as Swift writes it.
    init(format3 value: Double, decimals: Int = 3) {
        let places = Swift.min(Swift.max(decimals, 0), 6)
        var unit: Int64 = 1
        for _ in 0..<places { unit *= 10 }
        let scaledValue = (abs(value) * Double(unit)).rounded()
        guard value.isFinite, scaledValue < 9e15 else {
            self = "\(value)"
            return
        }
        let scaled = Int64(scaledValue)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        guard places > 0 else {
            self = sign + "\(scaled)"
            return
        }
        let fraction = String(scaled % unit)
        self = sign + "\(scaled / unit)." + String(repeating: "0", count: places - fraction.count) + fraction
    }
}

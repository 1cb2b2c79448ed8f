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

    /// Shell-side figures added to `status`: what the sockets sent.
    public struct WireStatistics: Sendable {
        public var datagramsSent = 0
        public var bytesSent = 0
        public var sendErrors = 0
        /// Datagrams the kernel dropped before they could be read (full receive buffer).
        public var kernelDrops = 0
        /// The relay's connection and counts, with `--relay`.
        public var relay: RelayStatistics?
        public init() {}
    }

    public func lines(for event: Event, wire: WireStatistics, atUnixNanos: Int64) -> [String] {
        if json {
            var members: [(String, JSONValue)] = [("event", .string(Self.name(of: event)))]
            members += fields(of: event, wire: wire)
            members.append(("atUnixNanos", .int(atUnixNanos)))
            return [JSONValue.object(members).serialized]
        }
        return text(of: event, wire: wire)
    }

    public static func name(of event: Event) -> String {
        switch event {
        case .session: "session"
        case .peerJoined: "peer-joined"
        case .peerLeft: "peer-left"
        case .peerUnresponsive: "peer-unresponsive"
        case .peerResponsive: "peer-responsive"
        case .peerChanged: "peer-changed"
        case .clockSynced: "clock-synced"
        case .status: "status"
        case .peers: "peers"
        case .help: "help"
        case .commandError: "error"
        case .activityChanged: "activity"
        case .activityUnchanged: "activity-unchanged"
        case .proposal: "proposal"
        case .itemChanged: "item-changed"
        case .itemUnloaded: "item-unloaded"
        case .playerError: "player-error"
        case .waiting: "waiting"
        case .playing: "playing"
        case .paused: "paused"
        case .timeJumped: "time-jumped"
        case .rateChanged: "rate-changed"
        case .commandIgnored: "command-ignored"
        case .suspension(let report): report.began ? "suspension-began" : "suspension-ended"
        case .message: "message"
        case .messageSent: "message-sent"
        case .stateAdopted: "state-adopted"
        case .queueChanged: "queue-changed"
        case .queue: "queue"
        case .interstitial(let report): "interstitial-\(report.phase.rawValue)"
        }
    }

    // MARK: JSON

    private func fields(of event: Event, wire: WireStatistics) -> [(String, JSONValue)] {
        switch event {
        case .session(let report):
            var fields: [(String, JSONValue)] = [
                ("state", .string(report.state.name)), ("peer", .string(report.member.id.description)),
                ("incarnation", .int(Int64(report.member.incarnation.rawValue))),
            ]
            if case .invalidated(let reason) = report.state { fields.append(("reason", .string(reason.description))) }
            return fields
        case .peerJoined(let info), .peerUnresponsive(let info), .peerResponsive(let info), .clockSynced(let info),
            .peerChanged(let info):
            return [("peer", peerObject(info))]
        case .peerLeft(let info, let reason):
            return [("peer", peerObject(info)), ("reason", .string(reason.rawValue))]
        case .status(let report):
            return [
                ("peer", .string(report.member.id.description)), ("name", .string(report.name)),
                ("session", .string(report.sessionName)), ("state", .string(report.state.name)),
                ("incarnation", .int(Int64(report.member.incarnation.rawValue))),
                ("item", report.item.map { .string($0) } ?? .null), ("rate", .double(report.rate)),
                ("position", .double(report.positionSeconds)),
                ("sampledAtUnixNanos", .int(clock.trueUnixNanos(of: report.sampledAt.wall))),
                ("waiting", .bool(report.isWaiting)),
                ("suspensions", .array(report.suspensions.map { .string($0) })),
                ("interstitial", report.interstitial.map { .string($0) } ?? .null),
                ("peers", .int(Int64(report.peerCount))),
                ("activity", report.activity.map { .object(activityFields($0)) } ?? .null),
                ("player", playerObject(report)), ("counters", countersObject(report.counters, wire: wire)),
                (
                    "relay",
                    wire.relay.map { Self.relayObject($0, refused: report.counters.relayFramesRefused) } ?? .null
                ),
            ]
        case .peers(let infos):
            return [("peers", .array(infos.map(peerObject)))]
        case .help(let usages):
            return [
                (
                    "commands",
                    .array(
                        usages.map {
                            .object([
                                ("name", .string($0.name)), ("usage", .string($0.synopsis)),
                                ("summary", .string($0.summary)), ("example", .string($0.example)),
                                ("details", .string($0.details)),
                            ])
                        })
                )
            ]
        case .commandError(let error):
            return [("message", .string(error.message)), ("usage", .string(error.usage))]
        case .activityChanged(let activity, let originator):
            return activityFields(activity) + [("originator", originatorObject(originator))]
        case .activityUnchanged(let activity):
            return activityFields(activity)
        case .queueChanged(let report):
            return [
                ("change", .string(report.change.kind.rawValue)),
                ("entry", report.change.id.map { .string($0) } ?? .null),
                ("title", report.title.map { .string($0) } ?? .null), ("url", report.url.map { .string($0) } ?? .null),
                ("originator", originatorObject(report.change.originator)),
            ]
        case .interstitial(let report):
            return [
                ("id", .string(report.interstitial.id)), ("url", .string(report.interstitial.url)),
                ("duration", .double(report.interstitial.durationSeconds)), ("item", .string(report.item)),
                ("position", .double(report.position)), ("for", .string(report.forAll ? "all" : "me")),
                ("originator", originatorObject(report.originator)),
                ("cutShort", report.cutShort.map { .string($0) } ?? .null),
            ]
        case .queue(let report):
            return [
                (
                    "items",
                    .array(
                        report.entries.map { entry in
                            .object([
                                ("id", .string(entry.item.id)), ("url", .string(entry.item.url)),
                                ("title", .string(entry.item.title)),
                                ("duration", entry.item.durationSeconds.map { .double($0) } ?? .null),
                                ("addedBy", originatorObject(entry.addedBy)),
                            ])
                        })
                ), ("current", report.current.map { .string($0) } ?? .null),
            ]
        case .stateAdopted(let report):
            return [
                ("from", originatorObject(report.from)), ("commands", .int(Int64(report.commandsCovered))),
                ("winners", .int(Int64(report.winners))), ("snapshot", .string(String(report.snapshot, radix: 16))),
            ]
        case .itemUnloaded(let item, let reason):
            return [("item", .string(item)), ("reason", .string(reason))]
        case .playerError(let text):
            return [("message", .string(text))]
        case .proposal(let report):
            var fields: [(String, JSONValue)] = [
                ("item", .string(report.item)), ("position", .double(Self.rounded(report.position))),
            ]
            switch report.outcome {
            case .held(let remaining):
                fields += [("outcome", .string("held")), ("suspensionsRemaining", .int(Int64(remaining)))]
            case .sent:
                fields.append(("outcome", .string("sent")))
            case .superseded(let by):
                fields += [("outcome", .string("superseded")), ("by", .string(by))]
            }
            return fields
        case .itemChanged(let report):
            var fields: [(String, JSONValue)] = [
                ("item", .string(report.item.id)), ("url", .string(report.item.url)),
                ("source", .string(report.source)),
            ]
            fields.append(("adoptedGroupState", .bool(report.adoptedGroupState)))
            if let duration = report.item.durationSeconds { fields.append(("duration", .double(duration))) }
            fields.append(("buffer", .double(report.item.bufferSeconds)))
            return fields
        case .waiting(let report), .playing(let report), .paused(let report), .timeJumped(let report),
            .rateChanged(let report):
            return [
                ("item", .string(report.item)), ("rate", .double(report.rate)),
                ("position", .double(Self.rounded(report.position))),
                ("reason", .string(report.reason)), ("originator", originatorObject(report.originator)),
                ("command", .string(report.dot.description)),
            ]
        case .commandIgnored(let ignored):
            return [
                ("commandItem", .string(ignored.commandItem)),
                ("currentItem", ignored.currentItem.map { .string($0) } ?? .null),
                ("operation", .string(ignored.operation)), ("originator", originatorObject(ignored.originator)),
                ("command", .string(ignored.dot.description)),
            ]
        case .suspension(let report):
            return [("id", .int(Int64(report.id))), ("reason", .string(report.reason)), ("item", .string(report.item))]
        case .message(let message):
            return [
                ("from", originatorObject(message.from)), ("id", .int(Int64(message.messageID))),
                ("text", .string(message.text)),
                ("reliable", .bool(message.isReliable)), ("recipients", .int(Int64(message.recipientCount))),
            ]
        case .messageSent(let sent):
            return [
                ("id", .int(Int64(sent.messageID))), ("bytes", .int(Int64(sent.bytes))),
                ("parts", .int(Int64(sent.parts))),
                ("reliable", .bool(sent.isReliable)), ("to", .array(sent.recipients.map { .string($0) })),
            ]
        }
    }

    private func activityFields(_ activity: Activity) -> [(String, JSONValue)] {
        [
            ("item", .string(activity.itemID)), ("url", .string(activity.url)), ("title", .string(activity.title)),
            ("subtitle", .string(activity.subtitle)), ("type", .string(activity.type)),
            ("fallbackURL", activity.fallbackURL.isEmpty ? .null : .string(activity.fallbackURL)),
            ("duration", activity.durationSeconds.map { .double($0) } ?? .null), ("live", .bool(activity.live)),
        ]
    }

    private func originatorObject(_ originator: Originator) -> JSONValue {
        .object([
            ("id", .string(originator.member.id.description)), ("name", .string(originator.name)),
            ("local", .bool(originator.isLocal)),
        ])
    }

    private static func rounded(_ seconds: Double) -> Double { (seconds * 1e6).rounded() / 1e6 }

    private func peerObject(_ info: PeerInfo) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", .string(info.member.id.description)), ("name", .string(info.name)),
            ("incarnation", .int(Int64(info.member.incarnation.rawValue))),
            ("address", .string(info.endpoint.description)),
            // How this agent reaches it: over the network, or through the relay (`--relay`).
            ("path", .string(info.endpoint.isRelay ? "relay" : "lan")),
            ("state", .string(info.isSuspected ? "suspected" : "alive")),
            ("lastSeenMillis", .double((info.lastSeenAgo.milliseconds * 1000).rounded() / 1000)),
            ("clockSynced", .bool(info.isClockSynced)), ("item", info.item.map { .string($0) } ?? .null),
            ("waiting", .bool(info.isWaiting)), ("ready", .bool(info.isReady)),
            ("suspensions", .array(info.suspensions.map { .string($0) })),
            // Its multicast is slow or lossy (Wi-Fi): it gets commands by unicast too.
            ("unicastCopies", .bool(info.wantsUnicast)),
        ]
        if let offset = info.offset {
            members += [
                ("offsetNanos", .int(offset.offsetNanos)),
                ("driftPPM", .double((offset.driftPPM * 1000).rounded() / 1000)),
                ("driftErrorPPM", offset.driftErrorPPM.map { .double(($0 * 1000).rounded() / 1000) } ?? .null),
                ("delayNanos", .int(offset.delayNanos)), ("offsetErrorNanos", .int(offset.errorNanos)),
                ("clockSamples", .int(Int64(offset.sampleCount))),
            ]
        } else {
            members += [("offsetNanos", .null)]
        }
        return .object(members)
    }

    /// The relay's connection and counts; `refused` is the core's count of frames that did not
    /// open (`Counters.relayFramesRefused`).
    private static func relayObject(_ relay: RelayStatistics, refused: Int64) -> JSONValue {
        .object([
            ("server", relay.server.map { .string($0) } ?? .null), ("connected", .bool(relay.connected)),
            ("reconnections", .int(Int64(relay.reconnections))),
            ("framesPublished", .int(Int64(relay.framesPublished))),
            ("framesReceived", .int(Int64(relay.framesReceived))), ("framesDropped", .int(Int64(relay.framesDropped))),
            ("framesRefused", .int(Int64(refused))), ("bytesWritten", .int(Int64(relay.bytesWritten))),
            ("bytesRead", .int(Int64(relay.bytesRead))),
        ])
    }

    /// Counts by message type, in the protocol's order of types, by their names on the wire.
    private func byType(_ counts: [MessageType: Int64]) -> JSONValue {
        .object(MessageType.allCases.compactMap { type in counts[type].map { (type.description, .int(Int64($0))) } })
    }

    private func countersObject(_ counters: Counters, wire: WireStatistics) -> JSONValue {
        let drops = DropReason.allCases.compactMap { reason in
            counters.drops[reason].map { (reason.rawValue, JSONValue.int(Int64($0))) }
        }
        return .object([
            ("datagramsReceived", .int(Int64(counters.datagramsReceived))),
            ("datagramsSent", .int(Int64(wire.datagramsSent))),
            ("bytesSent", .int(Int64(wire.bytesSent))), ("sendErrors", .int(Int64(wire.sendErrors))),
            ("receiveQueueDrops", .int(Int64(counters.receiveQueueDrops))),
            ("kernelDrops", .int(Int64(wire.kernelDrops))),
            ("ownEchoes", .int(Int64(counters.ownEchoes))), ("dropped", .int(Int64(counters.dropsTotal))),
            ("drops", .object(drops)), ("receivedByType", byType(counters.receivedByType)),
            ("builtByType", byType(counters.builtByType)), ("commandErrors", .int(Int64(counters.commandErrors))),
            ("commandsDelivered", .int(Int64(counters.commandsDelivered))),
            ("commandsApplied", .int(Int64(counters.commandsApplied))),
            ("commandsSuperseded", .int(Int64(counters.commandsSuperseded))),
            ("duplicateCommands", .int(Int64(counters.duplicateCommands))),
            ("nacksSent", .int(Int64(counters.nacksSent))),
            ("stateRequestsSent", .int(Int64(counters.stateRequestsSent))),
            ("statesSent", .int(Int64(counters.statesSent))), ("statesAdopted", .int(Int64(counters.statesAdopted))),
            ("commandsCoveredByState", .int(Int64(counters.commandsCoveredByState))),
            ("driftCorrections", .int(Int64(counters.driftCorrections))),
            ("playerSamples", .int(Int64(counters.playerSamples))), ("rateNudges", .int(Int64(counters.rateNudges))),
            ("seekCorrections", .int(Int64(counters.seekCorrections))),
        ])
    }

    /// The player's kind and its correction, for `status`.
    private func playerObject(_ report: StatusReport) -> JSONValue {
        .object([
            ("kind", .string(report.playerKind)),
            ("rateNudgePercent", .double(report.correction.nudge * 100)),
            ("samplePosition", report.correction.samplePosition.map { .double($0) } ?? .null),
            (
                "sampleAtUnixNanos",
                report.correction.sampleAt.map { .int(clock.trueUnixNanos(of: $0)) } ?? .null
            ),
            ("sampleErrorMs", report.correction.sampleError.map { .double($0 * 1000) } ?? .null),
            ("lastSeekCorrectionMs", report.correction.lastSeek.map { .double($0 * 1000) } ?? .null),
        ])
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
                "playing \(report.item) rate=\(report.rate) position=\(String(position: report.position)) reason=\(report.reason) by \(Self.who(report.originator))"
            ]
        case .paused(let report):
            return [
                "paused \(report.item) position=\(String(position: report.position)) reason=\(report.reason) by \(Self.who(report.originator))"
            ]
        case .rateChanged(let report):
            return [
                "rate-changed \(report.item) to \(report.rate) reason=\(report.reason) by \(Self.who(report.originator))"
            ]
        case .timeJumped(let report):
            return [
                "time-jumped \(report.item) to \(String(position: report.position)) by \(Self.who(report.originator))"
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
        let copies = info.wantsUnicast ? " unicast-copies" : ""
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

/// The one form of an event outside the core (PROTOCOL.md, "Events"): a JSON object per event, written here
/// once for every shell. `coplay --json` and `coplay ctl --follow` print it (the agent adds
/// `atUnixNanos`, when it printed the line, as the last field); the page's module hands it to the
/// page as is. `"v"` is the schema's version: a field added keeps it, a field renamed or removed
/// or a meaning changed moves it.
public enum EventRecord {
    public static let version = 1

    /// What a shell adds to `status`: what its sockets sent, and the relay's connection.
    public struct Wire: Sendable {
        public var datagramsSent = 0
        public var bytesSent = 0
        public var sendErrors = 0
        /// Datagrams the kernel dropped before they could be read (full receive buffer).
        public var kernelDrops = 0
        /// The relay's connection and counts, with a relay.
        public var relay: RelayStatistics?
        public init() {}
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
        case .interstitial(let report): "interstitial-" + report.phase.rawValue
        }
    }

    /// The event's record without its closing brace, for a shell that appends fields of its own.
    /// `trueUnixNanos` maps the instance's wall clock to the true one (a test's agent may run a
    /// skewed clock); `wire` is what `status` says of the shell's sockets.
    public static func open(
        _ event: Event, wire: Wire = Wire(), trueUnixNanos: (WallInstant) -> Int64 = { $0.unixNanos }
    ) -> JSONObject {
        var json = JSONObject()
        json.int("v", Int64(version))
        json.string("event", name(of: event))
        fields(of: event, into: &json, wire: wire, trueUnixNanos: trueUnixNanos)
        return json
    }

    /// The event's record, whole, as UTF-8: what the page's module hands on.
    public static func bytes(_ event: Event) -> [UInt8] { open(event).closedBytes }

    /// The event's record, whole.
    public static func json(
        _ event: Event, wire: Wire = Wire(), trueUnixNanos: (WallInstant) -> Int64 = { $0.unixNanos }
    ) -> String {
        open(event, wire: wire, trueUnixNanos: trueUnixNanos).closed
    }

    private static func fields(
        of event: Event, into json: inout JSONObject, wire: Wire, trueUnixNanos: (WallInstant) -> Int64
    ) {
        switch event {
        case .session(let report):
            json.string("state", report.state.name)
            json.string("peer", report.member.id.description)
            json.int("incarnation", Int64(report.member.incarnation.rawValue))
            if case .invalidated(let reason) = report.state { json.string("reason", reason.description) }
        case .peerJoined(let info), .peerUnresponsive(let info), .peerResponsive(let info), .clockSynced(let info),
            .peerChanged(let info):
            json.raw("peer", peer(info))
        case .peerLeft(let info, let reason):
            json.raw("peer", peer(info))
            json.string("reason", reason.rawValue)
        case .status(let report):
            json.string("peer", report.member.id.description)
            json.string("name", report.name)
            json.string("session", report.sessionName)
            json.string("state", report.state.name)
            json.int("incarnation", Int64(report.member.incarnation.rawValue))
            json.string("item", report.item)
            json.decimal("rate", report.rate)
            json.decimal("position", report.positionSeconds)
            json.int("sampledAtUnixNanos", trueUnixNanos(report.sampledAt.wall))
            json.bool("waiting", report.isWaiting)
            json.raw("suspensions", strings(report.suspensions))
            json.string("interstitial", report.interstitial)
            json.decimal("liveEdge", report.liveEdge)
            json.int("peers", Int64(report.peerCount))
            json.raw("activity", report.activity.map(activity) ?? "null")
            json.raw("player", player(report, trueUnixNanos: trueUnixNanos))
            json.raw("counters", counters(report.counters, wire: wire))
            json.raw("relay", wire.relay.map { relay($0, report) } ?? "null")
        case .peers(let infos):
            json.raw("peers", JSONObject.array(infos.map(peer)))
        case .help(let usages):
            json.raw(
                "commands",
                JSONObject.array(
                    usages.map {
                        var row = JSONObject()
                        row.string("name", $0.name)
                        row.string("usage", $0.synopsis)
                        row.string("summary", $0.summary)
                        row.string("example", $0.example)
                        row.string("details", $0.details)
                        return row.closed
                    }))
        case .commandError(let error):
            json.string("message", error.message)
            json.string("usage", error.usage)
        case .activityChanged(let value, let originator):
            activityFields(value, into: &json)
            json.object("originator", self.originator(originator))
        case .activityUnchanged(let value):
            activityFields(value, into: &json)
        case .queueChanged(let report):
            json.string("change", report.change.kind.rawValue)
            json.string("entry", report.change.id)
            json.string("title", report.title)
            json.string("url", report.url)
            json.object("originator", originator(report.change.originator))
        case .interstitial(let report):
            json.string("id", report.interstitial.id)
            json.string("url", report.interstitial.url)
            json.decimal("duration", report.interstitial.durationSeconds)
            json.string("item", report.item)
            json.decimal("position", report.position)
            json.string("for", report.forAll ? "all" : "me")
            json.object("originator", originator(report.originator))
            json.string("cutShort", report.cutShort)
        case .queue(let report):
            json.raw(
                "items",
                JSONObject.array(
                    report.entries.map { entry in
                        var row = JSONObject()
                        row.string("id", entry.item.id)
                        row.string("url", entry.item.url)
                        row.string("title", entry.item.title)
                        row.decimal("duration", entry.item.durationSeconds)
                        row.object("addedBy", originator(entry.addedBy))
                        return row.closed
                    }))
            json.string("current", report.current)
        case .stateAdopted(let report):
            json.object("from", originator(report.from))
            json.int("commands", Int64(report.commandsCovered))
            json.int("winners", Int64(report.winners))
            json.string("snapshot", String(report.snapshot, radix: 16))
        case .itemUnloaded(let item, let reason):
            json.string("item", item)
            json.string("reason", reason)
        case .playerError(let text):
            json.string("message", text)
        case .proposal(let report):
            json.string("item", report.item)
            json.decimal("position", report.position)
            switch report.outcome {
            case .held(let remaining):
                json.string("outcome", "held")
                json.int("suspensionsRemaining", Int64(remaining))
            case .sent:
                json.string("outcome", "sent")
            case .superseded(let by):
                json.string("outcome", "superseded")
                json.string("by", by)
            }
        case .itemChanged(let report):
            json.string("item", report.item.id)
            json.string("url", report.item.url)
            json.string("source", report.source)
            json.bool("adoptedGroupState", report.adoptedGroupState)
            if let duration = report.item.durationSeconds { json.decimal("duration", duration) }
            json.decimal("buffer", report.item.bufferSeconds)
        case .waiting(let report), .playing(let report), .paused(let report), .timeJumped(let report),
            .rateChanged(let report):
            json.string("item", report.item)
            json.decimal("rate", report.rate)
            json.decimal("position", report.position)
            json.string("reason", report.reason)
            json.object("originator", originator(report.originator))
            json.string("command", report.dot.description)
            if let edge = report.liveEdge { json.decimal("liveEdge", edge) }
        case .commandIgnored(let ignored):
            json.string("commandItem", ignored.commandItem)
            json.string("currentItem", ignored.currentItem)
            json.string("operation", ignored.operation)
            json.object("originator", originator(ignored.originator))
            json.string("command", ignored.dot.description)
        case .suspension(let report):
            json.int("id", Int64(report.id))
            json.string("reason", report.reason)
            json.string("item", report.item)
        case .message(let message):
            json.object("from", originator(message.from))
            json.int("id", Int64(message.messageID))
            json.string("text", message.text)
            json.bool("reliable", message.isReliable)
            json.int("recipients", Int64(message.recipientCount))
        case .messageSent(let sent):
            json.int("id", Int64(sent.messageID))
            json.int("bytes", Int64(sent.bytes))
            json.int("parts", Int64(sent.parts))
            json.bool("reliable", sent.isReliable)
            json.raw("to", strings(sent.recipients))
        }
    }

    public static func strings(_ values: [String]) -> String { JSONObject.array(values.map { JSONObject.quoted($0) }) }

    private static func activityFields(_ activity: Activity, into json: inout JSONObject) {
        json.string("item", activity.itemID)
        json.string("url", activity.url)
        json.string("title", activity.title)
        json.string("subtitle", activity.subtitle)
        json.string("type", activity.type)
        json.string("fallbackURL", activity.fallbackURL.isEmpty ? nil : activity.fallbackURL)
        json.decimal("duration", activity.durationSeconds)
        json.bool("live", activity.live)
    }

    private static func activity(_ value: Activity) -> String {
        var json = JSONObject()
        activityFields(value, into: &json)
        return json.closed
    }

    /// Who did something: a participant's id, its name, and whether it is this one.
    public static func originator(_ originator: Originator) -> JSONObject {
        var json = JSONObject()
        json.string("id", originator.member.id.description)
        json.string("name", originator.name)
        json.bool("local", originator.isLocal)
        return json
    }

    /// A participant as this one sees it.
    public static func peer(_ info: PeerInfo) -> String {
        var json = JSONObject()
        json.string("id", info.member.id.description)
        json.string("name", info.name)
        json.int("incarnation", Int64(info.member.incarnation.rawValue))
        json.string("kind", info.kind)
        json.string("address", info.endpoint.description)
        // How this participant reaches it: over the network, or through the relay.
        json.string("path", info.endpoint.isRelay ? "relay" : "lan")
        json.string("state", info.isSuspected ? "suspected" : "alive")
        json.decimal("lastSeenMillis", info.lastSeenAgo.milliseconds, decimals: 3)
        json.bool("clockSynced", info.isClockSynced)
        json.string("item", info.item)
        json.bool("waiting", info.isWaiting)
        json.bool("ready", info.isReady)
        json.raw("suspensions", strings(info.suspensions))
        if let copy = info.copy { json.string("copy", copy) }
        // Its multicast is slow or lossy (Wi-Fi): it gets commands by unicast too.
        json.bool("unicastCopies", info.wantsUnicast)
        if let offset = info.offset {
            json.int("offsetNanos", offset.offsetNanos)
            json.decimal("driftPPM", offset.driftPPM, decimals: 3)
            json.decimal("driftErrorPPM", offset.driftErrorPPM, decimals: 3)
            json.int("delayNanos", offset.delayNanos)
            json.int("offsetErrorNanos", offset.errorNanos)
            json.int("clockSamples", Int64(offset.sampleCount))
        } else {
            json.raw("offsetNanos", "null")
        }
        return json.closed
    }

    /// The relay's connection and counts (with the core's count of frames that did not open,
    /// `Counters.relayFramesRefused`), and this agent's part in a party with an audience.
    static func relay(_ relay: RelayStatistics, _ report: StatusReport) -> String {
        var json = JSONObject()
        json.string("server", relay.server)
        json.bool("connected", relay.connected)
        json.int("reconnections", Int64(relay.reconnections))
        json.int("framesPublished", Int64(relay.framesPublished))
        json.int("framesReceived", Int64(relay.framesReceived))
        json.int("framesDropped", Int64(relay.framesDropped))
        json.int("framesRefused", report.counters.relayFramesRefused)
        json.int("bytesWritten", Int64(relay.bytesWritten))
        json.int("bytesRead", Int64(relay.bytesRead))
        // A party with an audience: this agent's role, and at a stage member the viewers it counts.
        var audience = JSONObject()
        audience.string("role", report.audience.isViewer ? "viewer" : "stage")
        audience.bool("speaks", report.audience.speaks)
        audience.int("viewers", Int64(report.audience.viewers))
        audience.number("watching", report.audience.watching.map(Double.init), decimals: 0)
        audience.int("viewersRefused", report.counters.viewersRefused)
        audience.int("commandsCarried", report.counters.commandsCarried)
        audience.int("seatsGranted", report.counters.seatsGranted)
        audience.int("lanIgnored", report.counters.lanIgnoredAsViewer)
        json.raw("audience", audience.closed)
        return json.closed
    }

    /// Counts by message type, in the protocol's order of types, by their names on the wire.
    private static func byType(_ counts: [MessageType: Int64]) -> String {
        var json = JSONObject()
        for type in MessageType.allCases { if let count = counts[type] { json.int(type.description, count) } }
        return json.closed
    }

    private static func counters(_ counters: Counters, wire: Wire) -> String {
        var drops = JSONObject()
        for reason in DropReason.allCases {
            if let count = counters.drops[reason] { drops.int(reason.rawValue, Int64(count)) }
        }
        var json = JSONObject()
        json.int("datagramsReceived", Int64(counters.datagramsReceived))
        json.int("datagramsSent", Int64(wire.datagramsSent))
        json.int("bytesSent", Int64(wire.bytesSent))
        json.int("sendErrors", Int64(wire.sendErrors))
        json.int("receiveQueueDrops", Int64(counters.receiveQueueDrops))
        json.int("kernelDrops", Int64(wire.kernelDrops))
        json.int("ownEchoes", Int64(counters.ownEchoes))
        json.int("dropped", Int64(counters.dropsTotal))
        json.raw("drops", drops.closed)
        json.raw("receivedByType", byType(counters.receivedByType))
        json.raw("builtByType", byType(counters.builtByType))
        json.int("commandErrors", Int64(counters.commandErrors))
        json.int("commandsDelivered", Int64(counters.commandsDelivered))
        json.int("commandsApplied", Int64(counters.commandsApplied))
        json.int("commandsSuperseded", Int64(counters.commandsSuperseded))
        json.int("duplicateCommands", Int64(counters.duplicateCommands))
        json.int("nacksSent", Int64(counters.nacksSent))
        json.int("stateRequestsSent", Int64(counters.stateRequestsSent))
        json.int("statesSent", Int64(counters.statesSent))
        json.int("statesAdopted", Int64(counters.statesAdopted))
        json.int("commandsCoveredByState", Int64(counters.commandsCoveredByState))
        json.int("driftCorrections", Int64(counters.driftCorrections))
        json.int("playerSamples", Int64(counters.playerSamples))
        json.int("rateNudges", Int64(counters.rateNudges))
        json.int("seekCorrections", Int64(counters.seekCorrections))
        return json.closed
    }

    /// The player's kind and its correction, for `status`.
    private static func player(_ report: StatusReport, trueUnixNanos: (WallInstant) -> Int64) -> String {
        var json = JSONObject()
        json.string("kind", report.playerKind)
        json.decimal("rateNudgePercent", report.correction.nudge * 100)
        json.decimal("samplePosition", report.correction.samplePosition)
        if let at = report.correction.sampleAt {
            json.int("sampleAtUnixNanos", trueUnixNanos(at))
        } else {
            json.raw("sampleAtUnixNanos", "null")
        }
        json.decimal("sampleErrorMs", report.correction.sampleError.map { $0 * 1000 })
        json.decimal("lastSeekCorrectionMs", report.correction.lastSeek.map { $0 * 1000 })
        return json.closed
    }
}

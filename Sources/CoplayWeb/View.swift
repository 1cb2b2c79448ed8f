// What the page shows, as JSON the page reads without interpreting the protocol: each event as
// one object (record kind 4), and the view on demand (`coplay_view`, record kind 10): the item,
// this participant's state, who is here and in what state with each one's clock offset and
// error, the queue, and the drift correction in force.

enum EventJSON {
    static func originator(_ json: inout JSONObject, _ originator: Originator) {
        json.string("by", originator.name)
        json.bool("byHere", originator.isLocal)
    }

    static func peer(_ info: PeerInfo) -> String {
        var json = JSONObject()
        json.string("name", info.name)
        json.string("id", hex(info.member.id.rawValue))
        json.string("kind", info.endpoint.port == 9 ? "web" : "agent")
        json.bool("suspected", info.isSuspected)
        json.string("item", info.item)
        json.bool("waiting", info.isWaiting)
        json.bool("ready", info.isReady)
        json.raw("suspensions", JSONObject.array(info.suspensions.map { JSONObject.quoted($0) }))
        json.bool("synced", info.isClockSynced)
        json.number("offsetMs", info.offset.map { Double($0.offsetNanos) / 1e6 })
        json.number("errorMs", info.offset.map { Double($0.errorNanos) / 1e6 })
        json.number("delayMs", info.offset.map { Double($0.delayNanos) / 1e6 })
        return json.closed
    }

    static func hex(_ value: UInt64) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        return String(decoding: (0..<16).map { digits[Int((value >> UInt64(60 - 4 * $0)) & 15)] }, as: UTF8.self)
    }

    static func playback(_ json: inout JSONObject, _ report: PlaybackReport) {
        json.string("item", report.item)
        json.number("position", report.position)
        json.number("rate", report.rate, decimals: 4)
        json.string("reason", report.reason)
        originator(&json, report.originator)
    }

    /// An event as one JSON object: `event` (the agent's event names), then what it concerns.
    static func object(_ event: Event) -> String {
        var json = JSONObject()
        func name(_ text: String) { json.string("event", text) }
        switch event {
        case .session(let report):
            name("session")
            json.string("state", report.state.name)
        case .peerJoined(let info):
            name("peer-joined")
            json.raw("peer", peer(info))
        case .peerLeft(let info, let reason):
            name("peer-left")
            json.raw("peer", peer(info))
            json.string("reason", reason.rawValue)
        case .peerUnresponsive(let info):
            name("peer-unresponsive")
            json.raw("peer", peer(info))
        case .peerResponsive(let info):
            name("peer-responsive")
            json.raw("peer", peer(info))
        case .peerChanged(let info):
            name("peer-changed")
            json.raw("peer", peer(info))
        case .clockSynced(let info):
            name("clock-synced")
            json.raw("peer", peer(info))
        case .commandError(let error):
            name("error")
            json.string("message", error.message)
        case .activityChanged(let activity, let by):
            name("activity")
            json.string("item", activity.itemID)
            json.string("url", activity.url)
            json.string("title", activity.title)
            originator(&json, by)
        case .activityUnchanged(let activity):
            name("activity-unchanged")
            json.string("item", activity.itemID)
        case .itemChanged(let report):
            name("item")
            json.string("item", report.item.id)
            json.string("url", report.item.url)
            json.string("source", report.source)
        case .itemUnloaded(let item, let reason):
            name("item-unloaded")
            json.string("item", item)
            json.string("reason", reason)
        case .playerError(let text):
            name("player-error")
            json.string("message", text)
        case .waiting(let report):
            name("waiting")
            playback(&json, report)
        case .playing(let report):
            name("playing")
            playback(&json, report)
        case .paused(let report):
            name("paused")
            playback(&json, report)
        case .timeJumped(let report):
            name("time-jumped")
            playback(&json, report)
        case .rateChanged(let report):
            name("rate-changed")
            playback(&json, report)
        case .commandIgnored(let ignored):
            name("command-ignored")
            json.string("item", ignored.commandItem)
            json.string("operation", ignored.operation)
            originator(&json, ignored.originator)
        case .suspension(let report):
            name("suspension")
            json.string("reason", report.reason)
            json.bool("began", report.began)
            json.string("item", report.item)
        case .message(let report):
            name("message")
            json.string("text", report.text)
            originator(&json, report.from)
        case .stateAdopted(let report):
            name("state-adopted")
            originator(&json, report.from)
            json.int("commands", Int64(report.commandsCovered))
        case .queueChanged(let report):
            name("queue-changed")
            json.string("change", report.change.kind.rawValue)
            json.string("entry", report.change.id)
            json.string("title", report.title)
            originator(&json, report.change.originator)
        case .interstitial(let report):
            name("interstitial")
            json.string("phase", report.phase.rawValue)
            json.string("item", report.item)
            json.string("url", report.interstitial.url)
            originator(&json, report.originator)
        case .proposal(let report):
            name("proposal")
            json.string("item", report.item)
            json.number("position", report.position)
        case .peers(let infos):
            name("peers")
            json.raw("peers", JSONObject.array(infos.map(peer)))
        case .help, .status, .queue, .messageSent: name("answer")
        }
        return json.closed
    }
}

/// The view: what the page draws, read from the instance (nothing changes).
@_cdecl("coplay_view") public func coplayView(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    output.removeAll(keepingCapacity: true)
    guard let participant = participant(handle) else { return 0 }
    let now = timestamp(mono, wall)
    let status = participant.instance.statusReport(now: now)
    var json = JSONObject()
    json.string("name", status.name)
    json.string("id", EventJSON.hex(status.member.id.rawValue))
    json.string("session", status.sessionName)
    json.string("state", status.state.name)
    json.string("item", status.item)
    json.string("url", participant.instance.player.item?.url)
    json.string("title", status.activity?.title)
    json.number("position", status.item == nil ? nil : status.positionSeconds)
    json.number("duration", participant.instance.player.item?.durationSeconds)
    json.number("rate", status.rate, decimals: 4)
    json.bool("waiting", status.isWaiting)
    json.raw("suspensions", JSONObject.array(status.suspensions.map { JSONObject.quoted($0) }))
    json.number("nudgePercent", status.correction.nudge * 100, decimals: 3)
    json.number("errorMs", status.correction.sampleError.map { $0 * 1000 })
    json.raw("peers", JSONObject.array(participant.instance.peerInfos(now: now.monotonic).map(EventJSON.peer)))
    let current = participant.instance.queueCurrent
    json.raw(
        "queue",
        JSONObject.array(
            participant.instance.queueEntries.map { entry in
                var row = JSONObject()
                row.string("id", entry.item.id)
                row.string("title", entry.item.title)
                row.string("url", entry.item.url)
                row.bool("current", entry.item.id == current)
                return row.closed
            }))
    append(10, Array(json.closed.utf8))
    return Int32(output.count)
}

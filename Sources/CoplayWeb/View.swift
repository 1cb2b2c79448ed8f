// What the page shows, as JSON the page reads without interpreting the protocol: each event as
// the core's record (`EventRecord`, PROTOCOL.md, "Events": the same as `coplay --json` prints; record kind
// 4), and the view on demand (`coplay_view`, record kind 10): the item, this participant's
// state, who is here and in what state (each as the records' `peer`), the queue, and the drift
// correction in force.

/// The view: what the page draws, read from the instance (nothing changes).
@_cdecl("coplay_view") public func coplayView(_ handle: Int32, _ mono: Int64, _ wall: Int64) -> Int32 {
    output.removeAll(keepingCapacity: true)
    guard let participant = participant(handle) else { return 0 }
    let now = timestamp(mono, wall)
    let status = participant.instance.statusReport(now: now)
    var json = JSONObject()
    json.int("v", Int64(EventRecord.version))
    json.string("name", status.name)
    json.string("id", status.member.id.description)
    json.string("session", status.sessionName)
    json.string("state", status.state.name)
    json.string("item", status.item)
    json.string("url", participant.instance.player.item?.url)
    json.string("title", status.activity?.title)
    json.number("position", status.item == nil ? nil : status.positionSeconds)
    // The current item's length; with none loaded (no copy of it here), the group's activity's,
    // which a tab's own copy or another encode is compared with.
    json.number("duration", participant.instance.player.item?.durationSeconds ?? status.activity?.durationSeconds)
    json.number("rate", status.rate, decimals: 4)
    json.bool("waiting", status.isWaiting)
    json.raw("suspensions", EventRecord.strings(status.suspensions))
    json.number("nudgePercent", status.correction.nudge * 100, decimals: 3)
    json.number("errorMs", status.correction.sampleError.map { $0 * 1000 })
    json.raw("peers", JSONObject.array(participant.instance.peerInfos(now: now.monotonic).map(EventRecord.peer)))
    // A party's audience, as the stage's summaries count it (null off the relay, or not heard yet).
    json.number("watching", participant.instance.watching.map(Double.init), decimals: 0)
    if let follower = participant.follower {
        // How the page's player is steered: by its rate, or by skips (the rate found not to steer,
        // or forced), and how many skips it has made.
        var steering = JSONObject()
        steering.string("mode", follower.steersBySkips ? "skip" : "rate")
        steering.int("skips", Int64(follower.skipCount))
        steering.number("seekCostMs", follower.learnedSeekCost * 1000, decimals: 1)
        json.raw("steering", steering.closed)
    }
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

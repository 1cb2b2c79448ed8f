/// The group's queue (`SharedQueue`): the commands typed here become queue commands, which go
/// through `Ordering` like every group command; delivered, they change the queue, and an
/// `advance` also moves `Playback` to the entry's item.
extension Instance {
    static let queueUsage = ConsoleCommand.usages.first { $0.name == "queue" }!.synopsis

    mutating func onQueueCommand(_ request: ConsoleCommand.QueueRequest, now: Timestamp, into out: inout [Directive]) {
        if case .show = request {
            out.append(.emit(.queue(queueReport)))
            return
        }
        guard state.isJoined else {
            return out.append(commandError("not joined (state \(state.name))", usage: "join"))
        }
        func fail(_ message: String) { out.append(commandError(message, usage: Self.queueUsage)) }
        switch request {
        case .show:
            return
        case .add(let url, let id, let title, let duration, let after):
            guard queue.count < settings.queueEntriesMax else {
                return fail("the queue is full (\(settings.queueEntriesMax) entries): remove some first")
            }
            let entryID = id ?? newEntryID()
            guard queue.entry(entryID) == nil else { return fail("an entry '\(entryID)' is in the queue already") }
            guard let position = queuePosition(after, moving: nil) else {
                return fail(queuePlacementProblem(after))
            }
            let item = QueueItem(id: entryID, url: url, title: title, durationSeconds: duration)
            guard queue.byteCount + SharedQueue.bytes(of: item, at: position) <= settings.queueBytesMax else {
                return fail("the queue is full (\(settings.queueBytesMax / 1000) KB of entries): remove some first")
            }
            // The first entry of an empty queue, when nothing is watched, becomes the group's
            // activity, as `share`. Only of an empty one: an add that arrived here without its
            // adder's advance (a separate datagram, still on its way) is already the first, and
            // a second advance, ordered after that one, would skip it.
            let first = queue.count == 0 && queue.currentID == nil && playback.activity == nil
            issue(
                Command(item: QueueChange.itemMarker, operation: .queue(.add(item, at: position))), now: now, into: &out
            )
            if first {
                issue(
                    Command(
                        item: item.id,
                        operation: .queue(.advance(from: nil, to: item, rate: 0, requestedAt: now.wall))),
                    now: now, into: &out)
            }
        case .remove(let id):
            guard let entry = queue.entry(id) else { return fail("no entry '\(id)' in the queue") }
            issue(
                Command(item: QueueChange.itemMarker, operation: .queue(.remove(id: id, added: entry.added))), now: now,
                into: &out)
        case .move(let id, let after):
            guard queue.entry(id) != nil else { return fail("no entry '\(id)' in the queue") }
            if case .after(let anchor) = after, anchor == id { return fail("an entry cannot go after itself") }
            guard let position = queuePosition(after, moving: id) else { return fail(queuePlacementProblem(after)) }
            issue(
                Command(item: QueueChange.itemMarker, operation: .queue(.move(id: id, to: position))), now: now,
                into: &out)
        case .clear:
            // What this agent sees, by origin (a vector clock of at most 48 entries a command).
            var covering: [Member: UInt32] = [:]
            for entry in queue.ordered {
                covering[entry.added.origin] = max(covering[entry.added.origin] ?? 0, entry.added.counter)
            }
            guard !covering.isEmpty else { return fail("the queue is empty") }
            let origins = covering.keys.sorted { ($0.id, $0.incarnation) < ($1.id, $1.incarnation) }
            for start in stride(from: 0, to: origins.count, by: WireFormat.vectorClockEntriesMax) {
                let chunk = origins[start..<min(origins.count, start + WireFormat.vectorClockEntriesMax)]
                let clock = VectorClock(Dictionary(uniqueKeysWithValues: chunk.map { ($0, covering[$0]!) }))
                issue(
                    Command(item: QueueChange.itemMarker, operation: .queue(.clear(covering: clock))), now: now,
                    into: &out)
            }
        }
    }

    /// `next` / `previous`: the whole group moves, and plays on if it was playing.
    mutating func onStep(forward: Bool, now: Timestamp, into out: inout [Directive]) {
        guard state.isJoined else {
            return out.append(commandError("not joined (state \(state.name))", usage: "join"))
        }
        let current = queue.currentID
        guard let target = forward ? queue.next(after: current) : queue.previous(before: current) else {
            let usage = forward ? "next" : "previous"
            return out.append(
                commandError(
                    queue.count == 0
                        ? "the queue is empty (queue add <url>)"
                        : "no \(forward ? "next" : "previous") entry in the queue", usage: usage))
        }
        advance(from: current, to: target.item, now: now, into: &out)
    }

    /// The local player reached the end of the item: if the group is on a queue entry and one
    /// follows it, the group moves there — playing, if it was. Players in sync reach the end
    /// together, so one transition is made by one agent: the one of smallest id on the item
    /// advances at once, the others only if no advance came `queueAdvanceStagger` times their
    /// rank later (the first crashed, or its player is behind). Should two advance all the same,
    /// both name the entry they leave and the same next one: one transition.
    mutating func advanceAtEnd(now: Timestamp, into out: inout [Directive]) {
        guard state.isJoined, let current = queue.currentID, playback.player.item?.id == current,
            queueEndAdvanced != current, queue.next(after: current) != nil,
            // The group was playing it, and well into it: an end reported at its start is a
            // player's late word about the previous item, not this one's end.
            case .playing(let rate, _, _)? = playback.items[current]?.timeline, rate > 0,
            let group = playback.items[current]?.timeline.position(at: now.wall),
            group >= min(settings.queueEndPlayedMin, (playback.player.item?.durationSeconds ?? .infinity) / 2)
        else { return }
        // A participant that is suspended (its player stalled, or never got ready) may never
        // reach the end: it takes no turn.
        let rank = membership.peers.values.filter {
            $0.liveness == .alive && $0.item == current && $0.suspensions.isEmpty && $0.member.id < identity.id
        }.count
        queueEndAdvanced = current
        queueEndDue = (current, now.monotonic + settings.queueAdvanceStagger * rank)
        advanceIfDue(now: now, into: &out)
    }

    /// The staggered advance at the end of an entry, when its time comes and the group is still
    /// on that entry.
    mutating func advanceIfDue(now: Timestamp, into out: inout [Directive]) {
        guard let (entry, due) = queueEndDue, now.monotonic >= due else { return }
        queueEndDue = nil
        guard state.isJoined, queue.currentID == entry, let next = queue.next(after: entry) else { return }
        advance(from: entry, to: next.item, now: now, into: &out)
    }

    private mutating func advance(
        from current: String?, to item: QueueItem, now: Timestamp, into out: inout [Directive]
    ) {
        // The group plays on if it was playing: the current entry's item, or, from an item shared
        // outside the queue, that one.
        let playing = current ?? playback.sharedActivity?.itemID
        let rate = playing.flatMap { playback.items[$0]?.timeline.rate } ?? 0
        issue(
            Command(
                item: item.id, operation: .queue(.advance(from: current, to: item, rate: rate, requestedAt: now.wall))),
            now: now, into: &out)
    }

    /// Where an entry placed `after` goes, between its neighbours (`moving` is left out of them).
    private mutating func queuePosition(_ after: ConsoleCommand.QueueAnchor, moving: String?) -> QueuePosition? {
        guard let (low, high) = queue.neighbours(of: after, moving: moving) else { return nil }
        let counter = UInt32(truncatingIfNeeded: ordering.log.lamport &+ 1)
        return QueuePosition.between(low, high, site: identity.id.rawValue, counter: counter, random: &random)
    }

    private func queuePlacementProblem(_ after: ConsoleCommand.QueueAnchor) -> String {
        if case .after(let id) = after, queue.entry(id) == nil { return "no entry '\(id)' in the queue to go after" }
        return "no room left at that spot (many entries were placed there): remove and add again elsewhere"
    }

    /// An id for an entry added without one: this agent's id, incarnation and a count.
    private mutating func newEntryID() -> String {
        queueAddsIssued += 1
        return "\(identity.id.description.prefix(6))-\(lifecycle.incarnation.rawValue % 100_000)-\(queueAddsIssued)"
    }

    var queueReport: QueueReport {
        QueueReport(
            entries: queue.ordered.map {
                QueueReport.Entry(
                    item: $0.item,
                    addedBy: membership.originator($0.added.origin, local: member, localName: identity.name))
            }, current: queue.currentID)
    }

    mutating func routeQueue(_ outputs: [SharedQueue.Output], into out: inout [Directive]) {
        for output in outputs {
            switch output {
            case .changed(let change):
                let item = change.id.flatMap { queue.entry($0)?.item }
                out.append(.emit(.queueChanged(QueueChangeReport(change: change, title: item?.title, url: item?.url))))
            case .count(let tally): counters.add(tally)
            }
        }
    }
}

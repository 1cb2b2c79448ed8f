/// The queue's controller: the console's queue commands (add, remove, move, clear), `next` and
/// `previous`, and the staggered move to the next entry at an entry's end, with the state they
/// need, beside the replicated queue itself (`SharedQueue`, which knows nothing of the
/// console). Its outputs are group commands (the router issues them through `Ordering`), a
/// person's errors and events; delivered, a queue command comes back through `apply`.
struct QueueController: Sendable {
    enum Output: Hashable, Sendable {
        /// A group command to issue.
        case issue(Command)
        /// The typed command cannot be done: why, and its usage.
        case refuse(String, usage: String)
        case emit(Event)
        case count(Counters.Tally)
    }

    static let usage = ConsoleCommand.usages.first { $0.name == "queue" }!.synopsis

    @inline(__always) private var settings: Settings { sharedSettings.value }
    private let sharedSettings: SharedSettings
    private(set) var queue: SharedQueue
    /// Adds typed here, for the ids of entries added without one.
    private var addsIssued = 0
    /// The entry whose end this agent already moved on from (a player may say so twice).
    private var endAdvanced: String?
    /// A move at an entry's end waiting for its turn (`Stagger`).
    private(set) var endDue: (entry: String, due: MonotonicInstant)?

    init(settings: Settings) {
        sharedSettings = SharedSettings(settings)
        queue = SharedQueue(entriesMax: settings.queueEntriesMax * 2)
    }

    /// A new incarnation: an empty queue until the group's reaches it.
    mutating func reset() {
        queue.reset()
        (endAdvanced, endDue) = (nil, nil)
    }

    // MARK: Typed commands

    /// A typed `queue`, `next` or `previous` (any other command is not the queue's).
    mutating func onCommand(
        _ command: ConsoleCommand, _ context: PlaybackContext, playback: Playback, lamport: UInt64,
        random: inout SplitMix64
    ) -> [Output] {
        switch command {
        case .queue(let request): onRequest(request, context, playback: playback, lamport: lamport, random: &random)
        case .next, .previous: onStep(forward: command == .next, context, playback: playback)
        default: []
        }
    }

    /// A `queue` command. `lamport` is the log's clock (a new position's counter), `random` the
    /// instance's generator (a position's tie-breaker).
    mutating func onRequest(
        _ request: ConsoleCommand.QueueRequest, _ context: PlaybackContext, playback: Playback, lamport: UInt64,
        random: inout SplitMix64
    ) -> [Output] {
        if case .show = request { return [.emit(.queue(report(context)))] }
        guard context.state.isJoined else { return [notJoined(context)] }
        func refuse(_ message: String) -> [Output] { [.refuse(message, usage: Self.usage)] }
        func position(_ after: QueueAnchor, moving: String?) -> QueuePosition? {
            guard let (low, high) = queue.neighbours(of: after, moving: moving) else { return nil }
            let counter = UInt32(truncatingIfNeeded: lamport &+ 1)
            return QueuePosition.between(low, high, site: context.member.id.rawValue, counter: counter, random: &random)
        }
        switch request {
        case .show:
            return []
        case .add(let url, let id, let title, let duration, let after):
            guard queue.count < settings.queueEntriesMax else {
                return refuse("the queue is full (\(settings.queueEntriesMax) entries): remove some first")
            }
            let entryID = id ?? newEntryID(context.member)
            guard queue.entry(entryID) == nil else { return refuse("an entry '\(entryID)' is in the queue already") }
            guard let at = position(after, moving: nil) else { return refuse(placementProblem(after)) }
            let item = QueueItem(id: entryID, url: url, title: title, durationSeconds: duration)
            guard queue.byteCount + SharedQueue.bytes(of: item, at: at) <= settings.queueBytesMax else {
                return refuse("the queue is full (\(settings.queueBytesMax / 1000) KB of entries): remove some first")
            }
            // The first entry of an empty queue, when nothing is watched, becomes the group's
            // activity, as `share`. Only of an empty one: an add that arrived here without its
            // adder's advance (a separate datagram, still on its way) is already the first, and
            // a second advance, ordered after that one, would skip it.
            let first = queue.count == 0 && queue.currentID == nil && playback.activity == nil
            let add = Output.issue(Command(item: QueueChange.itemMarker, operation: .queue(.add(item, at: at))))
            guard first else { return [add] }
            return [add, advance(from: nil, to: item, context, playback: playback)]
        case .remove(let id):
            guard let entry = queue.entry(id) else { return refuse("no entry '\(id)' in the queue") }
            return [
                .issue(Command(item: QueueChange.itemMarker, operation: .queue(.remove(id: id, added: entry.added))))
            ]
        case .move(let id, let after):
            guard queue.entry(id) != nil else { return refuse("no entry '\(id)' in the queue") }
            if case .after(let anchor) = after, anchor == id { return refuse("an entry cannot go after itself") }
            guard let at = position(after, moving: id) else { return refuse(placementProblem(after)) }
            return [.issue(Command(item: QueueChange.itemMarker, operation: .queue(.move(id: id, to: at))))]
        case .clear:
            // What this agent sees, by origin (a vector clock of at most 48 entries a command).
            var covering: [Member: UInt32] = [:]
            for entry in queue.ordered {
                covering[entry.added.origin] = max(covering[entry.added.origin] ?? 0, entry.added.counter)
            }
            guard !covering.isEmpty else { return refuse("the queue is empty") }
            let origins = covering.keys.ordered { ($0.id, $0.incarnation) < ($1.id, $1.incarnation) }
            return stride(from: 0, to: origins.count, by: WireFormat.vectorClockEntriesMax).map { start in
                let chunk = origins[start..<min(origins.count, start + WireFormat.vectorClockEntriesMax)]
                let clock = VectorClock(Dictionary(uniqueKeysWithValues: chunk.map { ($0, covering[$0]!) }))
                return .issue(Command(item: QueueChange.itemMarker, operation: .queue(.clear(covering: clock))))
            }
        }
    }

    /// `next` / `previous`: the whole group moves, and plays on if it was playing.
    func onStep(forward: Bool, _ context: PlaybackContext, playback: Playback) -> [Output] {
        guard context.state.isJoined else { return [notJoined(context)] }
        let current = queue.currentID
        guard let target = forward ? queue.next(after: current) : queue.previous(before: current) else {
            let problem =
                queue.count == 0
                ? "the queue is empty (queue add <url>)" : "no \(forward ? "next" : "previous") entry in the queue"
            return [.refuse(problem, usage: forward ? "next" : "previous")]
        }
        return [advance(from: current, to: target.item, context, playback: playback)]
    }

    // MARK: The end of an entry

    /// The local player reached the end of the item: if the group is on a queue entry and one
    /// follows it, the group moves there, playing if it was. Players in sync reach the end
    /// together, so one move is made by one agent (`Stagger`); should two make it all the same,
    /// both name the entry they leave and the same next one: one move.
    mutating func onEnded(_ context: PlaybackContext, playback: Playback) -> [Output] {
        guard context.state.isJoined, let current = queue.currentID, playback.player.item?.id == current,
            endAdvanced != current, queue.next(after: current) != nil,
            // The group was playing it, and well into it: an end reported at its start is a
            // player's late word about the previous item, not this one's end.
            case .playing(let rate, _, _)? = playback.items[current]?.timeline, rate > 0,
            let group = playback.items[current]?.timeline.position(at: context.now.wall),
            group >= min(settings.queueEndPlayedMin, (playback.player.item?.durationSeconds ?? .infinity) / 2)
        else { return [] }
        let rank = Stagger.rank(of: context.member.id, on: current, among: context.peers)
        endAdvanced = current
        endDue = (current, context.now.monotonic + settings.queueAdvanceStagger * rank)
        return tick(context, playback: playback)
    }

    /// The staggered move at the end of an entry, when its turn comes and the group is still on
    /// that entry.
    mutating func tick(_ context: PlaybackContext, playback: Playback) -> [Output] {
        guard let (entry, due) = endDue, context.now.monotonic >= due else { return [] }
        endDue = nil
        guard context.state.isJoined, queue.currentID == entry, let next = queue.next(after: entry) else { return [] }
        return [advance(from: entry, to: next.item, context, playback: playback)]
    }

    // MARK: Delivered commands

    /// A snapshot's queue commands, taken in as the queue stands and not reported: its history is
    /// not news (so nobody is named as having made it).
    mutating func adopt(_ winners: [Ordering.Delivered]) {
        for winner in winners where winner.envelope.command.operation.isQueue {
            let origin = winner.envelope.dot.origin
            _ = queue.apply(winner.envelope, originator: Originator(member: origin, name: "", isLocal: false))
        }
    }

    /// A delivered queue command.
    mutating func apply(_ envelope: CommandEnvelope, originator: Originator) -> [Output] {
        let outputs = queue.apply(envelope, originator: originator)
        return outputs.map { output in
            switch output {
            case .changed(let change):
                let item = change.id.flatMap { queue.entry($0)?.item }
                return .emit(.queueChanged(QueueChangeReport(change: change, title: item?.title, url: item?.url)))
            case .count(let tally):
                return .count(tally)
            }
        }
    }

    /// The queue as `queue` prints it.
    func report(_ context: PlaybackContext) -> QueueReport {
        QueueReport(
            entries: queue.ordered.map {
                QueueReport.Entry(item: $0.item, addedBy: context.originator($0.added.origin))
            }, current: queue.currentID)
    }

    // MARK: Helpers

    /// The group's move to `item`: playing on if the group was playing the entry it leaves, or,
    /// from an item shared outside the queue, that one.
    private func advance(from current: String?, to item: QueueItem, _ context: PlaybackContext, playback: Playback)
        -> Output
    {
        let playing = current ?? playback.sharedActivity?.itemID
        let rate = playing.flatMap { playback.items[$0]?.timeline.rate } ?? 0
        return .issue(
            Command(
                item: item.id,
                operation: .queue(.advance(from: current, to: item, rate: rate, requestedAt: context.now.wall))))
    }

    private func notJoined(_ context: PlaybackContext) -> Output {
        .refuse("not joined (state \(context.state.name))", usage: "join")
    }

    private func placementProblem(_ after: QueueAnchor) -> String {
        if case .after(let id) = after, queue.entry(id) == nil { return "no entry '\(id)' in the queue to go after" }
        return "no room left at that spot (many entries were placed there): remove and add again elsewhere"
    }

    /// An id for an entry added without one: this agent's id, incarnation and a count.
    private mutating func newEntryID(_ member: Member) -> String {
        addsIssued += 1
        return "\(member.id.description.prefix(6))-\(member.incarnation.rawValue % 100_000)-\(addsIssued)"
    }
}

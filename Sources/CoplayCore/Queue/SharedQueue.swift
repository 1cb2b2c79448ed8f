/// An item in the group's queue, as it travels in a `queue add`.
public struct QueueItem: Hashable, Sendable {
    /// The entry's id, unique in the queue: given by whoever added it (`id=`), else made from
    /// its adder's id and the add's number. It is also the item id of the activity it becomes.
    public var id: String
    public var url: String
    public var title: String
    /// Its length in seconds, if the adder gave it (as `share`'s `duration=`).
    public var durationSeconds: Double?

    public init(id: String, url: String, title: String = "", durationSeconds: Double? = nil) {
        self.id = id
        self.url = url
        self.title = title
        self.durationSeconds = durationSeconds
    }

    /// The activity it becomes when the group moves to it.
    public var activity: Activity {
        Activity(url: url, itemID: id, title: title, durationSeconds: durationSeconds)
    }
}

/// Where an entry goes: at the start, at the end, or after an entry.
public enum QueueAnchor: Hashable, Sendable {
    case first, last
    case after(String)
}

/// What a queue command does.
public enum QueueOperation: Hashable, Sendable {
    /// Adds `item` at `position`.
    case add(QueueItem, at: QueuePosition)
    /// Removes the entry `id` that the add `added` made (a concurrent add under the same id stays).
    case remove(id: String, added: Dot)
    /// Moves the entry `id` to `position`. A move of an entry that is gone does nothing: remove
    /// beats a concurrent move.
    case move(id: String, to: QueuePosition)
    /// Removes every entry whose add is covered by `covering` (the entries its issuer saw;
    /// entries added concurrently stay).
    case clear(covering: VectorClock)
    /// The group moves from the entry `from` (nil: none) to the entry `to` — the item `to` holds
    /// becomes the activity, paused at its start — and, with `rate` > 0, starts playing it
    /// together from there: a coordinated start as `play`'s, requested at `requestedAt`.
    case advance(from: String?, to: QueueItem, rate: Double, requestedAt: WallInstant)
    /// In a snapshot only: an entry as it stands (its item, its position, the add that made it).
    case placed(QueueItem, at: QueuePosition, added: Dot)

    public var name: String {
        switch self {
        case .add: "queue-add"
        case .remove: "queue-remove"
        case .move: "queue-move"
        case .clear: "queue-clear"
        case .advance: "advance"
        case .placed: "queue-entry"
        }
    }
}

/// One entry of the queue as it stands.
public struct QueueEntry: Hashable, Sendable {
    public var item: QueueItem
    public var position: QueuePosition
    /// The add that made it.
    public var added: Dot
    /// The command that put it where it is (its add, or its last move): a concurrent move that
    /// orders after it wins.
    var placedBy: CommandEnvelope.OrderKey
    /// That command's dot (a snapshot carries the entry with it).
    var placedDot: Dot
    var placedLamport: UInt64
}

/// The group's queue: a replicated sequence whose entries stand at dense positions
/// (`QueuePosition`), changed by group commands delivered in causal order. Every operation
/// commutes with its concurrent ones, so every agent that delivered the same commands holds the
/// same queue, whatever order concurrent ones came in:
/// - adds at one spot are ordered by their positions, which differ by their makers;
/// - concurrent moves of one entry: the one that orders last (Lamport, then origin) wins;
/// - a remove names the add it removes, a clear the adds it covers: an entry added concurrently
///   stays; a move of an entry that is gone does nothing, so remove beats a concurrent move;
/// - the current entry is a last-writer-wins register set by `advance`, so two agents that reach
///   the end of an item at once, each advancing to the same next entry, make one transition.
///
/// It keeps only live entries (at most `Settings.queueEntriesMax`): a snapshot of it is
/// O(live entries), not O(history).
public struct SharedQueue: Sendable {
    public enum Output: Hashable, Sendable {
        /// The queue changed: what happened, by whom (a `queue-changed` event).
        case changed(QueueChange)
        case count(Counters.Tally)
    }

    private(set) var entries: [String: QueueEntry] = [:]
    /// The advance in force: the entry the group is on.
    private(set) var current: CommandEnvelope?
    let entriesMax: Int

    public init(entriesMax: Int) { self.entriesMax = entriesMax }

    /// The live entries in queue order.
    public var ordered: [QueueEntry] { entries.values.ordered { Self.precedes($0, $1) } }

    /// Queue order: by position; entries at one position (adds of one id by two members) by
    /// their adders, then their ids.
    static func precedes(_ a: QueueEntry, _ b: QueueEntry) -> Bool {
        if a.position != b.position { return a.position < b.position }
        return (a.added.origin.id, a.item.id) < (b.added.origin.id, b.item.id)
    }

    /// The positions an entry placed at `anchor` goes between (`moving`, the entry moved, left
    /// out of them): nil for an anchor that is not in the queue. One pass, no sort: an add to a
    /// queue of n entries costs O(n).
    func neighbours(of anchor: QueueAnchor, moving: String?) -> (QueuePosition?, QueuePosition?)? {
        var first: QueueEntry?
        var last: QueueEntry?
        var after: QueueEntry?
        let target: QueueEntry?
        if case .after(let id) = anchor {
            guard let entry = entries[id], id != moving else { return nil }
            target = entry
        } else {
            target = nil
        }
        for entry in entries.values where entry.item.id != moving {
            if first.map({ Self.precedes(entry, $0) }) ?? true { first = entry }
            if last.map({ Self.precedes($0, entry) }) ?? true { last = entry }
            if let target, Self.precedes(target, entry), after.map({ Self.precedes(entry, $0) }) ?? true {
                after = entry
            }
        }
        switch anchor {
        case .first: return (nil, first?.position)
        case .last: return (last?.position, nil)
        case .after: return (target?.position, after?.position)
        }
    }

    /// The entry the group is on (its id; it may have been removed since).
    public var currentID: String? {
        guard case .queue(.advance(_, let item, _, _))? = current?.command.operation else { return nil }
        return item.id
    }

    public var count: Int { entries.count }

    /// The entries' size on the wire, in all (`Settings.queueBytesMax`).
    public var byteCount: Int {
        entries.values.reduce(0) { total, entry in total + Self.bytes(of: entry.item, at: entry.position) }
    }

    /// An entry's size on the wire, as a snapshot carries it: its item's fields, its position,
    /// and the command's fixed part (dot, Lamport, item marker, code, the add's dot).
    public static func bytes(of item: QueueItem, at position: QueuePosition) -> Int {
        item.id.utf8.count + item.url.utf8.count + item.title.utf8.count + 14 * position.identifiers.count + 70
    }

    public func entry(_ id: String) -> QueueEntry? { entries[id] }

    /// The entry after `id` (after the current one, with nil), or the first when the group is on
    /// none. After an entry that was removed, the first after where it stood, else the first
    /// of the queue (a queue cleared and filled again starts from its start).
    public func next(after id: String?) -> QueueEntry? {
        let list = ordered
        guard let id else { return list.first }
        if let index = list.firstIndex(where: { $0.item.id == id }) {
            return index + 1 < list.count ? list[index + 1] : nil
        }
        guard let position = currentPosition(of: id) else { return list.first }
        return list.first { $0.position > position } ?? list.first
    }

    /// The entry before `id`.
    public func previous(before id: String?) -> QueueEntry? {
        let list = ordered
        guard let id else { return nil }
        if let index = list.firstIndex(where: { $0.item.id == id }) { return index > 0 ? list[index - 1] : nil }
        guard let position = currentPosition(of: id) else { return nil }
        return list.last { $0.position < position }
    }

    /// Where the current entry stood, remembered from the advance to it.
    private var standing: (id: String, position: QueuePosition)?

    private func currentPosition(of id: String) -> QueuePosition? { standing?.id == id ? standing?.position : nil }

    /// A delivered queue command. Idempotent: a command delivered again changes nothing.
    mutating func apply(_ envelope: CommandEnvelope, originator: Originator) -> [Output] {
        guard case .queue(let operation) = envelope.command.operation else { return [] }
        let key = envelope.orderKey
        switch operation {
        case .add(let item, let position):
            return place(item, at: position, added: envelope.dot, by: envelope, change: .added, originator: originator)
        case .placed(let item, let position, let added):
            return place(item, at: position, added: added, by: envelope, change: nil, originator: originator)
        case .remove(let id, let added):
            guard let entry = entries[id], entry.added == added else { return [] }
            entries[id] = nil
            return [.changed(QueueChange(kind: .removed, id: id, originator: originator, dot: envelope.dot))]
        case .move(let id, let position):
            guard var entry = entries[id], key > entry.placedBy else { return [] }
            entry.position = position
            (entry.placedBy, entry.placedDot, entry.placedLamport) = (key, envelope.dot, envelope.lamport)
            entries[id] = entry
            return [.changed(QueueChange(kind: .moved, id: id, originator: originator, dot: envelope.dot))]
        case .clear(let covering):
            let gone = entries.values.filter { covering[$0.added.origin] >= $0.added.counter }.map({ $0.item.id })
            guard !gone.isEmpty else { return [] }
            for id in gone { entries[id] = nil }
            return [.changed(QueueChange(kind: .cleared, id: nil, originator: originator, dot: envelope.dot))]
        case .advance(_, let item, _, _):
            guard current.map({ key > $0.orderKey }) ?? true else { return [] }
            current = envelope
            if let entry = entries[item.id] { standing = (item.id, entry.position) }
            return [.changed(QueueChange(kind: .advanced, id: item.id, originator: originator, dot: envelope.dot))]
        }
    }

    private mutating func place(
        _ item: QueueItem, at position: QueuePosition, added: Dot, by envelope: CommandEnvelope,
        change: QueueChange.Kind?, originator: Originator
    ) -> [Output] {
        let key = envelope.orderKey
        if let existing = entries[item.id] {
            // The same add again (from a snapshot: where it stands now, if that is newer), or
            // another add under the same id: the one ordered last stands.
            guard key > existing.placedBy else { return [] }
            if existing.added == added {
                entries[item.id]?.position = position
                (entries[item.id]!.placedBy, entries[item.id]!.placedDot, entries[item.id]!.placedLamport) = (
                    key, envelope.dot, envelope.lamport
                )
                return []
            }
        } else if entries.count >= entriesMax {
            return [.count(.queueAddsRefused)]
        }
        entries[item.id] = QueueEntry(
            item: item, position: position, added: added, placedBy: key, placedDot: envelope.dot,
            placedLamport: envelope.lamport)
        guard let change else { return [] }
        return [.changed(QueueChange(kind: change, id: item.id, originator: originator, dot: envelope.dot))]
    }

    /// The queue as snapshot winners: each live entry as it stands, and the advance in force.
    /// Their dots are the commands that placed them, so that what is ordered after them still
    /// wins; the dependencies are left out, as every winner's are.
    var winners: [CommandEnvelope] {
        var winners = entries.values.map { entry in
            CommandEnvelope(
                dot: entry.placedDot, lamport: entry.placedLamport, dependencies: VectorClock(),
                command: Command(
                    item: QueueChange.itemMarker,
                    operation: .queue(.placed(entry.item, at: entry.position, added: entry.added))))
        }
        if let current { winners.append(current) }
        return winners
    }

    /// `others` and then the queue's winners not among them (the advance in force is also the
    /// activity among playback's).
    func winners(besides others: [CommandEnvelope]) -> [CommandEnvelope] {
        var (all, dots) = (others, Set(others.map({ $0.dot })))
        for winner in winners where dots.insert(winner.dot).inserted { all.append(winner) }
        return all
    }

    mutating func reset() {
        entries = [:]
        current = nil
        standing = nil
    }
}

/// A change to the queue, reported once by every agent (`queue-changed`).
public struct QueueChange: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable {
        case added, removed, moved, cleared, advanced
    }
    public var kind: Kind
    /// The entry concerned (none for a clear).
    public var id: String?
    public var originator: Originator
    public var dot: Dot

    /// The item field of queue commands other than `advance` (they belong to no item).
    public static let itemMarker = "-queue"
}

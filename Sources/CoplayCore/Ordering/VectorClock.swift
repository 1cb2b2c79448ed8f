/// How two vector clocks relate. A vector clock is a partial order, so it is not `Comparable`:
/// two clocks may be concurrent (neither happened before the other).
public enum CausalOrder: Hashable, Sendable {
    /// Every entry ≤ the other's, at least one smaller: happened before.
    case before
    /// Every entry ≥ the other's, at least one larger: happened after.
    case after
    case equal
    /// Some entries larger, some smaller.
    case concurrent
}

/// Counts of commands per membership (id and incarnation). A missing entry counts 0, so the
/// clock holds only memberships that have issued commands, and entries of departed
/// memberships are pruned once stable (see `CausalLog.prune`).
public struct VectorClock: Hashable, Sendable, CustomStringConvertible {
    public private(set) var entries: [Member: UInt32] = [:]

    public init() {}
    public init(_ entries: [Member: UInt32]) { self.entries = entries.filter { $0.value > 0 } }

    public subscript(member: Member) -> UInt32 {
        get { entries[member] ?? 0 }
        set { entries[member] = newValue == 0 ? nil : newValue }
    }

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    /// Entries in a canonical order (by id, then incarnation), as they are encoded.
    public var sorted: [(member: Member, count: UInt32)] {
        entries.map { ($0.key, $0.value) }.ordered {
            ($0.member.id, $0.member.incarnation) < ($1.member.id, $1.member.incarnation)
        }
    }

    public func compare(_ other: VectorClock) -> CausalOrder {
        var smaller = false
        var larger = false
        for member in Set(entries.keys).union(other.entries.keys) {
            let mine = self[member]
            let theirs = other[member]
            if mine < theirs { smaller = true }
            if mine > theirs { larger = true }
            if smaller && larger { return .concurrent }
        }
        switch (smaller, larger) {
        case (false, false): return .equal
        case (true, false): return .before
        case (false, true): return .after
        case (true, true): return .concurrent
        }
    }

    /// The entry-wise maximum.
    public mutating func merge(_ other: VectorClock) {
        for (member, count) in other.entries where count > self[member] { self[member] = count }
    }

    /// Removes an entry (its membership is gone and every live agent has all its commands).
    public mutating func remove(_ member: Member) { entries[member] = nil }

    public var description: String {
        "["
            + sorted.map { "\($0.member.id.description.prefix(6))/\($0.member.incarnation):\($0.count)" }.joined(
                separator: " ") + "]"
    }
}

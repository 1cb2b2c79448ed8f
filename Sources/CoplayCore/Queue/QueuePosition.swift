/// Where an entry stands in the group's queue: a dense, totally ordered identifier in the manner
/// of Logoot (Weiss, Urso and Molli, 2009). A position is a list of identifiers, each a digit
/// with the site (agent) and a counter that made it, compared as tuples; lists compare in
/// lexicographic order, a proper prefix first. Between any two positions another can be made,
/// so an entry is placed between its neighbours without renumbering anyone; two agents placing
/// entries at the same spot at once make different positions (their sites differ), ordered the
/// same way everywhere.
///
/// Unlike RGA, whose inserts name a predecessor that must stay as a tombstone for later inserts
/// to find, a position says where an entry is by itself: the queue keeps only its live entries,
/// and a snapshot of it is O(live entries), not O(history).
public struct QueuePosition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public struct Identifier: Hashable, Sendable, Comparable {
        public var digit: UInt16
        public var site: UInt64
        public var counter: UInt32
        public init(digit: UInt16, site: UInt64, counter: UInt32) {
            self.digit = digit
            self.site = site
            self.counter = counter
        }
        public static func < (left: Self, right: Self) -> Bool {
            (left.digit, left.site, left.counter) < (right.digit, right.site, right.counter)
        }
    }

    public var identifiers: [Identifier]
    public init(_ identifiers: [Identifier]) { self.identifiers = identifiers }

    /// Levels a position may have: 8 identifiers are 112 bytes on the wire. Appending at the
    /// end uses the first level for thousands of entries; only many inserts at one spot go deep.
    public static let depthMax = 8
    /// A new digit is drawn within this distance of one neighbour (LSEQ's boundary strategies).
    static let boundary = 32

    public static func < (left: Self, right: Self) -> Bool {
        for (a, b) in zip(left.identifiers, right.identifiers) where a != b { return a < b }
        return left.identifiers.count < right.identifiers.count
    }

    public var description: String { identifiers.map { "\($0.digit)" }.joined(separator: ".") }

    /// A position strictly between `low` (nil: the queue's start) and `high` (nil: its end),
    /// made by `site` with `counter`, its digits drawn from `random`; nil when it would need more
    /// than `depthMax` levels (after very many inserts at one spot), or when `low` is not below
    /// `high` (two entries that a member placed at one position: nothing fits between them).
    public static func between(
        _ low: QueuePosition?, _ high: QueuePosition?, site: UInt64, counter: UInt32, random: inout SplitMix64
    ) -> QueuePosition? {
        if let low, let high, !(low < high) { return nil }
        let lo = low?.identifiers ?? []
        let hi = high?.identifiers
        var prefix: [Identifier] = []
        // Whether the prefix made so far equals `lo`'s (then `lo` bounds this level from below)
        // and `hi`'s (then `hi` bounds it from above).
        var loActive = true
        var hiActive = hi != nil
        for level in 0..<depthMax {
            let lower = loActive && level < lo.count ? Int(lo[level].digit) : 0
            let upper = hiActive && level < hi!.count ? Int(hi![level].digit) : Int(UInt16.max) + 1
            if upper - lower > 1 {
                // LSEQ's alternation: near the lower neighbour on even levels (room is left above,
                // for appends), near the upper one on odd levels (room is left below, for inserts
                // after one entry again and again). Whatever the pattern of inserts, every other
                // level serves it well.
                let room = min(upper - lower - 1, boundary)
                let step = 1 + Int(random.next() % UInt64(room))
                let digit = level % 2 == 0 ? lower + step : upper - step
                return QueuePosition(prefix + [Identifier(digit: UInt16(digit), site: site, counter: counter)])
            }
            // No digit fits between: go one level deeper, under `lo`'s identifier; when the
            // prefix is already past `lo`, under the smallest identifier there is, which is below
            // `hi`'s here (or equal to it, and `hi` goes deeper: positions end in a digit of 1 or
            // more).
            let identifier: Identifier
            if loActive, level < lo.count {
                identifier = lo[level]
            } else {
                loActive = false
                identifier = Identifier(digit: 0, site: 0, counter: 0)
            }
            prefix.append(identifier)
            if hiActive, level < hi!.count, identifier != hi![level] { hiActive = false }
            if loActive, level + 1 >= lo.count { loActive = false }
        }
        return nil
    }
}

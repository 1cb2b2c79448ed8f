/// The replicated command log of one agent: causal delivery, duplicate suppression, and the
/// store from which it repairs others.
///
/// Delivery rule (CBCAST, Birman et al. 1991): a command with dot (o, c) and dependencies D is
/// delivered once `delivered[o] == c - 1` and `D[k] <= delivered[k]` for every other k. Until
/// then it waits in `pending` (bounded); what it waits for is reported as missing ranges, to be
/// asked for with a nack. Every command is delivered at most once: a dot at or below
/// `delivered[o]` is a duplicate.
public struct CausalLog: Sendable {
    public private(set) var delivered = VectorClock()
    /// The largest Lamport timestamp seen; a new command gets one more.
    public private(set) var lamport: UInt64 = 0
    /// Entries pruned from `delivered` because their origin departed and every live agent had
    /// all its commands: counts are kept here (bounded) so dependencies on them stay satisfied.
    private var pruned: [Member: UInt32] = [:]
    private var prunedOrder: [Member] = []
    private var pending: [Dot: CommandEnvelope] = [:]
    /// Delivered commands kept for repair, oldest first out.
    private var store: [Dot: CommandEnvelope] = [:]
    private var storeOrder: [Dot] = []
    private var storeHead = 0
    private let pendingMax: Int
    private let storeMax: Int
    private let prunedMax: Int

    public init(
        pendingMax: Int = Settings().pendingCommandsMax, storeMax: Int = Settings().storedCommandsMax,
        prunedMax: Int = Settings().prunedOriginsMax
    ) {
        self.pendingMax = pendingMax
        self.storeMax = storeMax
        self.prunedMax = prunedMax
    }

    public init(settings: Settings) {
        self.init(
            pendingMax: settings.pendingCommandsMax, storeMax: settings.storedCommandsMax,
            prunedMax: settings.prunedOriginsMax)
    }

    public var pendingCount: Int { pending.count }
    public var storedCount: Int { store.count }

    /// The envelope the next command from `origin` gets: the next counter, a Lamport timestamp
    /// above everything seen, the current delivered clock as dependencies.
    /// `dependsOn` says which other origins the command may depend on (all, by default): origins
    /// never seen as members are left out, so that a flood of invented origins cannot crowd the
    /// dependencies past what a datagram carries.
    public func next(_ command: Command, by origin: Member, dependsOn: (Member) -> Bool = { _ in true })
        -> CommandEnvelope
    {
        var dependencies = VectorClock()
        for entry in delivered.sorted where entry.member != origin && dependsOn(entry.member) {
            dependencies[entry.member] = entry.count
        }
        return CommandEnvelope(
            dot: Dot(origin: origin, counter: count(of: origin) + 1), lamport: lamport + 1, dependencies: dependencies,
            command: command)
    }

    /// Delivers a command this agent issues (made by `next`).
    public mutating func originate(_ envelope: CommandEnvelope) {
        precondition(
            envelope.dot.counter == count(of: envelope.dot.origin) + 1, "originate(\(envelope.dot)) out of turn")
        deliver(envelope)
    }

    /// What receiving a command did.
    public struct Receipt: Sendable {
        /// Commands newly delivered, in causal order (the received one and any it unblocked).
        public var delivered: [CommandEnvelope] = []
        public var wasDuplicate = false
        /// The pending buffer was full: the command was dropped (it will be asked for again).
        public var wasDropped = false
        /// It waits on more commands of some origin than any agent keeps for repair
        /// (`storeMax`): it could never be delivered, so it was dropped rather than left pending.
        public var wasUnrepairable = false
        /// What is still missing before the pending commands can be delivered.
        public var missing: [MissingRange] = []
    }

    public mutating func receive(_ envelope: CommandEnvelope) -> Receipt {
        var receipt = Receipt()
        let dot = envelope.dot
        if dot.counter <= count(of: dot.origin) || pending[dot] != nil {
            receipt.wasDuplicate = true
            return receipt
        }
        if waitsBeyondRepair(envelope) {
            receipt.wasUnrepairable = true
            return receipt
        }
        if isDeliverable(envelope) {
            deliver(envelope)
            receipt.delivered.append(envelope)
        } else if pending.count < pendingMax {
            pending[dot] = envelope
        } else {
            // Full: drop it (it will be asked for again); a deliverable one never waits here.
            receipt.wasDropped = true
            receipt.missing = missing()
            return receipt
        }
        var progress = true
        while progress {
            progress = false
            for candidate in pending.values.sorted(by: { $0.orderKey < $1.orderKey }) where isDeliverable(candidate) {
                pending[candidate.dot] = nil
                deliver(candidate)
                receipt.delivered.append(candidate)
                progress = true
            }
        }
        receipt.missing = missing()
        return receipt
    }

    /// The ranges the pending commands wait for.
    public func missing() -> [MissingRange] {
        var wanted: [Member: UInt32] = [:]
        for envelope in pending.values {
            wanted[envelope.dot.origin] = max(wanted[envelope.dot.origin] ?? 0, envelope.dot.counter - 1)
            for (member, needed) in envelope.dependencies.entries { wanted[member] = max(wanted[member] ?? 0, needed) }
        }
        return ranges(upTo: wanted)
    }

    /// The ranges another agent has delivered (its digest) and this one has not.
    public func missing(comparedTo digest: VectorClock) -> [MissingRange] {
        ranges(upTo: digest.entries)
    }

    /// Stored commands in `range`, oldest first (those evicted from the store are not there).
    /// The walk covers only counters that can be stored — delivered, and recent enough to have
    /// survived eviction — so a request for billions of counters costs at most `storeMax` steps.
    public func stored(_ range: MissingRange, limit: Int) -> [CommandEnvelope] {
        var found: [CommandEnvelope] = []
        let have = count(of: range.origin)
        guard range.from <= range.to, range.from <= have, limit > 0 else { return [] }
        let oldestKept = have > UInt32(clamping: storeMax) ? have - UInt32(clamping: storeMax) + 1 : 1
        var counter = max(range.from, oldestKept)
        let last = min(range.to, have)
        while counter <= last, found.count < limit {
            if let envelope = store[Dot(origin: range.origin, counter: counter)] { found.append(envelope) }
            if counter == UInt32.max { break }
            counter += 1
        }
        return found
    }

    /// Drops the entry of each `departed` origin whose count every live agent's digest has
    /// reached, and that no pending command still waits on: it can never matter again.
    public mutating func prune(departed: Set<Member>, liveDigests: [VectorClock]) {
        let waitedOn = Set(missing().map(\.origin))
        for member in departed where delivered[member] > 0 && !waitedOn.contains(member) {
            let count = delivered[member]
            guard liveDigests.allSatisfy({ $0[member] >= count }) else { continue }
            delivered.remove(member)
            pruned[member] = count
            prunedOrder.append(member)
            if prunedOrder.count > prunedMax { pruned[prunedOrder.removeFirst()] = nil }
        }
    }

    // MARK: Internals

    /// How many of `member`'s commands have been delivered, whether its entry is in `delivered`
    /// or was pruned.
    public func count(of member: Member) -> UInt32 { max(delivered[member], pruned[member] ?? 0) }

    /// Whether this log has delivered exactly the commands `other` has (pruned entries included).
    public func hasDeliveredTheSame(as other: CausalLog) -> Bool {
        let members = Set(delivered.entries.keys).union(other.delivered.entries.keys)
        return members.allSatisfy { count(of: $0) == other.count(of: $0) }
    }

    /// Whether the command waits on a gap wider than the store any agent repairs from (a forged
    /// counter near 2^32 would otherwise wait, and be asked for, forever).
    private func waitsBeyondRepair(_ envelope: CommandEnvelope) -> Bool {
        let gapMax = UInt64(storeMax)
        if UInt64(envelope.dot.counter) > UInt64(count(of: envelope.dot.origin)) + gapMax + 1 { return true }
        return envelope.dependencies.entries.contains { member, needed in
            UInt64(needed) > UInt64(count(of: member)) + gapMax
        }
    }

    private func isDeliverable(_ envelope: CommandEnvelope) -> Bool {
        guard envelope.dot.counter == count(of: envelope.dot.origin) + 1 else { return false }
        return envelope.dependencies.entries.allSatisfy { member, needed in
            member == envelope.dot.origin || count(of: member) >= needed
        }
    }

    private mutating func deliver(_ envelope: CommandEnvelope) {
        // An origin that was pruned and speaks again (a healed partition) is tracked again.
        if pruned.removeValue(forKey: envelope.dot.origin) != nil {
            prunedOrder.removeAll { $0 == envelope.dot.origin }
        }
        delivered[envelope.dot.origin] = envelope.dot.counter
        lamport = max(lamport, envelope.lamport)
        store[envelope.dot] = envelope
        storeOrder.append(envelope.dot)
        while store.count > storeMax {
            store[storeOrder[storeHead]] = nil
            storeHead += 1
        }
        // The evicted head of the order is compacted once it is most of the array (amortised O(1)).
        if storeHead > storeMax, storeHead * 2 > storeOrder.count {
            storeOrder.removeFirst(storeHead)
            storeHead = 0
        }
    }

    private func ranges(upTo wanted: [Member: UInt32]) -> [MissingRange] {
        wanted.compactMap { member, target -> MissingRange? in
            let have = count(of: member)
            return target > have ? MissingRange(origin: member, from: have + 1, to: target) : nil
        }.sorted { ($0.origin.id, $0.origin.incarnation) < ($1.origin.id, $1.origin.incarnation) }
    }
}

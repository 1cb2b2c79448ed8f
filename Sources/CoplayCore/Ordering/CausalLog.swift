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
    /// Everything the commands this log originated have depended on, and for which origin (the
    /// base the next command's dependencies are a delta from).
    private var sentDependencies: (origin: Member, clock: VectorClock)?
    /// How many pending commands each origin has (the origins whose next command may be here).
    private var pendingPerOrigin: [Member: Int] = [:]
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
    /// above everything seen, and as dependencies the entries of the delivered clock that grew
    /// since the origin's previous command (a *delta*: a receiver delivers the origin's commands
    /// in order, so by the time it may deliver this one it has delivered everything the previous
    /// ones depended on). At most `dependenciesMax` entries: with more origins active since the
    /// previous command, the rest go with the next command (this one may then be delivered before
    /// some of them, which the last-writer-wins group state does not mind), so a command fits a
    /// datagram whatever the group's size.
    /// `dependsOn` says which other origins the command may depend on (all, by default): origins
    /// never seen as members are left out, so that a flood of invented origins cannot crowd the
    /// dependencies past what a datagram carries.
    public func next(_ command: Command, by origin: Member, dependsOn: (Member) -> Bool = { _ in true })
        -> CommandEnvelope
    {
        let sent = sentDependencies?.origin == origin ? sentDependencies?.clock ?? VectorClock() : VectorClock()
        var dependencies = VectorClock()
        for entry in delivered.sorted
        where entry.member != origin && dependsOn(entry.member) && entry.count > sent[entry.member] {
            guard dependencies.count < Self.dependenciesMax else { break }
            dependencies[entry.member] = entry.count
        }
        return CommandEnvelope(
            dot: Dot(origin: origin, counter: count(of: origin) + 1), lamport: lamport + 1, dependencies: dependencies,
            command: command)
    }

    /// Most dependency entries a command carries: one less than a datagram's vector clock holds.
    public static let dependenciesMax = WireFormat.vectorClockEntriesMax - 1

    /// Delivers a command this agent issues (made by `next`).
    public mutating func originate(_ envelope: CommandEnvelope) {
        precondition(
            envelope.dot.counter == count(of: envelope.dot.origin) + 1, "originate(\(envelope.dot)) out of turn")
        if sentDependencies?.origin != envelope.dot.origin {
            sentDependencies = (envelope.dot.origin, VectorClock())
        }
        sentDependencies?.clock.merge(envelope.dependencies)
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
            // Only a delivery can unblock pending commands.
            receipt.delivered += deliverPending()
        } else if pending.count < pendingMax {
            addPending(envelope)
        } else {
            // Full: drop it (it will be asked for again); a deliverable one never waits here.
            receipt.wasDropped = true
        }
        receipt.missing = missing()
        return receipt
    }

    private mutating func addPending(_ envelope: CommandEnvelope) {
        pending[envelope.dot] = envelope
        pendingPerOrigin[envelope.dot.origin, default: 0] += 1
    }

    private mutating func removePending(_ dot: Dot) {
        guard pending.removeValue(forKey: dot) != nil else { return }
        let left = (pendingPerOrigin[dot.origin] ?? 1) - 1
        pendingPerOrigin[dot.origin] = left > 0 ? left : nil
    }

    /// Delivers the pending commands that have become deliverable, in causal order.
    /// Each pass looks only at each origin's next command (a pending command of an origin is
    /// deliverable only if it is that origin's next), so a pass costs the number of origins, not
    /// of pending commands; candidates go in order-key order, so delivery is deterministic.
    private mutating func deliverPending() -> [CommandEnvelope] {
        var released: [CommandEnvelope] = []
        var progress = true
        while progress, !pending.isEmpty {
            progress = false
            let candidates = pendingPerOrigin.keys.compactMap { origin in
                pending[Dot(origin: origin, counter: count(of: origin) &+ 1)]
            }.ordered { $0.orderKey < $1.orderKey }
            for candidate in candidates where isDeliverable(candidate) {
                removePending(candidate.dot)
                deliver(candidate)
                released.append(candidate)
                progress = true
            }
        }
        return released
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

    /// Whether every command of `range` this log has delivered is still in the store (false when
    /// some were evicted, compacted, or stood for by an adopted snapshot: only a snapshot can
    /// bring them). At most `storeMax` steps, like `stored`.
    public func storesAll(_ range: MissingRange) -> Bool {
        let have = count(of: range.origin)
        guard range.from <= range.to, range.from <= have else { return true }
        let oldestKept = have > UInt32(clamping: storeMax) ? have - UInt32(clamping: storeMax) + 1 : 1
        guard range.from >= oldestKept else { return false }
        var counter = range.from
        let last = min(range.to, have)
        while counter <= last {
            if store[Dot(origin: range.origin, counter: counter)] == nil { return false }
            if counter == UInt32.max { break }
            counter += 1
        }
        return true
    }

    /// Adopts a snapshot's frontier: every command at or below it counts as delivered (the
    /// snapshot's winners stand for them), pending commands it covers are dropped, and those it
    /// unblocks are delivered. Returns those, in causal order, the dropped ones, and how many
    /// commands the frontier covered that this log had not delivered.
    public mutating func adopt(frontier: VectorClock, lamport: UInt64) -> (
        delivered: [CommandEnvelope], dropped: [CommandEnvelope], covered: Int
    ) {
        var covered: Int64 = 0  // summed in 64 bits: a frontier's gaps exceed a 32-bit Int (wasm32)
        for (member, counter) in frontier.entries where counter > count(of: member) {
            covered &+= Int64(counter - count(of: member))
            if pruned.removeValue(forKey: member) != nil { prunedOrder.removeAll { $0 == member } }
            delivered[member] = counter
        }
        self.lamport = max(self.lamport, lamport)
        var dropped: [CommandEnvelope] = []
        for (dot, envelope) in pending where dot.counter <= count(of: dot.origin) {
            removePending(dot)
            dropped.append(envelope)
        }
        return (deliverPending(), dropped, Int(clamping: covered))
    }

    /// Stored message commands above `digest` (those its owner has not delivered), oldest first,
    /// at most `limit`: a snapshot carries them, so that it never swallows a message.
    public func storedMessages(above digest: VectorClock, limit: Int) -> [CommandEnvelope] {
        var found: [CommandEnvelope] = []
        var index = storeHead
        while index < storeOrder.count, found.count < limit {
            let dot = storeOrder[index]
            index += 1
            guard dot.counter > digest[dot.origin], let envelope = store[dot],
                case .message = envelope.command.operation
            else { continue }
            found.append(envelope)
        }
        return found
    }

    /// Drops from the store the commands every live member has delivered (`stable` gives, per
    /// origin, the count every live member's digest has reached): a snapshot stands for them now.
    /// Only the oldest are looked at, so it is amortised O(1) per command.
    public mutating func compact(stable: (Member) -> UInt32) {
        while storeHead < storeOrder.count {
            let dot = storeOrder[storeHead]
            guard store[dot] == nil || dot.counter <= stable(dot.origin) else { break }
            store[dot] = nil
            storeHead += 1
        }
        if storeHead > 64, storeHead * 2 > storeOrder.count {
            storeOrder.removeFirst(storeHead)
            storeHead = 0
        }
    }

    /// Drops the entry of each `departed` origin whose count every live agent's digest has
    /// reached, and that no pending command still waits on: it can never matter again.
    public mutating func prune(departed: Set<Member>, liveDigests: [VectorClock]) {
        let waitedOn = Set(missing().map({ $0.origin }))
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
        }.ordered { ($0.origin.id, $0.origin.incarnation) < ($1.origin.id, $1.origin.incarnation) }
    }
}

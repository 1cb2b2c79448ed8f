/// The replicated command log around its causal core (`CausalLog`): commands whose sender's clock
/// is not known yet wait here (their times cannot be read before), received commands are
/// re-expressed on the local clock and delivered in causal order, gaps are asked for with nacks
/// (at most one per peer per `nackHoldoff`), nacks are answered from the store, and the entries
/// of departed origins are pruned once every live member has all their commands.
struct Ordering: Sendable {
    /// A command delivered here, with the clock its times were converted from (`nil` for this
    /// agent's own commands).
    struct Delivered: Hashable, Sendable {
        var envelope: CommandEnvelope
        var clockSource: ClockSource?
    }

    enum Output: Hashable, Sendable {
        /// A command this agent issued, delivered here: multicast it.
        case originated(Delivered)
        /// A command this agent would issue does not fit one datagram (`tooLargeProblem`).
        case tooLarge(Command)
        /// Commands delivered here, in causal order.
        case deliver([Delivered])
        /// Ask this peer for these commands (at most one nack per peer per `nackHoldoff`).
        case nack([MissingRange], to: PeerID)
        /// Send this stored command again to a peer that asked for it.
        case repair(CommandEnvelope, to: PeerID)
        /// A command was taken in (delivered, held, or found a duplicate): history being caught
        /// up on may be whole now.
        case received
        /// A peer's digest shows more missing than repair brings quickly: its snapshot would
        /// (`StateTransfer.onBehind`).
        case behind(Member)
        /// A snapshot was adopted: its winners to apply, the messages it carried.
        case adopted(Adoption)
        /// A command received again.
        case duplicate
        /// A command dropped, counted but not diagnosed: for want of room (`pendingFull`: repair
        /// brings it again) or beyond repair (`unrepairableGap`).
        case dropped(DropReason)
    }

    static let tooLargeProblem = "the command does not fit in one datagram (shorten the URL, id or metadata)"

    @inline(__always) var settings: Settings { sharedSettings.value }
    private let sharedSettings: SharedSettings
    private(set) var log: CausalLog
    /// Every delivered command, in delivery order, when `Settings.recordsDeliveries` is on.
    private(set) var deliveries: [CommandEnvelope] = []
    /// When a nack last went to each peer. At most `Settings.peersMax` entries (a command can name
    /// any sender); past that the entry of the longest-quiet peer is evicted.
    private(set) var nackSentAt: [PeerID: MonotonicInstant] = [:]
    /// Repair bytes each peer may still be sent; snapshot parts (`StateTransfer`) draw on them too.
    var repairBudgets: RepairBudgets
    /// How each received, not yet delivered command's times were converted, by dot. At most
    /// `Settings.pendingCommandsMax` (it is emptied when full: the conversions are then re-read
    /// from the current estimates).
    private var conversions: [Dot: ClockSource] = [:]
    /// Origins in the log that are not live members, with when they were first seen gone.
    private var originsGoneSince: [Member: MonotonicInstant] = [:]
    /// Commands whose sender's clock offset is not known yet, by sender, with their arrival. At
    /// most `Settings.commandsAwaitingClockMax` in all, each for `commandAwaitingClockTimeout`.
    private var awaitingClock: [PeerID: [(envelope: CommandEnvelope, sender: Member, at: MonotonicInstant)]] = [:]
    /// Own commands to multicast again, and when (`Settings.commandCopyOffsets`). At most
    /// `Settings.commandCopiesPendingMax`.
    private(set) var copies: [(envelope: CommandEnvelope, at: MonotonicInstant)] = []
    /// The last digest heard from each peer, and when: what a command must be covered by before
    /// it is compacted. A peer that timed out (crashed, or cut off by a partition) keeps its entry
    /// for `Settings.pruneAfter`, so that after a short partition it is still repaired command by
    /// command (messages included) rather than from a snapshot. At most `Settings.peersMax`
    /// entries, the longest-quiet evicted first.
    private var digestsHeard: [PeerID: (member: Member, digest: VectorClock, at: MonotonicInstant)] = [:]
    /// Where the 48-entry window of the next announced digest starts (when it holds more).
    private var digestStart = 0
    /// Since when some peer's digest has shown commands this agent lacks (nil: none does).
    private var gapSince: MonotonicInstant?
    /// Where in `deliveries` each adopted snapshot's frontier took effect (with
    /// `Settings.recordsDeliveries`, at most `deliveriesRecordedMax`): the commands at or below it
    /// count as delivered from there on.
    private(set) var adoptions: [(afterDeliveries: Int, frontier: VectorClock)] = []

    /// What a peer's digest calls for.
    /// A snapshot adopted: the winners to apply (times on the local clock, as of the snapshot's
    /// sender), the pending commands it unblocked, and how many commands it stood for.
    struct Adoption: Hashable, Sendable {
        var from: Member
        var snapshot: UInt64
        var winners: [Delivered]
        /// Message commands the snapshot carried that were not delivered here, in causal order
        /// per origin: delivered now, once (they are not in `deliveries`).
        var messages: [Delivered]
        var released: [Delivered]
        var covered: Int

        /// `messages`' parts, each with its origin.
        var messageParts: [(part: MessagePart, origin: Member)] {
            messages.compactMap {
                guard case .message(let part) = $0.envelope.command.operation else { return nil }
                return (part, $0.envelope.dot.origin)
            }
        }

        /// The event that says so (`from`: who sent the snapshot).
        func report(from: Originator) -> StateAdoptedReport {
            StateAdoptedReport(from: from, snapshot: snapshot, winners: winners.count, commandsCovered: covered)
        }
    }

    init(settings: Settings) {
        self.sharedSettings = SharedSettings(settings)
        log = CausalLog(settings: settings)
        repairBudgets = RepairBudgets(settings: settings)
    }

    /// A new membership starts with an empty log and catches up by repair.
    mutating func reset() {
        log = CausalLog(settings: settings)
        nackSentAt.removeAll()
        repairBudgets.reset()
        conversions.removeAll()
        originsGoneSince.removeAll()
        awaitingClock.removeAll()
        digestsHeard.removeAll()
        gapSince = nil
        copies.removeAll()
    }

    // MARK: Issuing

    /// The envelope the next command from `origin` gets (not yet delivered: see `originate`); it
    /// depends only on origins `dependsOn` accepts.
    func next(_ command: Command, by origin: Member, dependsOn: (Member) -> Bool = { _ in true }) -> CommandEnvelope {
        log.next(command, by: origin, dependsOn: dependsOn)
    }

    /// A command this agent issues: refused if it does not fit one datagram (`framing` gives its
    /// size; a share leaves room to travel, as the activity, in a state part with a tag: the
    /// other winners are small whatever their text, once their dependencies are left out), else
    /// delivered here.
    mutating func issue(
        _ command: Command, by origin: Member, dependsOn: (Member) -> Bool, framing: Framing, now: MonotonicInstant
    ) -> [Output] {
        let envelope = next(command, by: origin, dependsOn: dependsOn)
        var room = 0
        if case .share = command.operation { room = WireFormat.commandRoomForStateBytes }
        guard envelope.dependencies.count < WireFormat.vectorClockEntriesMax,
            framing.bytes(.command(envelope, isRepair: false)) - framing.tagBytes + room <= settings.datagramBytesMax
        else { return [.tooLarge(command)] }
        return [.originated(originate(envelope, now: now))]
    }

    /// Delivers a command this agent issues, and schedules its copies (not for a message part,
    /// nor while `commandCopiesPendingMax` copies wait: a burst goes once).
    mutating func originate(_ envelope: CommandEnvelope, now: MonotonicInstant) -> Delivered {
        log.originate(envelope)
        record(envelope)
        if case .message = envelope.command.operation {
        } else if copies.count + settings.commandCopyOffsets.count <= settings.commandCopiesPendingMax {
            copies += settings.commandCopyOffsets.map { (envelope, now + $0) }
        }
        return Delivered(envelope: envelope, clockSource: nil)
    }

    /// The copies due now, oldest first.
    private mutating func dueCopies(now: MonotonicInstant) -> [CommandEnvelope] {
        let due = copies.filter { $0.at <= now }.ordered { $0.at < $1.at }.map({ $0.envelope })
        copies.removeAll { $0.at <= now }
        return due
    }

    /// The digest the next announcement carries. Like this agent's own commands, it leaves out
    /// origins `dependsOn` does not accept; when more than a datagram's 48 entries remain, each
    /// announcement carries the next 48 of them in turn (receivers ask for what any slice shows).
    mutating func nextDigest(dependsOn: (Member) -> Bool) -> VectorClock {
        let entries = log.delivered.sorted.filter { dependsOn($0.member) }
        var digest = VectorClock()
        let window = WireFormat.vectorClockEntriesMax
        // Where this announcement's window starts: the last one's end (no product that could
        // overflow, however long the agent runs).
        let start = entries.count > window ? digestStart % entries.count : 0
        if entries.count > window { digestStart = (start + window) % entries.count }
        for offset in 0..<min(window, entries.count) {
            let entry = entries[(start + offset) % entries.count]
            digest[entry.member] = entry.count
        }
        return digest
    }

    /// When the next copy is due.
    var nextCopyAt: MonotonicInstant? { copies.map({ $0.at }).min() }

    /// A peer named `dot` (in a `ready`): if this agent lacks that command, what to ask the peer for.
    mutating func onReferenced(_ dot: Dot, by peer: PeerID, now: MonotonicInstant) -> [Output] {
        let have = log.count(of: dot.origin)
        guard dot.counter > have, UInt64(dot.counter) <= UInt64(have) + UInt64(settings.storedCommandsMax) else {
            return []
        }
        let ranges = repairRequest(
            to: peer, missing: [MissingRange(origin: dot.origin, from: have + 1, to: dot.counter)], now: now)
        return ranges.isEmpty ? [] : [.nack(ranges, to: peer)]
    }

    // MARK: Receiving

    /// A command from `sender`, whose clock is `offsetNanos` ahead of ours (`nil`: not known yet,
    /// the command waits for it).
    mutating func receive(
        _ envelope: CommandEnvelope, from sender: Member, offsetNanos: Int64?, now: MonotonicInstant
    ) -> [Output] {
        guard let offsetNanos else { return hold(envelope, from: sender, now: now) + [.received] }
        var local = envelope
        local.command.operation = envelope.command.operation.shifted(by: -offsetNanos)
        let result = log.receive(local)
        var out: [Output] = []
        if result.wasDuplicate { out.append(.duplicate) }
        if result.wasDropped { out.append(.dropped(.pendingFull)) }  // it will be asked for again
        if result.wasUnrepairable { out.append(.dropped(.unrepairableGap)) }
        if !result.wasDuplicate && !result.wasDropped && !result.wasUnrepairable {
            if conversions.count >= settings.pendingCommandsMax { conversions.removeAll() }
            conversions[envelope.dot] = ClockSource(peer: sender.id, offsetNanos: offsetNanos)
        }
        let delivered = result.delivered.map { delivered -> Delivered in
            record(delivered)
            return Delivered(envelope: delivered, clockSource: conversions.removeValue(forKey: delivered.dot))
        }
        if !delivered.isEmpty { out.append(.deliver(delivered)) }
        let nack = repairRequest(to: sender.id, missing: result.missing, now: now)
        if !nack.isEmpty { out.append(.nack(nack, to: sender.id)) }
        return out + [.received]
    }

    /// The commands that waited for `sender`'s clock, now that it is known, oldest first.
    mutating func releaseAwaitingClock(of sender: PeerID) -> [(envelope: CommandEnvelope, sender: Member)] {
        (awaitingClock.removeValue(forKey: sender) ?? []).map { ($0.envelope, $0.sender) }
    }

    /// `peer`'s clock became known (`offsetNanos` ahead of ours): the commands that waited for it
    /// are received now, oldest first.
    mutating func onClockKnown(of peer: PeerID, offsetNanos: Int64?, now: MonotonicInstant) -> [Output] {
        releaseAwaitingClock(of: peer).flatMap {
            receive($0.envelope, from: $0.sender, offsetNanos: offsetNanos, now: now)
        }
    }

    /// A peer's digest: what to ask it for, if anything. More than `stateTransferAfterMissing`
    /// missing commands (or a gap repair has not closed within `repairStallBeforeState`) are
    /// asked for as a snapshot, from a peer whose clock is known (`clockKnown`: the snapshot's
    /// times are on its clock); none while a snapshot is on its way (`transferUnderWay`).
    mutating func onDigest(
        _ digest: VectorClock, of peer: Member, clockKnown: Bool, transferUnderWay: Bool, now: MonotonicInstant
    ) -> [Output] {
        digestsHeard.makeRoom(for: peer.id, limit: settings.peersMax) { $0.at }
        // A digest may be one slice of a long one: the slices of one membership add up.
        var heard = digestsHeard[peer.id].flatMap { $0.member == peer ? $0.digest : nil } ?? VectorClock()
        heard.merge(digest)
        digestsHeard[peer.id] = (peer, heard, now)
        let missing = log.missing(comparedTo: digest)
        guard !missing.isEmpty else { return [] }
        // In Int64: a range spans up to 2^32 counters, more than a 32-bit Int holds (wasm32).
        let count = missing.reduce(Int64(0)) { $0 &+ Int64($1.to - $1.from) &+ 1 }
        let since = gapSince ?? now
        gapSince = since
        if count > Int64(settings.stateTransferAfterMissing) || now - since >= settings.repairStallBeforeState {
            return clockKnown ? [.behind(peer)] : []
        }
        if transferUnderWay { return [] }  // the snapshot under way brings it
        let ranges = repairRequest(to: peer.id, missing: missing, now: now)
        return ranges.isEmpty ? [] : [.nack(ranges, to: peer.id)]
    }

    /// A snapshot, whole and verified (`StateTransfer`), whose times are on `source`'s clock:
    /// merged into the log (its frontier counts as delivered; the pending commands it unblocks
    /// are delivered), its winners handed on to be applied.
    mutating func adopt(_ snapshot: StateTransfer.Snapshot, clock source: ClockSource) -> [Output] {
        let log = self.log
        var winners: [Delivered] = []
        var messages: [Delivered] = []
        for command in snapshot.winners {
            if case .message = command.command.operation {
                if command.dot.counter > log.count(of: command.dot.origin) {
                    messages.append(Delivered(envelope: command, clockSource: nil))
                }
            } else {
                var local = command
                local.command.operation = command.command.operation.shifted(by: -source.offsetNanos)
                winners.append(Delivered(envelope: local, clockSource: source))
            }
        }
        let (released, dropped, covered) = self.log.adopt(frontier: snapshot.frontier, lamport: snapshot.lamport)
        // Pending messages the frontier covers are delivered too (the snapshot may not carry them).
        let carried = Set(messages.map({ $0.envelope.dot }))
        for command in dropped where !carried.contains(command.dot) {
            if case .message = command.command.operation {
                messages.append(Delivered(envelope: command, clockSource: nil))
            }
        }
        messages.sort {
            ($0.envelope.dot.origin.id, $0.envelope.dot.counter) < ($1.envelope.dot.origin.id, $1.envelope.dot.counter)
        }
        for dot in conversions.keys where dot.counter <= self.log.count(of: dot.origin) {
            if !released.contains(where: { $0.dot == dot }) { conversions[dot] = nil }
        }
        if settings.recordsDeliveries, adoptions.count < settings.deliveriesRecordedMax {
            adoptions.append((deliveries.count, snapshot.frontier))
        }
        let delivered = released.map { envelope -> Delivered in
            record(envelope)
            return Delivered(envelope: envelope, clockSource: conversions.removeValue(forKey: envelope.dot))
        }
        let adoption = Adoption(
            from: snapshot.from, snapshot: snapshot.id, winners: winners, messages: messages, released: delivered,
            covered: covered)
        return [.adopted(adoption)] + (delivered.isEmpty ? [] : [.deliver(delivered)])
    }

    /// What this agent's snapshot for a peer whose digest is `peerDigest` is made of: the
    /// delivered frontier of the origins `dependsOn` accepts, the group state's `winners` at or
    /// below it, and the stored messages above the peer's digest.
    func snapshotSource(winners: [CommandEnvelope], for peerDigest: VectorClock, dependsOn: (Member) -> Bool)
        -> StateTransfer.Source
    {
        var frontier = VectorClock()
        for (origin, count) in log.delivered.entries where dependsOn(origin) { frontier[origin] = count }
        let messages = log.storedMessages(above: peerDigest, limit: 64)
        return StateTransfer.Source(
            frontier: frontier, lamport: log.lamport,
            winners: winners.filter { $0.dot.counter <= frontier[$0.dot.origin] },
            messages: messages.filter { $0.dot.counter <= frontier[$0.dot.origin] })
    }

    /// A nack from `peer`: the stored commands it asks for, within its repair budget (`framing`
    /// gives a repair's size on the wire).
    mutating func onNack(_ ranges: [MissingRange], from peer: PeerID, framing: Framing, now: MonotonicInstant)
        -> [Output]
    {
        repairs(for: ranges, to: peer, now: now) { framing.bytes(.command($0, isRepair: true)) }.map {
            .repair($0, to: peer)
        }
    }

    /// The stored commands a nack from `peer` asks for: at most `Settings.repairBatchMax`, and no
    /// more bytes (`bytes` gives a command's size on the wire) than the peer's repair budget holds
    /// (`Settings.repairBytesPerSecondPerPeer`, refilled continuously, at most one second's worth).
    mutating func repairs(
        for ranges: [MissingRange], to peer: PeerID, now: MonotonicInstant, bytes: (CommandEnvelope) -> Int
    ) -> [CommandEnvelope] {
        var budget = repairBudgets.available(to: peer, now: now)
        var found: [CommandEnvelope] = []
        outer: for range in ranges where found.count < settings.repairBatchMax {
            for envelope in log.stored(range, limit: settings.repairBatchMax - found.count) {
                let size = bytes(envelope)
                guard size <= budget else { break outer }
                budget -= size
                found.append(envelope)
            }
        }
        repairBudgets.set(budget, for: peer, now: now)
        return found
    }

    /// Whether any of these digests has commands this agent has not delivered.
    func isBehind(_ digests: some Sequence<VectorClock>) -> Bool {
        digests.contains { !log.missing(comparedTo: $0).isEmpty }
    }

    /// `graceful`: it left or exited, and will not ask for anything again (a peer that timed out
    /// may be back after a partition: its digest still holds back compaction).
    mutating func onPeerLeft(_ peer: PeerID, graceful: Bool) {
        if graceful { digestsHeard[peer] = nil }
        nackSentAt[peer] = nil
        repairBudgets.forget(peer)
    }

    // MARK: Timers

    /// Forgets commands that waited too long for a clock, prunes departed origins, compacts the
    /// store: `peers` are the live memberships besides this agent's (`own`), with their latest
    /// digests. Returns the copies of this agent's commands due now (`dueCopies`).
    mutating func tick(now: MonotonicInstant, peers: [PeerID: PeerRecord], own: Member) -> [CommandEnvelope] {
        let due = dueCopies(now: now)
        tick(now: now, live: Set(peers.values.map({ $0.member }) + [own]), digests: peers.values.map({ $0.digest }))
        return due
    }

    private mutating func tick(now: MonotonicInstant, live: Set<Member>, digests: [VectorClock]) {
        if gapSince != nil, !isBehind(digests) { gapSince = nil }
        // What every peer heard from lately has delivered needs no repair: a snapshot stands for it.
        let heardSince = now - settings.pruneAfter
        digestsHeard = digestsHeard.filter { $0.value.at > heardSince }
        let (counts, heard) = (log, digestsHeard.values.map({ $0.digest }))
        log.compact(stable: { origin in heard.reduce(counts.count(of: origin)) { min($0, $1[origin]) } })
        let oldest = now - settings.commandAwaitingClockTimeout
        for (sender, held) in awaitingClock {
            let kept = held.filter { $0.at > oldest }
            awaitingClock[sender] = kept.isEmpty ? nil : kept
        }
        let gone = Set(log.delivered.entries.keys).subtracting(live)
        originsGoneSince = originsGoneSince.filter { gone.contains($0.key) }
        for origin in gone where originsGoneSince[origin] == nil { originsGoneSince[origin] = now }
        let prunable = Set(originsGoneSince.filter { now - $0.value >= settings.pruneAfter }.keys)
        if !prunable.isEmpty { log.prune(departed: prunable, liveDigests: digests) }
    }

    // MARK: Internals

    private mutating func hold(_ envelope: CommandEnvelope, from sender: Member, now: MonotonicInstant) -> [Output] {
        let held = awaitingClock.values.reduce(0) { $0 + $1.count }
        guard held < settings.commandsAwaitingClockMax else { return [.dropped(.pendingFull)] }
        awaitingClock[sender.id, default: []].append((envelope, sender, now))
        return []
    }

    /// `missing`, if a nack to `peer` may go out now.
    private mutating func repairRequest(to peer: PeerID, missing: [MissingRange], now: MonotonicInstant)
        -> [MissingRange]
    {
        guard !missing.isEmpty else { return [] }
        if let last = nackSentAt[peer], now - last < settings.nackHoldoff { return [] }
        nackSentAt.makeRoom(for: peer, limit: settings.peersMax) { $0 }
        nackSentAt[peer] = now
        return Array(missing.prefix(WireFormat.nackRangesMax))
    }

    private mutating func record(_ envelope: CommandEnvelope) {
        guard settings.recordsDeliveries else { return }
        deliveries.append(envelope)
        if deliveries.count > settings.deliveriesRecordedMax { deliveries.removeFirst(deliveries.count / 2) }
    }
}

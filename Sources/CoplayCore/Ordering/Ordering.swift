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

    /// What receiving one command did.
    struct Receipt: Sendable {
        var delivered: [Delivered] = []
        /// What to ask the sender for (empty when nothing, or when a nack went out too recently).
        var nack: [MissingRange] = []
        var wasDuplicate = false
        /// Dropped for want of room (pending or waiting for a clock); repair brings it again.
        var wasDropped = false
        /// Dropped: it waits on more history than any agent can repair.
        var wasUnrepairable = false
    }

    var settings: Settings { sharedSettings.value }
    private let sharedSettings: SharedSettings
    private(set) var log: CausalLog
    /// Every delivered command, in delivery order, when `Settings.recordsDeliveries` is on.
    private(set) var deliveries: [CommandEnvelope] = []
    /// When a nack last went to each peer. At most `Settings.peersMax` entries (a command can name
    /// any sender); past that the entry of the longest-quiet peer is evicted.
    private(set) var nackSentAt: [PeerID: MonotonicInstant] = [:]
    /// Repair bytes each peer may still be sent, and when that was reckoned. At most
    /// `Settings.peersMax` entries; the longest-quiet is evicted first.
    private var repairBudgets: [PeerID: (bytes: Int, at: MonotonicInstant)] = [:]
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
    /// Snapshots asked for, assembled and sent.
    private(set) var transfer: StateTransfer
    /// The last digest heard from each peer, and when: what a command must be covered by before
    /// it is compacted. A peer that timed out (crashed, or cut off by a partition) keeps its entry
    /// for `Settings.pruneAfter`, so that after a short partition it is still repaired command by
    /// command (messages included) rather than from a snapshot. At most `Settings.peersMax`
    /// entries, the longest-quiet evicted first.
    private var digestsHeard: [PeerID: (member: Member, digest: VectorClock, at: MonotonicInstant)] = [:]
    /// Since when some peer's digest has shown commands this agent lacks (nil: none does).
    private var gapSince: MonotonicInstant?
    /// Where in `deliveries` each adopted snapshot's frontier took effect (with
    /// `Settings.recordsDeliveries`, at most `deliveriesRecordedMax`): the commands at or below it
    /// count as delivered from there on.
    private(set) var adoptions: [(afterDeliveries: Int, frontier: VectorClock)] = []

    /// What a peer's digest calls for.
    enum CatchUp: Hashable, Sendable {
        case nothing
        /// Ask for these commands.
        case nack([MissingRange])
        /// Too much is missing for repair to be quick: ask for the peer's state.
        case state(StateRequest)
    }

    /// A snapshot adopted: the winners to apply (times on the local clock, as of the snapshot's
    /// sender), the pending commands it unblocked, and how many commands it stood for.
    struct Adoption: Sendable {
        var from: Member
        var snapshot: UInt64
        var winners: [Delivered]
        /// Message commands the snapshot carried that were not delivered here, in causal order
        /// per origin: delivered now, once (they are not in `deliveries`).
        var messages: [Delivered]
        var released: [Delivered]
        var covered: Int
    }

    init(settings: Settings) {
        self.sharedSettings = SharedSettings(settings)
        log = CausalLog(settings: settings)
        transfer = StateTransfer(settings: settings)
    }

    /// A new membership starts with an empty log and catches up by repair.
    mutating func reset() {
        log = CausalLog(settings: settings)
        nackSentAt.removeAll()
        repairBudgets.removeAll()
        conversions.removeAll()
        originsGoneSince.removeAll()
        awaitingClock.removeAll()
        transfer.reset()
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
    mutating func dueCopies(now: MonotonicInstant) -> [CommandEnvelope] {
        let due = copies.filter { $0.at <= now }.sorted { $0.at < $1.at }.map(\.envelope)
        copies.removeAll { $0.at <= now }
        return due
    }

    /// When the next copy is due.
    var nextCopyAt: MonotonicInstant? { copies.map(\.at).min() }

    /// A peer named `dot` (in a `ready`): if this agent lacks that command, what to ask the peer for.
    mutating func onReferenced(_ dot: Dot, by peer: PeerID, now: MonotonicInstant) -> [MissingRange] {
        let have = log.count(of: dot.origin)
        guard dot.counter > have, UInt64(dot.counter) <= UInt64(have) + UInt64(settings.storedCommandsMax) else {
            return []
        }
        return repairRequest(
            to: peer, missing: [MissingRange(origin: dot.origin, from: have + 1, to: dot.counter)], now: now)
    }

    // MARK: Receiving

    /// A command from `sender`, whose clock is `offsetNanos` ahead of ours (`nil`: not known yet,
    /// the command waits for it).
    mutating func receive(
        _ envelope: CommandEnvelope, from sender: Member, offsetNanos: Int64?, now: MonotonicInstant
    ) -> Receipt {
        guard let offsetNanos else { return hold(envelope, from: sender, now: now) }
        var local = envelope
        local.command.operation = envelope.command.operation.shifted(by: -offsetNanos)
        let result = log.receive(local)
        var receipt = Receipt(
            wasDuplicate: result.wasDuplicate, wasDropped: result.wasDropped, wasUnrepairable: result.wasUnrepairable)
        if !result.wasDuplicate && !result.wasDropped && !result.wasUnrepairable {
            if conversions.count >= settings.pendingCommandsMax { conversions.removeAll() }
            conversions[envelope.dot] = ClockSource(peer: sender.id, offsetNanos: offsetNanos)
        }
        for delivered in result.delivered {
            record(delivered)
            receipt.delivered.append(
                Delivered(envelope: delivered, clockSource: conversions.removeValue(forKey: delivered.dot)))
        }
        receipt.nack = repairRequest(to: sender.id, missing: result.missing, now: now)
        return receipt
    }

    /// The commands that waited for `sender`'s clock, now that it is known, oldest first.
    mutating func releaseAwaitingClock(of sender: PeerID) -> [(envelope: CommandEnvelope, sender: Member)] {
        (awaitingClock.removeValue(forKey: sender) ?? []).map { ($0.envelope, $0.sender) }
    }

    /// A peer's digest: what to ask it for, if anything. More than `stateTransferAfterMissing`
    /// missing commands are asked for as a snapshot, from a peer whose clock is known
    /// (`clockKnown`: the snapshot's times are on its clock).
    mutating func onDigest(_ digest: VectorClock, of peer: Member, clockKnown: Bool, now: MonotonicInstant) -> CatchUp {
        digestsHeard.makeRoom(for: peer.id, limit: settings.peersMax) { $0.at }
        // A digest may be one slice of a long one: the slices of one membership add up.
        var heard = digestsHeard[peer.id].flatMap { $0.member == peer ? $0.digest : nil } ?? VectorClock()
        heard.merge(digest)
        digestsHeard[peer.id] = (peer, heard, now)
        let missing = log.missing(comparedTo: digest)
        guard !missing.isEmpty else { return .nothing }
        let count = missing.reduce(0) { $0 + Int($1.to - $1.from) + 1 }
        let since = gapSince ?? now
        gapSince = since
        if count > settings.stateTransferAfterMissing || now - since >= settings.repairStallBeforeState {
            guard clockKnown, let request = transfer.request(from: peer, now: now) else { return .nothing }
            return .state(request)
        }
        if transfer.isAssembling { return .nothing }  // the snapshot under way brings it
        let ranges = repairRequest(to: peer.id, missing: missing, now: now)
        return ranges.isEmpty ? .nothing : .nack(ranges)
    }

    /// Whether a nack asks for commands this agent delivered but no longer stores, from a peer
    /// that only a snapshot will serve well: one that has nothing yet (`peerDigest` is empty: a
    /// newcomer), or asks for more than `stateTransferAfterMissing`. A peer missing a few commands
    /// is left to repair them from a member that stores them (a snapshot would stand for them,
    /// messages included, and this agent may lack those messages itself); if none can, it asks for
    /// the state after `repairStallBeforeState`.
    mutating func answersWithState(
        _ ranges: [MissingRange], to peer: PeerID, peerDigest: VectorClock, now: MonotonicInstant
    ) -> Bool {
        let count = ranges.reduce(0) { $0 + Int($1.to - $1.from) + 1 }
        guard peerDigest.isEmpty || count > settings.stateTransferAfterMissing else { return false }
        return !ranges.allSatisfy { log.storesAll($0) } && transfer.maySendUnasked(to: peer, now: now)
    }

    /// A snapshot part from member `sender`, whose last digest was `senderDigest` and whose clock
    /// is `offsetNanos` ahead of ours (`nil`: unknown, the snapshot cannot be read and is dropped).
    mutating func onStatePart(
        _ part: StatePart, from sender: Member, senderDigest: VectorClock, offsetNanos: Int64?, now: MonotonicInstant
    ) -> Result<Adoption?, StateRejection> {
        guard let offsetNanos else {
            return .failure(StateRejection(reason: .stateNotWanted, detail: "the sender's clock is not known yet"))
        }
        let log = self.log
        let aheadMax = UInt64(settings.stateFrontierAheadMax)
        switch transfer.receive(
            part, from: sender, now: now,
            isPlausible: { member, counter in
                UInt64(counter) <= UInt64(max(senderDigest[member], log.count(of: member))) + aheadMax
            })
        {
        case .kept:
            return .success(nil)
        case .ignored:
            return .failure(
                StateRejection(reason: .stateNotWanted, detail: "another transfer is under way, or a repeated part"))
        case .rejected(let detail):
            return .failure(StateRejection(reason: .badState, detail: detail))
        case .complete(let snapshot):
            let source = ClockSource(peer: sender.id, offsetNanos: offsetNanos)
            var winners: [Delivered] = []
            var messages: [Delivered] = []
            for command in snapshot.winners {
                if case .message = command.command.operation {
                    if command.dot.counter > log.count(of: command.dot.origin) {
                        messages.append(Delivered(envelope: command, clockSource: nil))
                    }
                } else {
                    var local = command
                    local.command.operation = command.command.operation.shifted(by: -offsetNanos)
                    winners.append(Delivered(envelope: local, clockSource: source))
                }
            }
            let (released, dropped, covered) = self.log.adopt(frontier: snapshot.frontier, lamport: snapshot.lamport)
            // Pending messages the frontier covers are delivered too (the snapshot may not carry them).
            let carried = Set(messages.map(\.envelope.dot))
            for command in dropped where !carried.contains(command.dot) {
                if case .message = command.command.operation {
                    messages.append(Delivered(envelope: command, clockSource: nil))
                }
            }
            messages.sort {
                ($0.envelope.dot.origin.id, $0.envelope.dot.counter) < (
                    $1.envelope.dot.origin.id, $1.envelope.dot.counter
                )
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
            return .success(
                Adoption(
                    from: sender, snapshot: snapshot.id, winners: winners, messages: messages, released: delivered,
                    covered: covered))
        }
    }

    /// Why a snapshot was not adopted.
    struct StateRejection: Error, Hashable, Sendable {
        var reason: DropReason
        var detail: String
    }

    /// The stored commands a nack from `peer` asks for: at most `Settings.repairBatchMax`, and no
    /// more bytes (`bytes` gives a command's size on the wire) than the peer's repair budget holds
    /// (`Settings.repairBytesPerSecondPerPeer`, refilled continuously, at most one second's worth).
    mutating func repairs(
        for ranges: [MissingRange], to peer: PeerID, now: MonotonicInstant, bytes: (CommandEnvelope) -> Int
    ) -> [CommandEnvelope] {
        var budget = repairBudget(of: peer, now: now)
        var found: [CommandEnvelope] = []
        outer: for range in ranges where found.count < settings.repairBatchMax {
            for envelope in log.stored(range, limit: settings.repairBatchMax - found.count) {
                let size = bytes(envelope)
                guard size <= budget else { break outer }
                budget -= size
                found.append(envelope)
            }
        }
        repairBudgets[peer] = (budget, now)
        return found
    }

    /// Takes `bytes` from `peer`'s repair budget, if it holds them.
    mutating func spendRepairBudget(_ bytes: Int, to peer: PeerID, now: MonotonicInstant) -> Bool {
        let budget = repairBudget(of: peer, now: now)
        repairBudgets[peer] = (budget >= bytes ? budget - bytes : budget, now)
        return budget >= bytes
    }

    /// The repair bytes `peer` may be sent now (`Settings.repairBytesPerSecondPerPeer`, refilled
    /// continuously, at most one second's worth); makes room for its entry.
    private mutating func repairBudget(of peer: PeerID, now: MonotonicInstant) -> Int {
        let rate = settings.repairBytesPerSecondPerPeer
        guard let bucket = repairBudgets[peer] else {
            repairBudgets.makeRoom(for: peer, limit: settings.peersMax) { $0.at }
            return rate
        }
        let refill = Int(min(Double(rate), Double(rate) * max(0, (now - bucket.at).seconds)))
        return min(rate, bucket.bytes + refill)
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
        repairBudgets[peer] = nil
        transfer.onPeerLeft(peer)
    }

    // MARK: Timers

    /// Forgets commands that waited too long for a clock, prunes departed origins, compacts the
    /// store, and resumes a stalled state transfer (the request to send, if any): `live` are the
    /// current memberships (this agent's included), `digests` the peers' latest digests.
    mutating func tick(now: MonotonicInstant, live: Set<Member>, digests: [VectorClock]) -> (
        peer: Member, request: StateRequest
    )? {
        let resume = transfer.tick(now: now)
        if gapSince != nil, !isBehind(digests) { gapSince = nil }
        // What every peer heard from lately has delivered needs no repair: a snapshot stands for it.
        let heardSince = now - settings.pruneAfter
        digestsHeard = digestsHeard.filter { $0.value.at > heardSince }
        let (counts, heard) = (log, digestsHeard.values.map(\.digest))
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
        return resume
    }

    // MARK: Internals

    private mutating func hold(_ envelope: CommandEnvelope, from sender: Member, now: MonotonicInstant) -> Receipt {
        let held = awaitingClock.values.reduce(0) { $0 + $1.count }
        guard held < settings.commandsAwaitingClockMax else { return Receipt(wasDropped: true) }
        awaitingClock[sender.id, default: []].append((envelope, sender, now))
        return Receipt()
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

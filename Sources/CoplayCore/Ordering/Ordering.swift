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

    let settings: Settings
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

    init(settings: Settings) {
        self.settings = settings
        log = CausalLog(settings: settings)
    }

    /// A new membership starts with an empty log and catches up by repair.
    mutating func reset() {
        log = CausalLog(settings: settings)
        nackSentAt.removeAll()
        repairBudgets.removeAll()
        conversions.removeAll()
        originsGoneSince.removeAll()
        awaitingClock.removeAll()
    }

    // MARK: Issuing

    /// The envelope the next command from `origin` gets (not yet delivered: see `originate`); it
    /// depends only on origins `dependsOn` accepts.
    func next(_ command: Command, by origin: Member, dependsOn: (Member) -> Bool = { _ in true }) -> CommandEnvelope {
        log.next(command, by: origin, dependsOn: dependsOn)
    }

    /// Delivers a command this agent issues.
    mutating func originate(_ envelope: CommandEnvelope) -> Delivered {
        log.originate(envelope)
        record(envelope)
        return Delivered(envelope: envelope, clockSource: nil)
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

    /// A peer's digest: what to ask it for, if anything.
    mutating func onDigest(_ digest: VectorClock, of peer: PeerID, now: MonotonicInstant) -> [MissingRange] {
        repairRequest(to: peer, missing: log.missing(comparedTo: digest), now: now)
    }

    /// The stored commands a nack from `peer` asks for: at most `Settings.repairBatchMax`, and no
    /// more bytes (`bytes` gives a command's size on the wire) than the peer's repair budget holds
    /// (`Settings.repairBytesPerSecondPerPeer`, refilled continuously, at most one second's worth).
    mutating func repairs(
        for ranges: [MissingRange], to peer: PeerID, now: MonotonicInstant, bytes: (CommandEnvelope) -> Int
    ) -> [CommandEnvelope] {
        let rate = settings.repairBytesPerSecondPerPeer
        var bucket = repairBudgets[peer] ?? (bytes: rate, at: now)
        let refill = Int(min(Double(rate), Double(rate) * max(0, (now - bucket.at).seconds)))
        bucket = (min(rate, bucket.bytes + refill), now)
        var found: [CommandEnvelope] = []
        outer: for range in ranges where found.count < settings.repairBatchMax {
            for envelope in log.stored(range, limit: settings.repairBatchMax - found.count) {
                let size = bytes(envelope)
                guard size <= bucket.bytes else { break outer }
                bucket.bytes -= size
                found.append(envelope)
            }
        }
        if repairBudgets[peer] == nil, repairBudgets.count >= settings.peersMax,
            let oldest = repairBudgets.min(by: { ($0.value.at, $0.key) < ($1.value.at, $1.key) })
        {
            repairBudgets[oldest.key] = nil
        }
        repairBudgets[peer] = bucket
        return found
    }

    /// Whether any of these digests has commands this agent has not delivered.
    func isBehind(_ digests: some Sequence<VectorClock>) -> Bool {
        digests.contains { !log.missing(comparedTo: $0).isEmpty }
    }

    mutating func onPeerLeft(_ peer: PeerID) {
        nackSentAt[peer] = nil
        repairBudgets[peer] = nil
    }

    // MARK: Timers

    /// Forgets commands that waited too long for a clock, and prunes departed origins: `live`
    /// are the current memberships (this agent's included), `digests` their latest digests.
    mutating func tick(now: MonotonicInstant, live: Set<Member>, digests: [VectorClock]) {
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
        if nackSentAt[peer] == nil, nackSentAt.count >= settings.peersMax,
            let oldest = nackSentAt.min(by: { ($0.value, $0.key) < ($1.value, $1.key) })
        {
            nackSentAt[oldest.key] = nil
        }
        nackSentAt[peer] = now
        return Array(missing.prefix(WireFormat.nackRangesMax))
    }

    private mutating func record(_ envelope: CommandEnvelope) {
        guard settings.recordsDeliveries else { return }
        deliveries.append(envelope)
        if deliveries.count > settings.deliveriesRecordedMax { deliveries.removeFirst(deliveries.count / 2) }
    }
}

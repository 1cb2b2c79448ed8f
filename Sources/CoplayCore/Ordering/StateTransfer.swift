/// State transfer (Raft's InstallSnapshot, done leaderless): an agent far behind a member — a
/// late joiner, or one a burst left behind — catches up from a snapshot of that member's group
/// state instead of from the commands that made it.
///
/// The group state is a last-writer-wins map: the activity is the winning `share`, each item's
/// state its winning command, "winning" meaning the largest order key. Such a map merges by
/// taking each entry's larger winner, whatever the order, so adopting a snapshot is a merge, never
/// a replacement: it cannot roll an agent back past anything it has delivered. A snapshot stands
/// for every command at or below its frontier (the sender's delivered vector clock); the
/// receiver's delivered clock becomes the entry-wise maximum of its own and the frontier, and the
/// commands after the frontier arrive as usual.
///
/// This machine is the whole of it, on both sides. Asked (`onStateRequest`), or answering a nack
/// for commands no longer stored (`onNack`), it makes this agent's snapshot into parts that fit
/// a datagram and sends them within the peer's repair budget; the router only supplies what a
/// snapshot is made of (`Source`), as raft's application supplies its Storage snapshot. Behind
/// (`onBehind`), it asks, at most once per `stateRequestHoldoff`; it assembles received parts
/// (`onStatePart`, one snapshot at a time), verifies them and hands the snapshot on to be
/// adopted; a transfer that stalls is resumed (`tick`: the parts still wanted) and one that stays
/// stalled for `stateTransferTimeout` (its sender crashed) is dropped, to start again from
/// whoever is ahead.
struct StateTransfer: Sendable {
    enum Output: Hashable, Sendable {
        /// Send these parts of this agent's snapshot to a member.
        case send([StatePart], to: PeerID)
        /// Ask a member for its snapshot: all of it, or the parts still wanted.
        case request(StateRequest, to: PeerID)
        /// A snapshot whole and verified, its times on the sender's clock (`ClockSource`):
        /// merge it into the log and the group state (`Ordering.adopt`).
        case adopt(Snapshot, ClockSource)
        /// A part not kept, and why.
        case drop(DropReason, String)
    }

    /// What this agent's snapshot for one peer is made of: its delivered frontier (the origins
    /// its digest names), the commands that decide its group state, and the stored messages
    /// the peer has not delivered.
    struct Source: Sendable {
        var frontier: VectorClock
        var lamport: UInt64
        var winners: [CommandEnvelope]
        var messages: [CommandEnvelope]
    }

    /// A complete, verified snapshot.
    struct Snapshot: Hashable, Sendable {
        var from: Member
        var id: UInt64
        var lamport: UInt64
        var frontier: VectorClock
        var winners: [CommandEnvelope]
    }

    /// What a received part did.
    private enum Assembled: Hashable, Sendable {
        /// Kept; more parts are to come.
        case kept
        /// The last part: the snapshot, verified.
        case complete(Snapshot)
        /// Not kept (another transfer is under way, or the part repeats one already here).
        case ignored
        /// The parts do not make a snapshot that can be true; the transfer was dropped.
        case rejected(String)
    }

    private struct Assembly: Sendable {
        var from: Member
        var snapshot: UInt64
        var count: UInt8
        var lamport: UInt64
        var parts: [UInt8: StatePart]
        var lastPartAt: MonotonicInstant

        /// The parts still wanted: the first missing one, and a mask of the 32 from it.
        var wanted: (base: UInt8, mask: UInt32) {
            guard let first = (0..<count).first(where: { parts[$0] == nil }) else { return (0, 0) }
            // In Int: a base past 223 plus 32 does not fit a UInt8.
            let end = min(Int(count), Int(first) + 32)
            let mask = (Int(first)..<end).reduce(UInt32(0)) { mask, index in
                parts[UInt8(index)] == nil ? mask | (1 << UInt32(index - Int(first))) : mask
            }
            return (first, mask)
        }
    }

    @inline(__always) var settings: Settings { sharedSettings.value }
    private let sharedSettings: SharedSettings
    private var assembly: Assembly?
    /// The last request this agent sent: to whom, and when.
    private var requested: (peer: Member, at: MonotonicInstant)?
    /// When a snapshot last went unasked to each peer (answering a nack for commands no longer
    /// stored). At most `Settings.peersMax` entries; the longest-quiet is evicted first.
    private var sentUnaskedAt: [PeerID: MonotonicInstant] = [:]

    init(settings: Settings) { self.sharedSettings = SharedSettings(settings) }

    var isAssembling: Bool { assembly != nil }

    // MARK: Making snapshots

    /// The parts of a snapshot of `frontier` and `winners`, carrying `messages` (message commands
    /// the receiver has not delivered), each part's payload at most `payloadBytesMax`.
    /// Deterministic: the same state gives the same parts and id, so a transfer can be resumed
    /// part by part. Winners come newest first, then messages oldest first; what does not fit in
    /// `WireFormat.statePartsMax` parts (or alone in one) is left out, from the end.
    static func parts(
        frontier: VectorClock, lamport: UInt64, winners: [CommandEnvelope], messages: [CommandEnvelope] = [],
        payloadBytesMax: Int
    ) -> [StatePart] {
        let room = payloadBytesMax - WireFormat.statePartOverheadBytes
        let entryBytes = 16
        var parts: [StatePart] = []
        var entries = frontier.sorted[...]
        func stripped(_ command: CommandEnvelope) -> CommandEnvelope {
            var stripped = command
            stripped.dependencies = VectorClock()
            return stripped
        }
        var queue =
            (winners.map(stripped).ordered { $0.orderKey > $1.orderKey }
            + messages.map(stripped).ordered { $0.orderKey < $1.orderKey })[...]
        while !entries.isEmpty || !queue.isEmpty || parts.isEmpty, parts.count < WireFormat.statePartsMax {
            var used = 0
            var slice = VectorClock()
            while let entry = entries.first, slice.count < WireFormat.vectorClockEntriesMax, used + entryBytes <= room {
                slice[entry.member] = entry.count
                used += entryBytes
                entries.removeFirst()
            }
            var chosen: [CommandEnvelope] = []
            while let winner = queue.first, chosen.count < 255 {
                let size = WireFormat.stateWinnerBytes(winner)
                if used + size <= room {
                    chosen.append(winner)
                    used += size
                    queue.removeFirst()
                } else if used == 0 || size > room {
                    queue.removeFirst()  // it fits in no part: left out
                } else {
                    break
                }
            }
            parts.append(
                StatePart(snapshot: 0, index: 0, count: 0, lamport: lamport, frontier: slice, winners: chosen))
        }
        let count = UInt8(parts.count)
        var content: [UInt8] = []
        for index in parts.indices {
            parts[index].index = UInt8(index)
            parts[index].count = count
            var writer = ByteWriter(capacity: 256)
            WireFormat.writeStatePart(parts[index], into: &writer)
            content += writer.bytes
        }
        let id = max(1, fnv1a64(content))
        for index in parts.indices { parts[index].snapshot = id }
        return parts
    }

    /// The parts of `parts` a request asks for: all, unless it names this very snapshot.
    static func answer(_ request: StateRequest, with parts: [StatePart]) -> [StatePart] {
        guard request.snapshot != 0, request.wanted != 0, request.snapshot == parts.first?.snapshot else {
            return parts
        }
        return parts.filter {
            $0.index >= request.base && $0.index - request.base < 32
                && request.wanted & (1 << UInt32($0.index - request.base)) != 0
        }
    }

    // MARK: Answering

    /// A member asks for this agent's snapshot (or the parts of it still wanted): the parts go
    /// out within its repair budget, and a part that does not fit waits for the request that
    /// resumes the transfer.
    mutating func onStateRequest(
        _ request: StateRequest, from peer: PeerID, source: Source, framing: Framing, budgets: inout RepairBudgets,
        now: MonotonicInstant
    ) -> [Output] {
        let parts = Self.parts(
            frontier: source.frontier, lamport: source.lamport, winners: source.winners, messages: source.messages,
            payloadBytesMax: framing.payloadBytesMax(in: settings.datagramBytesMax))
        var sent: [StatePart] = []
        for part in Self.answer(request, with: parts) {
            guard budgets.spend(framing.bytes(.state(part)), to: peer, now: now) else { break }
            sent.append(part)
        }
        return sent.isEmpty ? [] : [.send(sent, to: peer)]
    }

    /// A nack from member `peer` (whose last digest was `peerDigest`) that asks for commands this
    /// agent delivered but no longer stores (compacted, evicted, or adopted in a snapshot): only
    /// the state can bring them, and it goes unasked to a peer that only a snapshot will serve
    /// well, one that has nothing yet (a newcomer) or asks for more than
    /// `stateTransferAfterMissing`. A peer missing a few commands is left to repair them from a
    /// member that stores them (a snapshot would stand for them, messages included, and this
    /// agent may lack those messages itself); if none can, it asks for the state after
    /// `repairStallBeforeState`. At most one unasked snapshot per peer per `stateRequestHoldoff`.
    mutating func onNack(
        _ ranges: [MissingRange], from peer: PeerID, peerDigest: VectorClock, log: CausalLog, source: () -> Source,
        framing: Framing, budgets: inout RepairBudgets, now: MonotonicInstant
    ) -> [Output] {
        // In Int64: a range spans up to 2^32 counters, more than a 32-bit Int holds (wasm32).
        let count = ranges.reduce(Int64(0)) { $0 &+ Int64($1.to - $1.from) &+ 1 }
        guard peerDigest.isEmpty || count > Int64(settings.stateTransferAfterMissing),
            !ranges.allSatisfy({ log.storesAll($0) }), maySendUnasked(to: peer, now: now)
        else { return [] }
        return onStateRequest(
            StateRequest(), from: peer, source: source(), framing: framing, budgets: &budgets, now: now)
    }

    /// Whether a snapshot may go unasked to `peer` now (at most one per `stateRequestHoldoff`).
    private mutating func maySendUnasked(to peer: PeerID, now: MonotonicInstant) -> Bool {
        if let last = sentUnaskedAt[peer], now - last < settings.stateRequestHoldoff { return false }
        sentUnaskedAt.makeRoom(for: peer, limit: settings.peersMax) { $0 }
        sentUnaskedAt[peer] = now
        return true
    }

    // MARK: Asking

    /// `peer`'s digest shows more missing than repair brings quickly (`Ordering.onDigest`): ask
    /// for its whole snapshot, if a request may go out now: none while a transfer is under way
    /// and moving, none sooner than `stateRequestHoldoff` after the last.
    mutating func onBehind(_ peer: Member, now: MonotonicInstant) -> [Output] {
        if let assembly, now - assembly.lastPartAt < settings.stateTransferTimeout { return [] }
        if let requested, now - requested.at < settings.stateRequestHoldoff { return [] }
        assembly = nil
        requested = (peer, now)
        return [.request(StateRequest(), to: peer.id)]
    }

    /// A stalled transfer: the request that resumes it (the parts still wanted); one stalled for
    /// `stateTransferTimeout` is dropped.
    mutating func tick(now: MonotonicInstant) -> [Output] {
        guard let assembly else { return [] }
        if now - assembly.lastPartAt >= settings.stateTransferTimeout {
            self.assembly = nil
            return []
        }
        guard now - assembly.lastPartAt >= settings.stateRequestHoldoff,
            requested.map({ now - $0.at >= settings.stateRequestHoldoff }) ?? true
        else { return [] }
        requested = (assembly.from, now)
        let (base, mask) = assembly.wanted
        return [.request(StateRequest(snapshot: assembly.snapshot, wanted: mask, base: base), to: assembly.from.id)]
    }

    mutating func onPeerLeft(_ peer: PeerID) {
        if assembly?.from.id == peer { assembly = nil }
        if requested?.peer.id == peer { requested = nil }
        sentUnaskedAt[peer] = nil
    }

    mutating func reset() {
        assembly = nil
        requested = nil
        sentUnaskedAt.removeAll()
    }

    // MARK: Receiving

    /// A snapshot part from member `sender`, whose last digest was `senderDigest` and whose clock
    /// is `offsetNanos` ahead of ours (`nil`: unknown, the snapshot cannot be read and is
    /// dropped). `log` is this agent's: a frontier entry further ahead of both it and the
    /// sender's digest than `stateFrontierAheadMax` is a forged jump that would make this agent
    /// skip an origin's real commands.
    mutating func onStatePart(
        _ part: StatePart, from sender: Member, senderDigest: VectorClock, offsetNanos: Int64?, log: CausalLog,
        now: MonotonicInstant
    ) -> [Output] {
        guard let offsetNanos else { return [.drop(.stateNotWanted, "the sender's clock is not known yet")] }
        let aheadMax = UInt64(settings.stateFrontierAheadMax)
        let assembled = assemble(part, from: sender, now: now) { member, counter in
            UInt64(counter) <= UInt64(max(senderDigest[member], log.count(of: member))) + aheadMax
        }
        switch assembled {
        case .kept: return []
        case .ignored: return [.drop(.stateNotWanted, "another transfer is under way, or a repeated part")]
        case .rejected(let detail): return [.drop(.badState, detail)]
        case .complete(let snapshot): return [.adopt(snapshot, ClockSource(peer: sender.id, offsetNanos: offsetNanos))]
        }
    }

    /// Keeps a part of the transfer under way. `isPlausible` says whether a frontier entry can be
    /// true.
    private mutating func assemble(
        _ part: StatePart, from sender: Member, now: MonotonicInstant, isPlausible: (Member, UInt32) -> Bool
    ) -> Assembled {
        if var current = assembly, current.from == sender, current.snapshot == part.snapshot {
            guard part.count == current.count, part.lamport == current.lamport else {
                assembly = nil
                return .rejected("parts of snapshot \(String(part.snapshot, radix: 16)) disagree")
            }
            guard current.parts[part.index] == nil else { return .ignored }
            current.parts[part.index] = part
            current.lastPartAt = now
            assembly = current
        } else {
            // Another sender's transfer, still moving, is not interrupted (two answers
            // interleaved would never complete); the same sender's newer snapshot replaces its older.
            if let current = assembly, current.from != sender,
                now - current.lastPartAt < settings.stateRequestHoldoff
            {
                return .ignored
            }
            assembly = Assembly(
                from: sender, snapshot: part.snapshot, count: part.count, lamport: part.lamport,
                parts: [part.index: part], lastPartAt: now)
        }
        guard let complete = assembly, complete.parts.count == Int(complete.count) else { return .kept }
        assembly = nil
        requested = nil
        var frontier = VectorClock()
        var winners: [CommandEnvelope] = []
        for index in 0..<complete.count {
            guard let part = complete.parts[index] else { return .kept }
            for entry in part.frontier.entries {
                guard frontier[entry.key] == 0 else {
                    return .rejected("frontier entry \(entry.key) in two parts")
                }
                guard isPlausible(entry.key, entry.value) else {
                    return .rejected("frontier entry \(entry.key):\(entry.value) is implausibly far ahead")
                }
                frontier[entry.key] = entry.value
            }
            winners += part.winners
        }
        for winner in winners where winner.dot.counter > frontier[winner.dot.origin] {
            return .rejected("command \(winner.dot) beyond the frontier")
        }
        return .complete(
            Snapshot(
                from: sender, id: complete.snapshot, lamport: complete.lamport, frontier: frontier, winners: winners))
    }
}

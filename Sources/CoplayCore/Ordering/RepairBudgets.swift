/// The repair bytes each peer may still be sent: command repairs (`Ordering`) and snapshot parts
/// (`StateTransfer`) draw on one budget per peer, so that a nack or a state request with a
/// forged source cannot make this agent a reflector. `Settings.repairBytesPerSecondPerPeer`,
/// refilled continuously, at most one second's worth. At most `Settings.peersMax` entries; the
/// longest-quiet is evicted first.
struct RepairBudgets: Sendable {
    private let rate: Int
    private let peersMax: Int
    private var buckets: [PeerID: (bytes: Int, at: MonotonicInstant)] = [:]

    init(settings: Settings) {
        rate = settings.repairBytesPerSecondPerPeer
        peersMax = settings.peersMax
    }

    /// The bytes `peer` may be sent now; makes room for its entry.
    mutating func available(to peer: PeerID, now: MonotonicInstant) -> Int {
        guard let bucket = buckets[peer] else {
            buckets.makeRoom(for: peer, limit: peersMax) { $0.at }
            return rate
        }
        let refill = Int(min(Double(rate), Double(rate) * max(0, (now - bucket.at).seconds)))
        return min(rate, bucket.bytes + refill)
    }

    /// What is left for `peer` after a reckoning at `now`.
    mutating func set(_ bytes: Int, for peer: PeerID, now: MonotonicInstant) { buckets[peer] = (bytes, now) }

    /// Takes `bytes` from `peer`'s budget, if it holds them.
    mutating func spend(_ bytes: Int, to peer: PeerID, now: MonotonicInstant) -> Bool {
        let budget = available(to: peer, now: now)
        set(budget >= bytes ? budget - bytes : budget, for: peer, now: now)
        return budget >= bytes
    }

    mutating func forget(_ peer: PeerID) { buckets[peer] = nil }
    mutating func reset() { buckets.removeAll() }
}

extension Dictionary where Key == PeerID {
    /// Makes room for `key` in a table of at most `limit` entries, one per peer: if the key is
    /// new and the table full, the entry `lastUsed` calls oldest goes (ties by id, so every agent
    /// evicts alike). The one eviction rule of the per-peer tables (nacks, repair budgets,
    /// digests heard, unasked snapshots).
    mutating func makeRoom(for key: PeerID, limit: Int, lastUsed: (Value) -> MonotonicInstant) {
        guard self[key] == nil, count >= limit,
            let oldest = self.min(by: { (lastUsed($0.value), $0.key) < (lastUsed($1.value), $1.key) })
        else { return }
        self[oldest.key] = nil
    }
}

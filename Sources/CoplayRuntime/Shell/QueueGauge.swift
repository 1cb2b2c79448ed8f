import Synchronization

/// A count of items in flight between threads, with a ceiling: lines read from an external
/// player on its reader's thread and not yet handled by the shell.
final class QueueGauge: Sendable {
    private let queued = Atomic<Int>(0)
    private let drops = Atomic<Int>(0)

    /// Counts one more item, or refuses (and counts a drop) at `limit`.
    func enter(limit: Int) -> Bool {
        if queued.wrappingAdd(1, ordering: .relaxed).newValue > limit {
            queued.wrappingSubtract(1, ordering: .relaxed)
            drops.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func leave() { queued.wrappingSubtract(1, ordering: .relaxed) }
    var dropped: Int { drops.load(ordering: .relaxed) }
}

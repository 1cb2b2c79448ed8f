/// A min-heap of timed items; ties are broken by insertion order, so a run is deterministic. The
/// simulation's queue of events, and the forwarding hub's of frames waiting for their instant.
public struct EventQueue<Item> {
    private var heap: [(at: Int64, order: UInt64, item: Item)] = []
    private var inserted: UInt64 = 0

    public init() {}

    public var count: Int { heap.count }
    public var nextTime: Int64? { heap.first?.at }

    public mutating func push(_ item: Item, at time: Int64) {
        inserted += 1
        heap.append((time, inserted, item))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    public mutating func pop() -> (at: Int64, item: Item)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, precedes(left, smallest) { smallest = left }
            if right < heap.count, precedes(right, smallest) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return (top.at, top.item)
    }

    /// Earlier first; at one instant, in the order scheduled. (Spelled out: a tuple comparison
    /// costs a metadata lookup per call in a debug build, and this runs for every event.)
    private func precedes(_ a: Int, _ b: Int) -> Bool {
        heap[a].at < heap[b].at || (heap[a].at == heap[b].at && heap[a].order < heap[b].order)
    }
}

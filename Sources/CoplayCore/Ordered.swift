/// The core's one sort, for every ordering it makes (peers by id, entries by key, delays).
///
/// Stable, as the standard library's `sorted` is, so the order is the same. It exists for the
/// browser's module: there (Embedded Swift) every `sorted(by:)` is compiled again for each element
/// type and each comparison, and the core's 26 sorts came to 34 KB of the module's code. Here the
/// merging is written once, on indices, and each call site adds only the comparison.
extension Sequence {
    /// The elements in the order `precedes` gives them; elements neither precedes keep their order.
    func ordered(by precedes: (Element, Element) -> Bool) -> [Element] {
        let elements = Array(self)
        return stableOrder(count: elements.count) { precedes(elements[$0], elements[$1]) }.map { elements[$0] }
    }
}

extension Sequence where Element: Comparable {
    /// The elements in ascending order.
    func ordered() -> [Element] { ordered(by: <) }
}

/// The indices `0..<count` in a stable order: a bottom-up merge sort, O(n log n) comparisons.
@inline(never)
func stableOrder(count: Int, by precedes: (Int, Int) -> Bool) -> [Int] {
    var order = Array(0..<count)
    guard count > 1 else { return order }
    var merged = order
    var width = 1
    while width < count {
        var low = 0
        while low < count {
            let middle = min(low + width, count)
            let high = min(middle + width, count)
            var (left, right, next) = (low, middle, low)
            while left < middle, right < high {
                // The right run's element goes first only when it strictly precedes: stable.
                if precedes(order[right], order[left]) {
                    merged[next] = order[right]
                    right += 1
                } else {
                    merged[next] = order[left]
                    left += 1
                }
                next += 1
            }
            while left < middle {
                merged[next] = order[left]
                (left, next) = (left + 1, next + 1)
            }
            while right < high {
                merged[next] = order[right]
                (right, next) = (right + 1, next + 1)
            }
            low = high
        }
        swap(&order, &merged)
        width *= 2
    }
    return order
}

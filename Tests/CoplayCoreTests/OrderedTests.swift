import Testing

@testable import CoplayCore

/// The core's one sort (`Ordered.swift`) gives what the standard library's stable `sorted` gives,
/// ties included, for lengths around each merge width.
@Suite struct OrderedTests {
    @Test func orderedIsTheStandardLibrarysStableSort() {
        var random = SplitMix64(seed: 41)
        for count in [0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 100, 257, 1000] {
            for _ in 0..<20 {
                // Few distinct keys: many ties, whose order only a stable sort keeps.
                let pairs = (0..<count).map { index in (key: Int(random.next() % 5), index: index) }
                let ours = pairs.ordered { $0.key < $1.key }
                let theirs = pairs.sorted { $0.key < $1.key }
                #expect(ours.map(\.index) == theirs.map(\.index), "\(count) elements")
            }
        }
        #expect([3, 1, 2].ordered() == [1, 2, 3])
        #expect(Set([5, 4, 9]).ordered() == [4, 5, 9])
    }
}

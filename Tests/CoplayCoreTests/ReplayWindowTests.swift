import Testing

@testable import CoplayCore

/// The anti-replay window on its own: what it accepts once, what it refuses, and how far back it
/// reaches.
@Suite struct ReplayWindowTests {
    private let sender = Member(id: PeerID(0xB0B), incarnation: Incarnation(7))

    /// A speaker's frame through the relay's fan-out arrives after hundreds of its later-numbered
    /// unicasts (answers to other viewers' probes): it is taken once, and its copy refused. With
    /// the 64 numbers of IPsec's usual window it was refused outright (32 viewers of 10,000 lost a
    /// pause until a beacon's repair, `coplay-bench party-scale`).
    @Test func aFrameHundredsOfNumbersBehind_isTakenOnce() {
        var windows = ReplayWindows(windowsMax: 4, width: Settings().replayWindowWidth)
        func take(_ sequence: UInt32) -> Bool { windows.accept(sequence, from: sender) }
        #expect(windows.width >= 4_000)
        #expect(take(10_000))
        #expect(take(10_634))
        #expect(take(10_000 + 1), "634 behind")
        #expect(!take(10_000 + 1), "its copy")
        #expect(!take(10_634))
        // Past the width: too old to tell from a replay.
        #expect(!take(10_634 - windows.width))
        #expect(take(10_634 - windows.width + 1))

        var narrow = ReplayWindows(windowsMax: 4, width: 64)
        let first = narrow.accept(10_634, from: sender)
        let behind = narrow.accept(10_001, from: sender)
        #expect(first && !behind, "IPsec's 64 refuse it")
    }

    /// The ring's blocks stand for new numbers once the highest has moved past them: a number seen
    /// a whole ring ago does not make its successor a block later look seen; a jump past the whole
    /// ring forgets everything behind.
    @Test func theRing_clearsWhatItPassesOver() {
        var windows = ReplayWindows(windowsMax: 4, width: 128)
        func take(_ sequence: UInt32) -> Bool { windows.accept(sequence, from: sender) }
        let ring = UInt32(windows.width) + 64
        #expect(take(5))
        #expect(take(5 + ring), "the same block of the ring, a ring later")
        #expect(take(5 + ring - 1))
        #expect(take(5 + 10 * ring))
        #expect(!take(5 + ring), "far behind now")
        for sequence in (5 + 10 * ring - 100)..<(5 + 10 * ring) {
            #expect(take(sequence), "\(sequence) never seen")
        }
        #expect(!take(5 + 10 * ring - 50))
    }
}

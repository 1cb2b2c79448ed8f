/// Anti-replay (RFC 4303 §3.4.3, IPsec's sliding window): per sender membership, the highest
/// sequence number accepted and which of the numbers below it, within the window, were seen.
/// Used only with a group key, when sequence numbers cannot be forged.
///
/// The window is a ring of 64-bit blocks (RFC 6479): advancing clears the blocks passed over,
/// with no shifting of the whole bitmap. It spans `(blocks - 1) × 64` numbers below the highest.
/// A sender numbers every datagram it sends, to anyone, in one sequence: a receiver sees a sparse
/// part of it, and a frame that took a slower path (a relay's fan-out to thousands) arrives after
/// later-numbered ones that took a quick one (unicast answers to others' probes meanwhile).
struct ReplayWindows: Sendable {
    /// The window of one (id, incarnation).
    struct Window: Sendable {
        var highest: UInt32
        /// Bit `n % 64` of block `(n / 64) % blocks.count` set: sequence `n` was accepted.
        var blocks: [UInt64]
        var lastUsed: UInt64
    }

    /// Blocks per window, a power of two.
    let blockCount: Int
    /// Windows kept at most; the least recently used is forgotten first.
    let windowsMax: Int
    private var windows: [Member: Window] = [:]
    private var clock: UInt64 = 0

    /// `width`: sequence numbers a window spans, rounded up to a power of two of 64-bit blocks
    /// (one more block than the span, which the ring's advance clears).
    init(windowsMax: Int, width: Int = 64) {
        self.windowsMax = windowsMax
        var blocks = 2
        while (blocks - 1) * 64 < width, blocks < 1 << 16 { blocks *= 2 }
        blockCount = blocks
    }

    var count: Int { windows.count }
    /// How many numbers below the highest a window still tells apart.
    var width: UInt32 { UInt32((blockCount - 1) * 64) }

    /// Whether `sequence` from `sender` is new (and now recorded); false for a replay or one too
    /// old to tell.
    mutating func accept(_ sequence: UInt32, from sender: Member) -> Bool {
        clock &+= 1
        let mask = blockCount - 1
        let block = Int(sequence >> 6) & mask
        let bit = UInt64(1) << UInt64(sequence & 63)
        // Taken out of the table while it changes: a copy left in it would make each change copy
        // the window's blocks (512 bytes) for every datagram.
        guard var window = windows.removeValue(forKey: sender) else {
            if windows.count >= windowsMax, let oldest = windows.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                windows[oldest.key] = nil
            }
            var blocks = [UInt64](repeating: 0, count: blockCount)
            blocks[block] = bit
            windows[sender] = Window(highest: sequence, blocks: blocks, lastUsed: clock)
            return true
        }
        window.lastUsed = clock
        defer { windows[sender] = window }
        if sequence > window.highest {
            // The blocks passed over are cleared: they now stand for numbers not seen yet.
            let passed = min(Int((sequence >> 6) - (window.highest >> 6)), blockCount)
            if passed > 0 {
                for step in 1...passed { window.blocks[(Int(window.highest >> 6) + step) & mask] = 0 }
            }
            window.highest = sequence
        } else if window.highest - sequence >= width {
            return false
        }
        guard window.blocks[block] & bit == 0 else { return false }
        window.blocks[block] |= bit
        return true
    }
}

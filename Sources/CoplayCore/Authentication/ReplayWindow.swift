/// Anti-replay (RFC 4303 §3.4.3, IPsec's sliding window): per sender membership, the highest
/// sequence number accepted and which of the `width` numbers below it were seen. Used only with
/// a group key, when sequence numbers cannot be forged.
struct ReplayWindows: Sendable {
    /// The window of one (id, incarnation).
    struct Window: Sendable {
        var highest: UInt32
        /// Bit i set: sequence `highest - i` was accepted.
        var seen: UInt64
        var lastUsed: UInt64
    }

    /// Bits per window (the bitmap's width).
    static let width: UInt32 = 64
    /// Windows kept at most; the least recently used is forgotten first.
    let windowsMax: Int
    private var windows: [Member: Window] = [:]
    private var clock: UInt64 = 0

    init(windowsMax: Int) { self.windowsMax = windowsMax }

    var count: Int { windows.count }

    /// Whether `sequence` from `sender` is new (and now recorded); false for a replay or one too
    /// old to tell.
    mutating func accept(_ sequence: UInt32, from sender: Member) -> Bool {
        clock &+= 1
        guard var window = windows[sender] else {
            if windows.count >= windowsMax, let oldest = windows.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                windows[oldest.key] = nil
            }
            windows[sender] = Window(highest: sequence, seen: 1, lastUsed: clock)
            return true
        }
        window.lastUsed = clock
        defer { windows[sender] = window }
        if sequence > window.highest {
            let shift = sequence - window.highest
            window.seen = shift >= Self.width ? 1 : window.seen << UInt64(shift) | 1
            window.highest = sequence
            return true
        }
        let age = window.highest - sequence
        guard age < Self.width else { return false }
        let bit = UInt64(1) << UInt64(age)
        guard window.seen & bit == 0 else { return false }
        window.seen |= bit
        return true
    }
}

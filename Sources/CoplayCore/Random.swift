/// SplitMix64: a small, fast, seedable generator. The core and the simulation draw all their
/// randomness from one of these, seeded by the caller, so a run can be replayed from its seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A uniformly distributed Double in [0, 1).
    public mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// `base` scaled by a uniform factor in [1 - fraction, 1 + fraction].
    public mutating func jittered(_ base: Duration, fraction: Double) -> Duration {
        let factor = 1 + fraction * (2 * nextUnit() - 1)
        return .nanoseconds(Int64(saturating: Double(base.nanoseconds) * factor))
    }
}

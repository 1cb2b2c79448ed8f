import CoplayCore

/// How the simulated network mistreats datagrams. Each copy of a datagram to each receiver is
/// treated independently: dropped with `lossProbability`, duplicated with
/// `duplicationProbability`, and delayed by `baseDelay` plus an exponentially distributed
/// `jitterMean` (so datagrams reorder whenever jitter exceeds their spacing).
public struct NetworkConditions: Hashable, Sendable {
    public var lossProbability: Double
    public var duplicationProbability: Double
    public var baseDelay: Duration
    public var jitterMean: Duration

    public init(
        lossProbability: Double = 0, duplicationProbability: Double = 0, baseDelay: Duration = .microseconds(100),
        jitterMean: Duration = .microseconds(50)
    ) {
        self.lossProbability = lossProbability
        self.duplicationProbability = duplicationProbability
        self.baseDelay = baseDelay
        self.jitterMean = jitterMean
    }

    public static let perfect = NetworkConditions()

    /// A wired LAN: 50–300 µs base delay, 5–100 µs mean jitter; if `lossy`, up to 20% loss and
    /// 10% duplication.
    public static func randomLAN(lossy: Bool, using random: inout SplitMix64) -> NetworkConditions {
        NetworkConditions(
            lossProbability: lossy ? random.nextUnit() * 0.2 : 0,
            duplicationProbability: lossy ? random.nextUnit() * 0.1 : 0,
            baseDelay: .microseconds(50 + Int64(random.next() % 250)),
            jitterMean: .microseconds(5 + Int64(random.next() % 95)))
    }
}

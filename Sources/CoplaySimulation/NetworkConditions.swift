import CoplayCore

/// How the simulated network mistreats datagrams. Each copy of a datagram to each receiver is
/// treated independently: dropped with `lossProbability`, duplicated with
/// `duplicationProbability`, and delayed by `baseDelay` plus an exponentially distributed
/// `jitterMean` (so datagrams reorder whenever jitter exceeds their spacing). With a `link`, the
/// link's model (`LinkModel`: a wired switch, one Wi-Fi access point, two sites) decides each
/// datagram's delay and its own losses instead of `baseDelay` and `jitterMean`; the loss and
/// duplication above still apply on top.
public struct NetworkConditions: Hashable, Sendable {
    public var lossProbability: Double
    /// The link between the nodes, modelled as the forwarding hub models it; nil: the plain
    /// delay and jitter below.
    public var link: LinkKind?
    /// Beacons between the access point's DTIM beacons (`link == .wifi`), 1 to 3.
    public var dtimPeriod = 1
    public var duplicationProbability: Double
    public var baseDelay: Duration
    public var jitterMean: Duration

    public init(
        lossProbability: Double = 0, duplicationProbability: Double = 0, baseDelay: Duration = .microseconds(100),
        jitterMean: Duration = .microseconds(50), link: LinkKind? = nil, dtimPeriod: Int = 1
    ) {
        self.link = link
        self.dtimPeriod = dtimPeriod
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

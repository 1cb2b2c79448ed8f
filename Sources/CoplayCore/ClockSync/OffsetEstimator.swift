/// The current belief about one peer's wall clock relative to ours.
public struct OffsetEstimate: Hashable, Sendable {
    /// The peer's wall clock minus ours at `at`, in nanoseconds.
    public var offsetNanos: Int64
    /// How much faster the peer's clock runs than ours, in parts per million (0 until known).
    public var driftPPM: Double
    /// The round-trip delay of the sample the estimate rests on, in nanoseconds.
    public var delayNanos: Int64
    /// Samples behind the estimate.
    public var sampleCount: Int
    /// The instant (our monotonic clock) the estimate is for.
    public var at: MonotonicInstant

    /// The peer's wall clock reading that corresponds to our wall clock reading `ours`.
    public func peerWall(forLocal ours: WallInstant) -> WallInstant { WallInstant(unixNanos: ours.unixNanos &+ offsetNanos) }
}

/// Learns a peer's clock offset and drift from a bounded history of probe samples.
///
/// - Offset: the minimum-delay sample among the most recent `filterWindow` (NTP's clock filter),
///   carried forward to the asked-for instant by the drift.
/// - Drift: a least-squares line through the "good" samples (delay within a small margin of the
///   history's minimum) over `driftWindow`, once they span `driftMinimumSpan`, clamped to
///   ±`driftMaxPPM`.
public struct OffsetEstimator: Hashable, Sendable {
    public private(set) var samples: [OffsetSample] = []
    private let filterWindow: Int
    private let samplesMax: Int
    private let driftWindow: Duration
    private let driftMinimumSpan: Duration
    private let driftMaxPPM: Double

    public init(settings: Settings) {
        filterWindow = max(1, settings.offsetFilterWindow)
        samplesMax = max(filterWindow, settings.offsetSamplesMax)
        driftWindow = settings.driftWindow
        driftMinimumSpan = settings.driftMinimumSpan
        driftMaxPPM = settings.driftMaxPPM
    }

    public var sampleCount: Int { samples.count }

    public mutating func add(_ sample: OffsetSample) {
        samples.append(sample)
        if samples.count > samplesMax { samples.removeFirst(samples.count - samplesMax) }
        if let newest = samples.last {
            let horizon = newest.receivedAt - driftWindow
            if let firstKept = samples.firstIndex(where: { $0.receivedAt >= horizon }), firstKept > 0,
                samples.count - firstKept >= filterWindow
            {
                samples.removeFirst(firstKept)
            }
        }
    }

    /// The estimate for instant `now`, or nil before the first sample.
    public func estimate(at now: MonotonicInstant) -> OffsetEstimate? {
        guard let best = samples.suffix(filterWindow).min(by: { $0.delayNanos < $1.delayNanos }) else { return nil }
        let drift = driftPPM()
        let elapsedNanos = Double(now.nanos &- best.receivedAt.nanos)
        let carried = best.offsetNanos &+ Int64((elapsedNanos * drift / 1_000_000).rounded())
        return OffsetEstimate(
            offsetNanos: carried, driftPPM: drift, delayNanos: best.delayNanos, sampleCount: samples.count, at: now)
    }

    /// The fitted drift in ppm, or 0 while the good samples span too short a time.
    public func driftPPM() -> Double {
        guard let minimumDelay = samples.map(\.delayNanos).min() else { return 0 }
        let margin = max(minimumDelay / 2, 20_000)
        let good = samples.filter { $0.delayNanos <= minimumDelay + margin }
        guard let first = good.first, let last = good.last, good.count >= 3,
            last.receivedAt - first.receivedAt >= driftMinimumSpan
        else { return 0 }
        // Least squares of offset (ns) over time (ns since the first good sample).
        let xs = good.map { Double($0.receivedAt.nanos &- first.receivedAt.nanos) }
        let ys = good.map { Double($0.offsetNanos &- first.offsetNanos) }
        let count = Double(good.count)
        let meanX = xs.reduce(0, +) / count
        let meanY = ys.reduce(0, +) / count
        var covariance = 0.0
        var variance = 0.0
        for (x, y) in zip(xs, ys) {
            covariance += (x - meanX) * (y - meanY)
            variance += (x - meanX) * (x - meanX)
        }
        guard variance > 0 else { return 0 }
        let ppm = covariance / variance * 1_000_000
        return min(max(ppm, -driftMaxPPM), driftMaxPPM)
    }
}

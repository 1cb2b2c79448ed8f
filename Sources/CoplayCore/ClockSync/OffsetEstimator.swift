/// The current belief about one peer's wall clock relative to ours.
public struct OffsetEstimate: Hashable, Sendable {
    /// The peer's wall clock minus ours at `at`, in nanoseconds.
    public var offsetNanos: Int64
    /// How much faster the peer's clock runs than ours, in parts per million (0 until known).
    public var driftPPM: Double
    /// The smallest round-trip delay among the samples behind the estimate, in nanoseconds: the
    /// estimate's error from path asymmetry is at most half of it.
    public var delayNanos: Int64
    /// Samples behind the estimate.
    public var sampleCount: Int
    /// The instant (our monotonic clock) the estimate is for.
    public var at: MonotonicInstant
    /// How far the estimate may be off, NTP's way: half the round trip the quickest crossings
    /// each way add up to (the path's asymmetry can be no larger) plus the dispersion since
    /// (15 ppm of the age while the drift is not known, 2 ppm once it is).
    public var errorNanos: Int64 = 0
    /// The drift's standard error, in ppm: nil while the drift is not known (the history spans
    /// less than `Settings.driftMinimumSpan`, and `driftPPM` is 0 for want of a fit). A few
    /// seconds of samples with microseconds of jitter leave tens of ppm of doubt, and a display
    /// says so rather than show a guess as a measurement.
    public var driftErrorPPM: Double?

    /// The peer's wall clock reading that corresponds to our wall clock reading `ours`.
    public func peerWall(forLocal ours: WallInstant) -> WallInstant {
        WallInstant(unixNanos: ours.unixNanos &+ offsetNanos)
    }
}

/// Learns a peer's clock offset and drift from a bounded history of probe samples.
///
/// - Offset: from the most recent `filterWindow` samples, each way's smallest delay taken on its
///   own: every sample's offset θ and round trip δ give its forward (θ + δ/2) and backward
///   (θ − δ/2) one-way readings; the largest backward and the smallest forward bracket the
///   offset, which lies at their middle (all carried to the newest sample by the drift, then to
///   the asked-for instant). Where one sample must be quick both ways at once (NTP's clock filter:
///   the minimum-delay sample), each way here needs one quick crossing among the window's: on
///   the air's jitter (every hop 1.5 ms plus exponential jitter) the error's 90th percentile
///   over 16 samples is under half the filter's (`OffsetEstimatorTests` prints both). When the
///   two do not bracket anything (a drift not yet learnt), the minimum-delay sample is used, as
///   NTP does.
/// - Drift: once the history spans `driftMinimumSpan`, the slope of a weighted least-squares
///   line through the history (at most `driftWindow` old), each sample weighted down by the
///   square of its delay in excess of the minimum; clamped to ±`driftMaxPPM`.
///   (Evaluating the line itself instead of carrying the recent best sample forward was tried:
///   on loopback, where the true drift is zero, it doubled the p99 error, `coplay bench clock`.)
/// - A low-delay sample far off the line (more than a millisecond and four times its delay)
///   means the peer's clock was stepped: the history restarts from that sample.
public struct OffsetEstimator: Hashable, Sendable {
    public private(set) var samples: [OffsetSample] = []
    public private(set) var stepsDetected = 0
    private let filterWindow: Int
    private let jitteryFilterWindow: Int
    private let jitteryPathSpreadNanos: Int64
    private let samplesMax: Int
    private let driftWindow: Duration
    private let driftMinimumSpan: Duration
    private let driftMaxPPM: Double
    /// The clock filter's chosen sample and the drift line, as of the last sample: an estimate
    /// is read for every input (each timeline on a peer's clock is re-mapped through it), a
    /// sample comes a few times a second.
    private var best: OffsetSample?
    private var line: Line?
    /// The offset the window's one-way minima give, at the newest sample, and the round trip
    /// they add up to (the error bound is half of it).
    private var bracket: Bracket?

    struct Bracket: Hashable {
        var offsetNanos: Int64
        var at: MonotonicInstant
        var roundTripNanos: Int64
    }

    public init(settings: Settings) {
        filterWindow = max(1, settings.offsetFilterWindow)
        jitteryFilterWindow = max(filterWindow, settings.offsetFilterWindowJittery)
        jitteryPathSpreadNanos = settings.jitteryPathSpread.nanoseconds
        samplesMax = max(jitteryFilterWindow, settings.offsetSamplesMax)
        driftWindow = settings.driftWindow
        driftMinimumSpan = settings.driftMinimumSpan
        driftMaxPPM = settings.driftMaxPPM
    }

    public var sampleCount: Int { samples.count }

    public mutating func add(_ sample: OffsetSample) {
        if let line, let minimumDelay = samples.map({ $0.delayNanos }).min(),
            sample.delayNanos <= minimumDelay + max(minimumDelay / 2, 20_000)
        {
            let deviation = abs(sample.offsetNanos - line.offset(at: sample.receivedAt))
            if deviation > max(1_000_000, 4 * sample.delayNanos) {
                stepsDetected += 1
                samples.removeAll()
            }
        }
        samples.append(sample)
        if samples.count > samplesMax { samples.removeFirst(samples.count - samplesMax) }
        let horizon = sample.receivedAt - driftWindow
        if let firstKept = samples.firstIndex(where: { $0.receivedAt >= horizon }), firstKept > 0,
            samples.count - firstKept >= filterWindow
        {
            samples.removeFirst(firstKept)
        }
        let recent = samples.suffix(window)
        best = recent.min(by: { $0.delayNanos < $1.delayNanos })
        line = fit()
        bracket = Self.bracket(recent, slopePPM: line?.slopePPM ?? 0, at: sample.receivedAt)
    }

    /// Each way's smallest delay among `window`, on its own (see the type's comment).
    static func bracket(_ window: ArraySlice<OffsetSample>, slopePPM: Double, at reference: MonotonicInstant)
        -> Bracket?
    {
        var forwardMin = Int64.max
        var backwardMax = Int64.min
        for sample in window {
            let elapsed = Double(reference.nanos &- sample.receivedAt.nanos)
            let offset = sample.offsetNanos &+ Int64(saturating: (elapsed * slopePPM / 1_000_000).rounded())
            forwardMin = min(forwardMin, offset &+ sample.delayNanos / 2)
            backwardMax = max(backwardMax, offset &- sample.delayNanos / 2)
        }
        guard forwardMin != .max, forwardMin >= backwardMax else { return nil }
        let roundTrip = forwardMin &- backwardMax
        return Bracket(offsetNanos: backwardMax &+ roundTrip / 2, at: reference, roundTripNanos: roundTrip)
    }

    /// The estimate for instant `now`, or nil before the first sample.
    public func estimate(at now: MonotonicInstant) -> OffsetEstimate? {
        guard let best else { return nil }
        let (offset, since, roundTrip) =
            bracket.map { ($0.offsetNanos, $0.at, $0.roundTripNanos) } ?? (
                best.offsetNanos, best.receivedAt, best.delayNanos
            )
        let elapsedNanos = Double(now.nanos &- since.nanos)
        func bound(dispersionPPM: Double) -> Int64 {
            roundTrip / 2 + Int64(saturating: (max(0, elapsedNanos) * dispersionPPM / 1_000_000).rounded())
        }
        guard let line else {
            return OffsetEstimate(
                offsetNanos: offset, driftPPM: 0, delayNanos: best.delayNanos, sampleCount: samples.count,
                at: now, errorNanos: bound(dispersionPPM: 15))
        }
        let carried = offset &+ Int64(saturating: (elapsedNanos * line.slopePPM / 1_000_000).rounded())
        return OffsetEstimate(
            offsetNanos: carried, driftPPM: line.slopePPM, delayNanos: best.delayNanos, sampleCount: samples.count,
            at: now, errorNanos: bound(dispersionPPM: 2), driftErrorPPM: line.slopeErrorPPM)
    }

    /// Whether the recent round trips spread as on a jittery path (see `window`).
    public var isJittery: Bool { window > filterWindow }

    /// How many recent samples the clock filter looks at: `offsetFilterWindow`, or
    /// `offsetFilterWindowJittery` when the recent round trips' median is more than
    /// `jitteryPathSpread` above their minimum.
    var window: Int {
        let recent = samples.suffix(filterWindow).map({ $0.delayNanos }).ordered()
        guard let minimum = recent.first, recent[recent.count / 2] - minimum > jitteryPathSpreadNanos else {
            return filterWindow
        }
        return jitteryFilterWindow
    }

    /// The fitted drift in ppm, or 0 while the history spans too short a time.
    public func driftPPM() -> Double { line?.slopePPM ?? 0 }

    struct Line: Hashable {
        var originNanos: Int64
        var meanXNanos: Double
        var meanYNanos: Double
        var slopePPM: Double
        /// The slope's standard error (weighted least squares), in ppm.
        var slopeErrorPPM: Double
        var minimumDelayNanos: Int64

        func offset(at instant: MonotonicInstant) -> Int64 {
            let x = Double(instant.nanos &- originNanos)
            let y = meanYNanos + (x - meanXNanos) * slopePPM / 1_000_000
            return Int64(saturating: y.rounded())
        }
    }

    /// Least squares through the lower-delay half of the history, once it spans `driftMinimumSpan`.
    func fit() -> Line? {
        guard samples.count >= 3, let first = samples.first, let last = samples.last,
            last.receivedAt - first.receivedAt >= driftMinimumSpan
        else { return nil }
        // Weighted least squares: a sample's weight falls with the square of its excess delay
        // over the history's minimum (in units of `delayScale`), so low-delay samples dominate
        // while the others still pin down the slope.
        let minimumDelay = samples.map({ $0.delayNanos }).min()!
        let delayScale = Double(max(20_000, minimumDelay / 10))
        let origin = first.receivedAt.nanos
        let anchor = first.offsetNanos
        var sumW = 0.0
        var sumX = 0.0
        var sumY = 0.0
        var points: [(x: Double, y: Double, w: Double)] = []
        points.reserveCapacity(samples.count)
        for sample in samples {
            let excess = Double(sample.delayNanos - minimumDelay) / delayScale
            let weight = 1 / (1 + excess * excess)
            let x = Double(sample.receivedAt.nanos &- origin)
            let y = Double(sample.offsetNanos &- anchor)
            points.append((x, y, weight))
            sumW += weight
            sumX += weight * x
            sumY += weight * y
        }
        let meanX = sumX / sumW
        let meanY = sumY / sumW
        var covariance = 0.0
        var variance = 0.0
        for point in points {
            covariance += point.w * (point.x - meanX) * (point.y - meanY)
            variance += point.w * (point.x - meanX) * (point.x - meanX)
        }
        guard variance > 0 else { return nil }
        let fitted = covariance / variance
        var residuals = 0.0
        for point in points {
            let residual = point.y - meanY - fitted * (point.x - meanX)
            residuals += point.w * residual * residual
        }
        // The weights are relative: the slope's variance is the residuals' weighted variance over
        // the abscissae's, divided by the degrees of freedom of the effective number of points
        // (the low-delay samples carry most of the weight, so fewer than all of them count).
        let sumW2 = points.reduce(0.0) { $0 + $1.w * $1.w }
        let effective = sumW * sumW / sumW2
        let slopeError = (residuals / variance / max(1, effective - 2)).squareRoot() * 1_000_000
        let slope = min(max(fitted * 1_000_000, -driftMaxPPM), driftMaxPPM)
        return Line(
            originNanos: origin, meanXNanos: meanX, meanYNanos: meanY + Double(anchor), slopePPM: slope,
            slopeErrorPPM: slopeError.isFinite ? slopeError : driftMaxPPM, minimumDelayNanos: minimumDelay)
    }
}

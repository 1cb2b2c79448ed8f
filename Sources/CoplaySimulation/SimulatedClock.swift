import CoplayCore

/// One simulated machine's two clocks as functions of true time (nanoseconds since the
/// simulation began): each runs `driftPPM` fast, the wall clock is `offsetNanos` off the true
/// wall clock, and the monotonic clock starts at an arbitrary origin.
public struct SimulatedClock: Hashable, Sendable {
    /// The true Unix time at simulated time zero.
    public static let trueEpochUnixNanos: Int64 = 1_780_000_000_000_000_000

    public var offsetNanos: Int64
    public var driftPPM: Double
    public var monotonicOriginNanos: Int64

    public init(offsetNanos: Int64 = 0, driftPPM: Double = 0, monotonicOriginNanos: Int64 = 1_000_000_000) {
        self.offsetNanos = offsetNanos
        self.driftPPM = driftPPM
        self.monotonicOriginNanos = monotonicOriginNanos
    }

    /// A clock up to ±500 ms off and ±50 ppm fast, with a random monotonic origin.
    public static func random(using random: inout SplitMix64) -> SimulatedClock {
        SimulatedClock(
            offsetNanos: Int64(random.nextUnit() * 1e9) - 500_000_000, driftPPM: random.nextUnit() * 100 - 50,
            monotonicOriginNanos: Int64(random.next() % 1_000_000_000_000))
    }

    /// Local elapsed nanoseconds for `trueNanos` of true time.
    private func local(_ trueNanos: Int64) -> Int64 { trueNanos + Int64(Double(trueNanos) * driftPPM / 1_000_000) }

    public func timestamp(atTrue trueNanos: Int64) -> Timestamp {
        Timestamp(
            monotonic: MonotonicInstant(nanos: monotonicOriginNanos + local(trueNanos)),
            wall: WallInstant(unixNanos: Self.trueEpochUnixNanos + offsetNanos + local(trueNanos)))
    }

    /// The true time at which this clock's monotonic reading is `instant` (inverse of `timestamp`).
    public func trueNanos(atMonotonic instant: MonotonicInstant) -> Int64 {
        let localNanos = Double(instant.nanos - monotonicOriginNanos)
        return Int64((localNanos / (1 + driftPPM / 1_000_000)).rounded(.up))
    }

    /// This wall clock minus `other`'s, in nanoseconds, at true time `trueNanos`.
    public func wallOffset(to other: SimulatedClock, atTrue trueNanos: Int64) -> Int64 {
        other.timestamp(atTrue: trueNanos).wall.unixNanos - timestamp(atTrue: trueNanos).wall.unixNanos
    }
}

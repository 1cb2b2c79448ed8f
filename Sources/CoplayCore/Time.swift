/// Time as the core sees it: two clocks, kept apart.
///
/// - `MonotonicInstant` comes from the local monotonic clock. It measures intervals on this
///   machine (round trips, silence, timers) and is never sent to or compared with another
///   machine's monotonic clock.
/// - `WallInstant` is the agent's own wall clock (Unix epoch, possibly skewed for tests). It is
///   the clock whose readings are exchanged with peers, and whose offset to each peer's wall
///   clock the clock-sync estimator learns.
///
/// The core never reads either clock: every input carries a `Timestamp` taken by the shell.

/// An instant on the local monotonic clock, in nanoseconds from an arbitrary origin.
public struct MonotonicInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanos: Int64
    public init(nanos: Int64) { self.nanos = nanos }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanos < rhs.nanos }
    public static func + (lhs: Self, rhs: Duration) -> Self { Self(nanos: lhs.nanos &+ rhs.nanoseconds) }
    public static func - (lhs: Self, rhs: Duration) -> Self { Self(nanos: lhs.nanos &- rhs.nanoseconds) }
    /// The interval from `rhs` to `lhs`.
    public static func - (lhs: Self, rhs: Self) -> Duration { .nanoseconds(lhs.nanos &- rhs.nanos) }
    public var description: String { "mono+\(nanos)ns" }
}

/// An instant on the agent's wall clock: nanoseconds since the Unix epoch, as this agent reads it.
public struct WallInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var unixNanos: Int64
    public init(unixNanos: Int64) { self.unixNanos = unixNanos }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.unixNanos < rhs.unixNanos }
    public static func + (lhs: Self, rhs: Duration) -> Self { Self(unixNanos: lhs.unixNanos &+ rhs.nanoseconds) }
    public static func - (lhs: Self, rhs: Self) -> Duration { .nanoseconds(lhs.unixNanos &- rhs.unixNanos) }
    public var description: String { "wall \(unixNanos)ns" }
}

/// Both clocks read at one moment by the shell (or the simulator).
public struct Timestamp: Hashable, Sendable {
    public var monotonic: MonotonicInstant
    public var wall: WallInstant
    public init(monotonic: MonotonicInstant, wall: WallInstant) {
        self.monotonic = monotonic
        self.wall = wall
    }

    /// The same two clocks `interval` later (both advance together between readings).
    public func advanced(by interval: Duration) -> Timestamp {
        Timestamp(monotonic: monotonic + interval, wall: wall + interval)
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating at the bounds of `Int64`.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }

    /// The duration in (fractional) milliseconds, for reports.
    public var milliseconds: Double { Double(nanoseconds) / 1_000_000 }

    /// The duration in (fractional) seconds.
    public var seconds: Double { Double(nanoseconds) / 1e9 }

    /// `seconds` as a duration, total: clamped to ±2^62 ns (146 years), NaN as zero. Every
    /// conversion of a computed or received number of seconds goes through here.
    public static func seconds(saturating seconds: Double) -> Duration {
        .nanoseconds(Int64(saturating: seconds * 1e9, limit: 1 << 62))
    }
}

extension Int64 {
    /// `value` rounded toward zero and clamped to ±`limit`; NaN gives 0. Never traps.
    public init(saturating value: Double, limit: Int64 = .max >> 1) {
        guard !value.isNaN else {
            self = 0
            return
        }
        let bound = Double(limit)
        self = value >= bound ? limit : value <= -bound ? -limit : Int64(value)
    }
}

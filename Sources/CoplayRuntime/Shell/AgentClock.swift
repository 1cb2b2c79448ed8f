import CoplayCore
import Glibc

/// The only place coplay reads real time. The wall clock can be skewed on purpose
/// (`--clock-skew-ms`) so that one machine can test clock-offset estimation; `trueUnixNanos`
/// undoes the skew for fields that must stay true (`sampledAtUnixNanos`, event times).
public struct AgentClock: Sendable {
    public let skewNanos: Int64

    public init(skewNanos: Int64 = 0) { self.skewNanos = skewNanos }

    public func now() -> Timestamp {
        Timestamp(
            monotonic: MonotonicInstant(nanos: Self.read(CLOCK_MONOTONIC)),
            wall: WallInstant(unixNanos: Self.read(CLOCK_REALTIME) &+ skewNanos))
    }

    /// The real (unskewed) Unix time of an agent wall-clock reading.
    public func trueUnixNanos(of wall: WallInstant) -> Int64 { wall.unixNanos &- skewNanos }

    /// The real Unix time now.
    public static func trueUnixNanosNow() -> Int64 { read(CLOCK_REALTIME) }

    static func read(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

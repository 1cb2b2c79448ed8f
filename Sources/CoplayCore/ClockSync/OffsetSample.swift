/// One NTP-style measurement of a peer's wall clock against ours.
///
/// With T1 our transmit time, T2 the peer's receive time, T3 the peer's transmit time and T4
/// our receive time (RFC 5905):
///   offset θ = ((T2 − T1) + (T3 − T4)) / 2      (peer's wall clock minus ours)
///   delay  δ = (T4 − T1) − (T3 − T2)            (round trip minus the peer's holding time)
/// An asymmetric path errs by at most δ/2, which is why the smallest-delay sample is trusted most.
///
/// T4 is not read from our wall clock: it is T1 plus the round trip measured on our monotonic
/// clock, so a step of our wall clock between T1 and T4 cannot corrupt the sample.
public struct OffsetSample: Hashable, Sendable {
    /// When the reply arrived, on our monotonic clock.
    public var receivedAt: MonotonicInstant
    /// θ, in nanoseconds: the peer's wall clock minus ours.
    public var offsetNanos: Int64
    /// δ, in nanoseconds.
    public var delayNanos: Int64

    public init(receivedAt: MonotonicInstant, offsetNanos: Int64, delayNanos: Int64) {
        self.receivedAt = receivedAt
        self.offsetNanos = offsetNanos
        self.delayNanos = delayNanos
    }

    /// Why a reply yields no sample.
    public enum Rejection: String, Error, Sendable {
        /// The round trip is negative or longer than the probe timeout.
        case implausibleRoundTrip
        /// The responder claims to have held the probe for longer than the whole round trip.
        case implausibleHoldTime
        /// The offset is larger than any clock is believed to be off (`WireFormat.offsetNanosMax`).
        case implausibleOffset
    }

    /// The sample a probe reply gives, or why it gives none.
    public static func measure(
        reply: ClockProbeReply, sentAt: MonotonicInstant, receivedAt: MonotonicInstant, timeout: Duration
    ) -> Result<OffsetSample, Rejection> {
        let roundTripNanos = receivedAt.nanos &- sentAt.nanos
        guard roundTripNanos >= 0, roundTripNanos <= timeout.nanoseconds else { return .failure(.implausibleRoundTrip) }
        let holdNanos = reply.transmitWall.unixNanos &- reply.receiveWall.unixNanos
        guard holdNanos >= 0, holdNanos <= roundTripNanos else { return .failure(.implausibleHoldTime) }
        let t1 = reply.originWall.unixNanos
        let t4 = t1 &+ roundTripNanos
        let forward = reply.receiveWall.unixNanos.subtractingReportingOverflow(t1)
        let backward = reply.transmitWall.unixNanos.subtractingReportingOverflow(t4)
        guard !forward.overflow, !backward.overflow else { return .failure(.implausibleHoldTime) }
        let sum = forward.partialValue.addingReportingOverflow(backward.partialValue)
        guard !sum.overflow else { return .failure(.implausibleHoldTime) }
        let offset = sum.partialValue / 2
        guard offset.magnitude <= WireFormat.offsetNanosMax.magnitude else { return .failure(.implausibleOffset) }
        return .success(
            OffsetSample(receivedAt: receivedAt, offsetNanos: offset, delayNanos: roundTripNanos - holdNanos))
    }
}

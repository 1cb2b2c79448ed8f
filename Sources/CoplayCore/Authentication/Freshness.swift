/// Whether an authentic datagram is news: sent recently by its sender's clock, as this agent
/// reads that clock. A tag proves who made a datagram, not when; without this a datagram
/// recorded yesterday (an `end`, hellos that admit yesterday's members) passes the tag and, in a
/// new process whose replay windows start empty, the replay window too.
///
/// Every datagram of a keyed group carries its send time under the tag (`Datagram.sentAt`). Its
/// age on arrival is judged against the sender's clock where this agent has estimated it (the
/// offset of `ClockSync`, kept for a departed machine too), within a tight window: a transit
/// takes milliseconds, a relay's hundreds at most, and what is refused is sent again, fresh, by
/// the protocol's repair. Before any estimate (a newcomer's first hellos) only this agent's own
/// clock is there to judge by, and the window must also hold the two machines' clock difference:
/// `sentTimeUnsyncedMax`. A probe reply needs neither: it answers a probe of this agent's with
/// its random token, which no recording holds (`ClockSync` drops the rest as unexpected).
struct Freshness: Sendable {
    /// How old a datagram may be on arrival by the sender's estimated clock, and how far ahead of
    /// it; how far apart the sender's stamp and this agent's clock may be without an estimate.
    let ageMax: Duration
    let aheadMax: Duration
    let unsyncedMax: Duration

    init(settings: Settings) {
        ageMax = settings.sentTimeAgeMax
        aheadMax = settings.sentTimeAheadMax
        unsyncedMax = settings.sentTimeUnsyncedMax
    }

    /// Nil when a datagram sent at `sentAt` and received at `receivedAt` (this agent's clock) is
    /// fresh; else why not. `senderOffsetNanos`: the sender's clock minus this agent's, if known.
    /// Total arithmetic: any 64-bit stamp or estimate may arrive.
    func judge(sentAt: WallInstant?, receivedAt: WallInstant, senderOffsetNanos: Int64?) -> String? {
        guard let sentAt else { return "no send time, in a keyed group" }
        let senderNow = receivedAt.unixNanos.addingReportingOverflow(senderOffsetNanos ?? 0)
        let age = senderNow.partialValue.subtractingReportingOverflow(sentAt.unixNanos)
        guard !senderNow.overflow, !age.overflow else { return "a send time out of any range" }
        let (older, ahead) = senderOffsetNanos == nil ? (unsyncedMax, unsyncedMax) : (ageMax, aheadMax)
        if age.partialValue > older.nanoseconds {
            return
                "sent \(Self.seconds(age.partialValue.magnitude)) before it arrived, by \(Self.clock(senderOffsetNanos)); at most \(older) is news"
        }
        if age.partialValue < -ahead.nanoseconds {
            return
                "sent \(Self.seconds(age.partialValue.magnitude)) after it arrived, by \(Self.clock(senderOffsetNanos)): a clock that far off, or a forgery"
        }
        return nil
    }

    private static func clock(_ offset: Int64?) -> String {
        offset == nil ? "this agent's clock (the sender's is not measured yet)" : "the sender's measured clock"
    }

    private static func seconds(_ nanos: UInt64) -> String {
        let millis = nanos / 1_000_000
        return "\(millis / 1000).\(String(millis % 1000 + 1000).dropFirst()) s"
    }
}

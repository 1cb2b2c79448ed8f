/// Everything this agent knows about one live participant.
public struct PeerRecord: Hashable, Sendable {
    /// Whether the peer is being heard from.
    ///
    /// Legal transitions: `alive` → `suspected` after `Settings.suspectAfter` of silence;
    /// `suspected` → `alive` on any datagram from it; `suspected` → removed from the table
    /// after `Settings.deadAfter` of silence.
    public enum Liveness: Hashable, Sendable {
        case alive
        /// Silent since `lastHeard`; unicast probes go out every `Settings.suspectProbeInterval`.
        case suspected
    }

    public var member: Member
    public var name: String
    /// Where its unicast socket listens: the source address of its datagrams and the port it announced.
    public var endpoint: Endpoint
    public var firstSeen: MonotonicInstant
    public var lastHeard: MonotonicInstant
    public var liveness: Liveness = .alive
    public var clock: OffsetEstimator
    /// Set once the estimate has `Settings.offsetSamplesForSync` samples (reported once).
    public var isClockSynced = false
    /// Clock probes sent to it so far, which sets the spacing of the next.
    var probesSent = 0
    var nextProbeAt: MonotonicInstant
    /// Probes awaiting a reply: token → our monotonic send time. At most
    /// `Settings.outstandingProbesPerPeerMax`; the oldest are forgotten first.
    var outstandingProbes: [UInt64: MonotonicInstant] = [:]
    var lastHelloReplyAt: MonotonicInstant?
    /// Its current item, waiting and ready flags and suspensions, from its last announcement.
    public var item: String?
    public var isWaiting = false
    public var isReady = false
    public var suspensions: [String] = []
    /// The commands it had delivered, from its last announcement.
    public var digest = VectorClock()

    init(member: Member, name: String, endpoint: Endpoint, now: MonotonicInstant, settings: Settings) {
        self.member = member
        self.name = name
        self.endpoint = endpoint
        firstSeen = now
        lastHeard = now
        clock = OffsetEstimator(settings: settings)
        nextProbeAt = now
    }

    func info(now: MonotonicInstant) -> PeerInfo {
        var info = PeerInfo(
            member: member, name: name, endpoint: endpoint, isSuspected: liveness == .suspected,
            lastSeenAgo: now - lastHeard, offset: clock.estimate(at: now), isClockSynced: isClockSynced)
        info.item = item
        info.isWaiting = isWaiting
        info.isReady = isReady
        info.suspensions = suspensions
        return info
    }

    /// When the next clock probe is due after one more has been sent at `now`: the burst, then
    /// the warm-up cadence until enough samples have *arrived* (loss prolongs the warm-up rather
    /// than leaving the estimate thin), then the steady cadence.
    mutating func scheduleNextProbe(
        after now: MonotonicInstant, peerCount: Int, settings: Settings, random: inout SplitMix64
    ) {
        probesSent += 1
        let interval: Duration
        if probesSent < settings.probeBurstCount {
            interval = settings.probeBurstSpacing
        } else if clock.sampleCount < settings.probeBurstCount + settings.probeWarmupCount {
            interval = random.jittered(settings.probeWarmupInterval, fraction: settings.probeJitterFraction)
        } else {
            let budgeted = Duration.nanoseconds(Int64(Double(peerCount) / settings.probeExchangesPerSecondMax * 1e9))
            interval = random.jittered(max(settings.probeInterval, budgeted), fraction: settings.probeJitterFraction)
        }
        nextProbeAt = now + interval
    }
}

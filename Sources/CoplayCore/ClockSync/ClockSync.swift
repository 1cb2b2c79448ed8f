/// The clock offset to every peer: NTP-style probes over unicast (a burst when a peer is first
/// seen, a warm-up cadence until enough samples arrived, then a budgeted steady cadence; every
/// `suspectProbeInterval` while a peer is suspected, which doubles as the liveness check), the
/// estimators they feed, and the estimators of departed peers (the clock belongs to the machine:
/// it is restored if the peer comes back).
struct ClockSync: Sendable {
    /// Clock sync's view of one live peer.
    struct PeerClock: Hashable, Sendable {
        var member: Member
        var estimator: OffsetEstimator
        /// Set once the estimate has enough samples (`samplesForSync`; reported once).
        var isSynced = false
        var isSuspected = false
        /// Probes sent so far, which sets the spacing of the next.
        var probesSent = 0
        var nextProbeAt: MonotonicInstant
        /// Probes awaiting a reply: token → our monotonic send time. At most
        /// `Settings.outstandingProbesPerPeerMax`; the oldest are forgotten first.
        var outstanding: [UInt64: MonotonicInstant] = [:]
    }

    enum Output: Hashable, Sendable {
        /// Unicast this probe to the peer.
        case probe(PeerID, ClockProbe)
        /// A new sample arrived from the peer (commands waiting for its clock can be read now).
        case sampled(PeerID)
        /// The peer's estimate just became good enough to report.
        case synced(PeerID)
        case drop(DropReason, String)
    }

    let settings: Settings
    private(set) var peers: [PeerID: PeerClock] = [:]
    /// Estimators of peers that left, by id, restored if they come back. At most
    /// `Settings.retiredClocksMax`; the longest retired goes first.
    private var retired: [PeerID: OffsetEstimator] = [:]
    private var retiredOrder: [PeerID] = []
    init(settings: Settings) { self.settings = settings }

    /// The offset estimate for a peer's clock at `now`, live or departed.
    func estimate(of peer: PeerID, at now: MonotonicInstant) -> OffsetEstimate? {
        (peers[peer]?.estimator ?? retired[peer])?.estimate(at: now)
    }

    func isSynced(_ peer: PeerID) -> Bool { peers[peer]?.isSynced ?? false }

    /// A peer joined: its clock-sync burst starts at once.
    mutating func onPeerJoined(_ member: Member, now: Timestamp, random: inout SplitMix64) -> [Output] {
        var clock = PeerClock(
            member: member, estimator: OffsetEstimator(settings: settings), nextProbeAt: now.monotonic)
        if let estimator = retired.removeValue(forKey: member.id) {
            clock.estimator = estimator
            retiredOrder.removeAll { $0 == member.id }
        }
        let probe = sendProbe(to: &clock, now: now, random: &random)
        peers[member.id] = clock
        return [probe]
    }

    mutating func onPeerLeft(_ peer: PeerID) {
        guard let clock = peers.removeValue(forKey: peer), clock.estimator.sampleCount > 0 else { return }
        retired[peer] = clock.estimator
        retiredOrder.removeAll { $0 == peer }
        retiredOrder.append(peer)
        if retiredOrder.count > settings.retiredClocksMax { retired[retiredOrder.removeFirst()] = nil }
    }

    /// Left the session: live peers are forgotten (their estimators retired).
    mutating func stop() {
        for peer in peers.keys.sorted() { onPeerLeft(peer) }
    }

    /// The peer went quiet: probe it now, then every `suspectProbeInterval`.
    mutating func onSuspected(_ peer: PeerID, now: MonotonicInstant) {
        peers[peer]?.isSuspected = true
        peers[peer]?.nextProbeAt = now
    }

    /// The peer was heard again: back to its cadence, soon.
    mutating func onResponsive(_ peer: PeerID, at heardAt: MonotonicInstant) {
        guard var clock = peers[peer] else { return }
        clock.isSuspected = false
        clock.nextProbeAt = min(clock.nextProbeAt, heardAt + settings.probeWarmupInterval)
        peers[peer] = clock
    }

    /// Answers a probe with this agent's receive and transmit times.
    func reply(to probe: ClockProbe, receivedAt: Timestamp, now: Timestamp) -> ClockProbeReply {
        ClockProbeReply(
            token: probe.token, originWall: probe.originWall, receiveWall: receivedAt.wall, transmitWall: now.wall)
    }

    /// A reply to one of our probes.
    mutating func onProbeReply(_ reply: ClockProbeReply, from sender: Member, receivedAt: MonotonicInstant) -> [Output]
    {
        guard var clock = peers[sender.id], clock.member == sender else {
            return [.drop(.unknownSender, "probe reply from \(sender)")]
        }
        guard let sentAt = clock.outstanding.removeValue(forKey: reply.token) else {
            return [.drop(.unexpectedProbeReply, "token \(reply.token)")]
        }
        defer { peers[sender.id] = clock }
        switch OffsetSample.measure(
            reply: reply, sentAt: sentAt, receivedAt: receivedAt, timeout: settings.probeTimeout)
        {
        case .success(let sample):
            clock.estimator.add(sample)
            var out: [Output] = []
            if !clock.isSynced, clock.estimator.sampleCount >= samplesForSync {
                clock.isSynced = true
                out.append(.synced(sender.id))
            }
            out.append(.sampled(sender.id))
            return out
        case .failure(let rejection):
            return [.drop(.implausibleProbeReply, rejection.rawValue)]
        }
    }

    mutating func tick(now: Timestamp, random: inout SplitMix64) -> [Output] {
        var out: [Output] = []
        let expiry = now.monotonic - settings.probeTimeout
        for id in peers.keys.sorted() {
            guard var clock = peers[id] else { continue }
            clock.outstanding = clock.outstanding.filter { $0.value > expiry }
            if clock.nextProbeAt <= now.monotonic { out.append(sendProbe(to: &clock, now: now, random: &random)) }
            peers[id] = clock
        }
        return out
    }

    var nextWake: MonotonicInstant? { peers.values.map(\.nextProbeAt).min() }

    /// Probes in the burst to a new peer: `probeBurstCount` in a small group, fewer in a larger
    /// one (in proportion past `heartbeatFullRateGroupMax`), never fewer than a sync needs. When
    /// 64 agents start together, 8 probes from each to each made most of the join's storm.
    private var burstCount: Int {
        let full = max(1, settings.heartbeatFullRateGroupMax)
        return max(samplesForSync, settings.probeBurstCount * full / max(full, peers.count + 1))
    }

    /// Samples before an estimate is reported synchronised: `offsetSamplesForSync`, or in a group
    /// larger than `heartbeatFullRateGroupMax`, `offsetSamplesForSyncLargeGroup` (the warm-up
    /// goes on to the same number of samples either way).
    private var samplesForSync: Int {
        peers.count + 1 > settings.heartbeatFullRateGroupMax
            ? min(settings.offsetSamplesForSync, settings.offsetSamplesForSyncLargeGroup)
            : settings.offsetSamplesForSync
    }

    private mutating func sendProbe(to clock: inout PeerClock, now: Timestamp, random: inout SplitMix64) -> Output {
        // Unpredictable, so that a reply cannot be forged without having seen the probe.
        let token = random.next()
        if clock.outstanding.count >= settings.outstandingProbesPerPeerMax,
            let oldest = clock.outstanding.min(by: { $0.value < $1.value })
        {
            clock.outstanding[oldest.key] = nil
        }
        clock.outstanding[token] = now.monotonic
        clock.probesSent += 1
        clock.nextProbeAt = now.monotonic + nextInterval(for: clock, random: &random)
        return .probe(clock.member.id, ClockProbe(token: token, originWall: now.wall))
    }

    /// The spacing after the probe just sent: every `suspectProbeInterval` while suspected; else
    /// the burst, then the warm-up cadence until enough samples have *arrived* (loss prolongs the
    /// warm-up rather than leaving the estimate thin), then the steady cadence, stretched so that
    /// this agent starts at most `probeExchangesPerSecondMax` exchanges a second over all peers.
    private func nextInterval(for clock: PeerClock, random: inout SplitMix64) -> Duration {
        if clock.isSuspected { return settings.suspectProbeInterval }
        if clock.probesSent < burstCount { return settings.probeBurstSpacing }
        if clock.estimator.sampleCount < burstCount + settings.probeWarmupCount {
            return random.jittered(settings.probeWarmupInterval, fraction: settings.probeJitterFraction)
        }
        let budgeted = Duration.nanoseconds(
            Int64(Double(max(peers.count, 1)) / settings.probeExchangesPerSecondMax * 1e9))
        return random.jittered(max(settings.probeInterval, budgeted), fraction: settings.probeJitterFraction)
    }
}

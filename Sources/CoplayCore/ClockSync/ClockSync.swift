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
        /// The next probe is one of the burst to a new peer (set `probeBurstSpacing` after the
        /// last): the tick does not ration it, even if the group grew meanwhile.
        var isBurstProbeNext = false
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

    @inline(__always) var settings: Settings { sharedSettings.value }
    private var sharedSettings: SharedSettings
    private(set) var peers: [PeerID: PeerClock] = [:]
    /// Estimators of peers that left, by id, restored if they come back. At most
    /// `Settings.retiredClocksMax`; the longest retired goes first.
    private var retired: [PeerID: OffsetEstimator] = [:]
    private var retiredOrder: [PeerID] = []
    init(settings: Settings) { self.sharedSettings = SharedSettings(settings) }

    /// A viewer took a seat on the stage: its clocks are probed at a stage member's pace from now on.
    mutating func takeSeat(_ settings: SharedSettings) { sharedSettings = settings }

    /// The offset estimate for a peer's clock at `now`, live or departed.
    func estimate(of peer: PeerID, at now: MonotonicInstant) -> OffsetEstimate? {
        (peers[peer]?.estimator ?? retired[peer])?.estimate(at: now)
    }

    /// The estimate of a live peer's clock (not a departed one's): what a command's times are read by.
    func liveEstimate(of peer: PeerID, at now: MonotonicInstant) -> OffsetEstimate? {
        peers[peer]?.estimator.estimate(at: now)
    }

    /// How many samples of a live peer's clock have arrived.
    func sampleCount(of peer: PeerID) -> Int { peers[peer]?.estimator.sampleCount ?? 0 }

    func isSynced(_ peer: PeerID) -> Bool { peers[peer]?.isSynced ?? false }

    /// A peer as `peers` and the peer events show it: its record, and what is known of its clock.
    @inline(never) func info(of record: PeerRecord, at now: MonotonicInstant) -> PeerInfo {
        record.info(
            now: now, offset: estimate(of: record.member.id, at: now), isClockSynced: isSynced(record.member.id))
    }

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
        nextWake = min(nextWake ?? clock.nextProbeAt, clock.nextProbeAt)
        return [probe]
    }

    mutating func onPeerLeft(_ peer: PeerID) {
        guard let clock = peers.removeValue(forKey: peer) else { return }
        if nextWake == clock.nextProbeAt { refreshNextWake() }
        guard clock.estimator.sampleCount > 0 else { return }
        retired[peer] = clock.estimator
        retiredOrder.removeAll { $0 == peer }
        retiredOrder.append(peer)
        if retiredOrder.count > settings.retiredClocksMax { retired[retiredOrder.removeFirst()] = nil }
    }

    /// Left the session: live peers are forgotten (their estimators retired).
    mutating func stop() {
        for peer in peers.keys.ordered() { onPeerLeft(peer) }
        nextWake = nil
    }

    /// The peer went quiet: probe it now, then every `suspectProbeInterval`.
    mutating func onSuspected(_ peer: PeerID, now: MonotonicInstant) {
        guard peers[peer] != nil else { return }
        peers[peer]?.isSuspected = true
        peers[peer]?.nextProbeAt = now
        nextWake = min(nextWake ?? now, now)
    }

    /// The peer was heard again: back to its cadence, soon.
    mutating func onResponsive(_ peer: PeerID, at heardAt: MonotonicInstant) {
        guard var clock = peers[peer] else { return }
        clock.isSuspected = false
        clock.nextProbeAt = min(clock.nextProbeAt, heardAt + settings.probeWarmupInterval)
        peers[peer] = clock
        nextWake = min(nextWake ?? clock.nextProbeAt, clock.nextProbeAt)
    }

    /// Answers a probe with this agent's receive and transmit times.
    func reply(to probe: ClockProbe, receivedAt: Timestamp, now: Timestamp) -> ClockProbeReply {
        ClockProbeReply(
            token: probe.token, originWall: probe.originWall, receiveWall: receivedAt.wall, transmitWall: now.wall)
    }

    /// A reply to one of our probes.
    mutating func onProbeReply(
        _ reply: ClockProbeReply, from sender: Member, receivedAt: MonotonicInstant, now: Timestamp,
        random: inout SplitMix64
    ) -> [Output] {
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
            if !clock.isSynced, isUsable(clock.estimator) {
                clock.isSynced = true
                out.append(.synced(sender.id))
                if !clock.isSuspected, clock.probesSent >= burstCount {
                    resumeWarmup(of: &clock, at: receivedAt, random: &random)
                }
            } else if isCrowded, !clock.isSynced, !clock.isSuspected,
                !clock.outstanding.values.contains(where: { $0 > sentAt })
            {
                // In a crowd, a round trip too slow to trust, and no later probe on its way:
                // another probe at once, as a burst would have sent it (not through the tick,
                // whose routine probes are rationed), until one is fast enough or
                // `offsetSamplesForSync` have arrived. (An older probe lost does not hold it up.)
                let previous = clock.nextProbeAt
                out.append(sendProbe(to: &clock, now: now, random: &random))
                moved(clock, from: previous)
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
        // Only the peers with a probe due or one to forget, in a fixed order (replayable runs).
        let due = peers.compactMap { id, clock in
            clock.nextProbeAt <= now.monotonic || clock.outstanding.values.contains { $0 <= expiry } ? id : nil
        }
        var routine = 0
        for id in due.ordered() {
            guard var clock = peers[id] else { continue }
            clock.outstanding = clock.outstanding.filter { $0.value > expiry }
            if clock.nextProbeAt <= now.monotonic {
                // Warm-up and steady probes come a few at a time: many due at once means this
                // agent was stalled (or its ticks late), and they are spread over their interval
                // rather than sent in a burst (256 agents: one woken from a 10 s pause sent 255
                // probes at once). The burst to a new peer and probes to suspects are not held
                // back; the burst is the one planned when its previous probe went out: a group
                // that grew past `offsetSingleSampleGroupMin` during a burst of two made its
                // second probe routine, and among 64 started together the rationed ones waited
                // up to 500 ms.
                if !clock.isSuspected, !clock.isBurstProbeNext {
                    routine += 1
                    if routine > settings.routineProbesPerTickMax {
                        let interval = nextInterval(for: clock, random: &random)
                        clock.nextProbeAt =
                            now.monotonic + .nanoseconds(Int64(random.nextUnit() * Double(interval.nanoseconds)))
                        peers[id] = clock
                        continue
                    }
                }
                out.append(sendProbe(to: &clock, now: now, random: &random))
            }
            peers[id] = clock
        }
        if !due.isEmpty { refreshNextWake() }
        return out
    }

    /// The burst is over and its replies made the estimate usable: the probe set for
    /// `probeWarmupInterval` after the burst, in case the burst lost one, is not needed, and the
    /// warm-up cadence takes over from here (it only moves the probe later). Among 64 agents
    /// started together the replies took longer than that interval to come back, and the unneeded
    /// probe went to almost every peer: a third of the start's probes and replies.
    private mutating func resumeWarmup(of clock: inout PeerClock, at now: MonotonicInstant, random: inout SplitMix64) {
        let previous = clock.nextProbeAt
        clock.nextProbeAt = max(previous, now + nextInterval(for: clock, random: &random))
        moved(clock, from: previous)
    }

    /// `clock`'s next probe moved from `previous`, outside the tick: `nextWake` follows it
    /// (searched again over the peers only when it was this probe and moved later).
    private mutating func moved(_ clock: PeerClock, from previous: MonotonicInstant) {
        if nextWake.map({ clock.nextProbeAt < $0 }) ?? true {
            nextWake = clock.nextProbeAt
        } else if nextWake == previous, clock.nextProbeAt != previous {
            peers[clock.member.id] = clock
            refreshNextWake()
        }
    }

    /// The earliest probe due: kept up to date by every change to a peer's `nextProbeAt` (it is
    /// asked after every input; a pass over the peers each time made a heartbeat's cost grow
    /// with the group).
    private(set) var nextWake: MonotonicInstant?

    private mutating func refreshNextWake() {
        var earliest: MonotonicInstant?
        for clock in peers.values where earliest.map({ clock.nextProbeAt < $0 }) ?? true {
            earliest = clock.nextProbeAt
        }
        nextWake = earliest
    }

    /// Probes in the burst to a new peer: `probeBurstCount` in a small group, fewer in a larger
    /// one (in proportion past `heartbeatFullRateGroupMax`), never fewer than a sync needs. When
    /// 64 agents start together, 8 probes from each to each made most of the join's storm.
    private var burstCount: Int {
        if isCrowded { return 1 }
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

    /// A group of at least `offsetSingleSampleGroupMin` participants, where one fast round trip
    /// is enough to report a clock synchronised.
    private var isCrowded: Bool { peers.count + 1 >= settings.offsetSingleSampleGroupMin }

    /// Whether an estimate is good enough to report synchronised: `offsetSamplesForSync` samples
    /// whatever their round trips, or fewer — one in a crowd, `samplesForSync` in a large group —
    /// if one of them took at most `offsetSingleSampleDelayMax` (the offset's error is at most
    /// half its round trip). Among 64 started together, two samples whatever their delay left one
    /// clock 10.7 ms off (a round trip of 21 ms, both times), and among 32 one 5.2 ms off. Past
    /// `heartbeatFullRateGroupMax` the burst still holds `offsetSamplesForSync` probes up to 32
    /// participants, so the slow case waits for the burst's later replies, not for more probes.
    private func isUsable(_ estimator: OffsetEstimator) -> Bool {
        if estimator.sampleCount >= settings.offsetSamplesForSync { return true }
        guard estimator.sampleCount >= (isCrowded ? 1 : samplesForSync),
            let fastest = estimator.samples.lazy.map({ $0.delayNanos }).min()
        else { return false }
        return fastest <= settings.offsetSingleSampleDelayMax.nanoseconds
    }

    /// The spacing of the probes to a suspected peer: `suspectProbeInterval` up to
    /// `heartbeatFullRateGroupMax` participants; beyond, longer by the square of the group's
    /// scale but never so long that fewer than three fit between suspicion and departure. Every
    /// member probes a suspect, so at 50 ms a starved agent that 95 others suspected received
    /// 1,900 probes a second and could never catch up (the scale simulation's 96 agents); now a
    /// suspect receives at most about 150 a second from the whole group, whatever its size.
    private var suspectProbeInterval: Duration {
        let scale = max(1, Double(peers.count + 1) / Double(max(1, settings.heartbeatFullRateGroupMax)))
        guard scale > 1 else { return settings.suspectProbeInterval }
        let silences = settings.silences(scale: scale)
        let threeChances = (silences.dead - silences.suspect) / 3
        return max(settings.suspectProbeInterval, min(settings.suspectProbeInterval * (scale * scale), threeChances))
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
        clock.isBurstProbeNext = !clock.isSuspected && clock.probesSent < burstCount
        clock.nextProbeAt = now.monotonic + nextInterval(for: clock, random: &random)
        return .probe(clock.member.id, ClockProbe(token: token, originWall: now.wall))
    }

    /// The spacing after the probe just sent: every `suspectProbeInterval` while suspected; else
    /// the burst, then the warm-up cadence until enough samples have *arrived* (loss prolongs the
    /// warm-up rather than leaving the estimate thin), then the steady cadence, stretched so that
    /// this agent starts at most `probeExchangesPerSecondMax` exchanges a second over all peers.
    private func nextInterval(for clock: PeerClock, random: inout SplitMix64) -> Duration {
        if clock.isSuspected { return suspectProbeInterval }
        if clock.probesSent < burstCount { return settings.probeBurstSpacing }
        // Not synchronised yet (a probe or reply of the burst was lost): every
        // `probeWarmupInterval`, outside the budget, which is for refining estimates (among 64,
        // a peer whose burst lost one probe waited up to 8 s for its first offset), at most
        // `probesUntilSyncMax` times.
        if !clock.isSynced, clock.probesSent < burstCount + settings.probesUntilSyncMax {
            return random.jittered(settings.probeWarmupInterval, fraction: settings.probeJitterFraction)
        }
        if clock.estimator.sampleCount < burstCount + settings.probeWarmupCount {
            // Within a budget over all peers that shrinks as the group grows (RTCP's rule again):
            // 255 peers each warmed up every 500 ms were 510 probes a second from every agent of
            // 256, for as long as the warm-ups lasted.
            let full = Double(max(1, settings.heartbeatFullRateGroupMax))
            let budget = max(
                settings.probeExchangesPerSecondMax,
                settings.probeWarmupExchangesPerSecondMax * min(1, full / Double(peers.count + 1)))
            let budgeted = Duration.nanoseconds(Int64(Double(max(peers.count, 1)) / budget * 1e9))
            return spaced(floor: settings.probeWarmupInterval, budgeted: budgeted, random: &random)
        }
        // On a jittery path (the air) each estimate needs more crossings to find the quick ones,
        // and the drift more samples to be told from the jitter.
        let jittery = clock.estimator.isJittery
        let budget = jittery ? settings.probeExchangesPerSecondMaxJittery : settings.probeExchangesPerSecondMax
        let budgeted = Duration.nanoseconds(Int64(Double(max(peers.count, 1)) / budget * 1e9))
        return spaced(
            floor: jittery ? settings.probeIntervalJittery : settings.probeInterval, budgeted: budgeted,
            random: &random)
    }

    /// The longer of `floor` and `budgeted`, with the usual jitter; in a group larger than
    /// `heartbeatFullRateGroupMax` where the budget makes the interval longer, the budgeted
    /// interval times a random number between 0.5 and 1.5 (RTCP's randomisation, RFC 3550
    /// §6.3.1). With the usual ±10%, the peers whose clocks all synchronised in the same second
    /// of a large group's start came due together again, 32 s later among 128: each agent probed
    /// all its peers within 6 s, 20 a second against a budget of 4. (A small group keeps the
    /// steadier cadence: its few peers do not bunch up, and a long gap leaves an estimate to the
    /// drift for longer.)
    private func spaced(floor: Duration, budgeted: Duration, random: inout SplitMix64) -> Duration {
        guard budgeted > floor, peers.count + 1 > settings.heartbeatFullRateGroupMax else {
            return random.jittered(max(floor, budgeted), fraction: settings.probeJitterFraction)
        }
        return .nanoseconds(Int64(Double(budgeted.nanoseconds) * (0.5 + random.nextUnit())))
    }
}

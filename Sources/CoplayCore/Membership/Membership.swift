/// Who is in the session: the announce burst and heartbeats this agent sends, the table of live
/// peers built from theirs, suspicion and death by silence, graceful leaves, and the memory of
/// memberships that ended (so their reordered datagrams cannot bring them back).
///
/// Inputs are announcements, leaves, any sign of life and timer ticks; outputs say who joined,
/// changed, went quiet, came back or left, and when to announce.
struct Membership: Sendable {
    enum Output: Hashable, Sendable {
        case joined(PeerRecord)
        case left(PeerRecord, PeerDeparture)
        case changed(PeerRecord)
        case unresponsive(PeerRecord)
        case responsive(PeerRecord)
        /// Multicast this agent's announcement: a hello (burst) or a heartbeat.
        case announce(isHello: Bool)
        /// Unicast a hello answering another's hello to this endpoint.
        case replyHello(to: Endpoint)
        case drop(DropReason, String)

        /// Whether the peer table changed: who is in it, or what one of them announced.
        var changesPeers: Bool {
            switch self {
            case .joined, .left, .changed: true
            case .unresponsive, .responsive, .announce, .replyHello, .drop: false
            }
        }
    }

    @inline(__always) var settings: Settings { sharedSettings.value }
    private var sharedSettings: SharedSettings
    /// The live participants other than this agent, by id. At most `Settings.peersMax`.
    private(set) var peers: [PeerID: PeerRecord] = [:]
    /// The peers whose last announcement asked for time-critical datagrams by unicast (a subset
    /// of `peers`).
    private(set) var unicastWanted: Set<PeerID> = []
    /// When the remaining hellos of the announce burst are due, earliest first.
    private var announcesDue: [MonotonicInstant] = []
    private var nextHeartbeatAt: MonotonicInstant?
    /// Until when heartbeats go at the full rate whatever the group's size: after a stall.
    private var fullRateUntil: MonotonicInstant?
    /// Until when heartbeats go at the joining rate: the first seconds after joining.
    private var joiningUntil: MonotonicInstant?
    /// What the next heartbeat was scheduled from: the last one (or joining), and the interval
    /// then, unjittered.
    private var heartbeatCountsFrom: (MonotonicInstant, Duration)?
    /// Memberships that ended gracefully or were replaced, with when to forget them. At most
    /// `Settings.departedMax`; the one forgotten soonest goes first.
    private var departed: [Member: MonotonicInstant] = [:]
    /// Every membership this agent has admitted, oldest first out past `Settings.membersRememberedMax`:
    /// the origins a command of its own may depend on.
    private var admitted: Set<Member> = []
    private var admittedOrder: [Member] = []
    /// When `tick` last ran: one far later than that means this agent was stalled.
    private var lastTickAt: MonotonicInstant?

    init(settings: Settings) { self.sharedSettings = SharedSettings(settings) }

    /// Joined: the announce burst and the heartbeat begin.
    mutating func start(now: MonotonicInstant, random: inout SplitMix64) {
        lastTickAt = now
        joiningUntil = now + settings.heartbeatJoiningPeriod
        fullRateUntil = nil
        scaleAtLastTick = 1
        announcesDue = settings.announceOffsets.map { now + $0 }.ordered()
        nextHeartbeatAt = now + random.jittered(heartbeatInterval, fraction: settings.heartbeatJitterFraction)
        heartbeatCountsFrom = (now, heartbeatInterval)
    }

    /// A viewer took a seat on the stage: from now on a stage member's silences and heartbeats,
    /// and the join's announce burst to the stage (`start`). Its peers stay.
    mutating func takeSeat(_ settings: SharedSettings, now: MonotonicInstant, random: inout SplitMix64) {
        sharedSettings = settings
        silenceDeadline = now  // the silences may be shorter now
        start(now: now, random: &random)
    }

    /// Left: no more announcements; the table is emptied (the departures are not reported).
    mutating func stop() {
        lastTickAt = nil
        heartbeatCountsFrom = nil
        silenceDeadline = nil
        establishedCount = 0
        peers.removeAll()
        unicastWanted.removeAll()
        announcesDue.removeAll()
        nextHeartbeatAt = nil
    }

    func hasDeparted(_ member: Member) -> Bool { departed[member] != nil }

    /// The newest incarnation of `id` this agent knows, live or remembered as departed: anything
    /// from an older one is a restarted agent's past (or a recording of it), not news.
    func newestIncarnation(of id: PeerID) -> Incarnation? {
        if let record = peers[id] { return record.member.incarnation }
        guard !departed.isEmpty else { return nil }
        var newest: Incarnation?
        for member in departed.keys where member.id == id && newest.map({ member.incarnation > $0 }) ?? true {
            newest = member.incarnation
        }
        return newest
    }

    /// Whether `member` was ever admitted here (a live peer, or one that left).
    func wasAdmitted(_ member: Member) -> Bool { admitted.contains(member) }

    /// A hello or heartbeat from `sender`.
    mutating func onAnnouncement(
        _ announcement: Announcement, isHello: Bool, from sender: Member, source: Endpoint, heardAt: MonotonicInstant
    ) -> [Output] {
        let endpoint = Endpoint(address: source.address, port: announcement.unicastPort)
        var out: [Output] = []
        guard admit(sender, name: announcement.name, endpoint: endpoint, heardAt: heardAt, into: &out),
            var record = peers[sender.id]
        else { return out }
        if isHello, !announcement.isReply, !record.hasAdmittedUs,
            record.lastHelloReplyAt.map({ heardAt - $0 >= settings.helloReplyInterval }) ?? true
        {
            record.lastHelloReplyAt = heardAt
            out.append(.replyHello(to: record.endpoint))
        }
        let changed =
            record.item != announcement.item || record.isWaiting != announcement.isWaiting
            || record.isReady != announcement.isReady || record.announced != announcement.suspensions
            || record.waitsOutSuspensions != announcement.waitsOutSuspensions
        record.item = announcement.item
        record.isWaiting = announcement.isWaiting
        record.isReady = announcement.isReady
        record.waitsOutSuspensions = announcement.waitsOutSuspensions
        record.announced = announcement.suspensions
        record.digest = announcement.digest
        record.wantsUnicast = announcement.wantsUnicast
        record.seated = announcement.seat
        if announcement.wantsUnicast { unicastWanted.insert(sender.id) } else { unicastWanted.remove(sender.id) }
        peers[sender.id] = record
        if changed { out.append(.changed(record)) }
        return out
    }

    /// A copy of an announcement already received through the relay arrived over the network:
    /// the peer is reached there (`relayNetworkPreferredFor`).
    mutating func heardOnNetwork(_ sender: Member, at endpoint: Endpoint, heardAt: MonotonicInstant) {
        guard var record = peers[sender.id], record.member == sender else { return }
        record.endpoint = endpoint
        record.heardOnNetworkAt = heardAt
        peers[sender.id] = record
    }

    /// A path to the group came back (the relay reconnected): the next heartbeat goes now, so
    /// that peers who heard nothing meanwhile hear this agent before they give it up.
    mutating func heartbeatNow(_ now: MonotonicInstant) {
        guard let due = nextHeartbeatAt, due > now else { return }
        nextHeartbeatAt = now
    }

    /// A leave from `sender`.
    mutating func onLeave(_ reason: LeaveReason, from sender: Member, at now: MonotonicInstant) -> [Output] {
        guard let record = peers[sender.id], record.member == sender else {
            return [.drop(.unknownSender, "leave from \(sender)")]
        }
        var out: [Output] = []
        remove(record, because: reason == .left ? .left : .shutdown, now: now, into: &out)
        return out
    }

    /// A clock probe from `sender`: it probes every peer it admits at once, so it knows this
    /// agent, and the rest of its announce burst goes unanswered. Among 64 agents started
    /// together every hello of every burst was answered by all the others: each agent sent some
    /// 130 hellos while the group formed, and now some 55 (`coplay-bench scale`).
    mutating func admittedUs(_ sender: Member) {
        // Written once: this runs for every probe, and most come from peers long admitted.
        guard let record = peers[sender.id], record.member == sender, !record.hasAdmittedUs else { return }
        peers[sender.id]?.hasAdmittedUs = true
    }

    /// Anything from a known membership proves it alive.
    mutating func heard(_ sender: Member, at heardAt: MonotonicInstant) -> [Output] {
        guard var record = peers[sender.id], record.member == sender else { return [] }
        let wasEstablished = record.isEstablished
        record.lastHeard = max(record.lastHeard, heardAt)
        record.heardAtScale = scaleAtLastTick
        if !wasEstablished, record.isEstablished { establishedCount += 1 }
        var out: [Output] = []
        if record.liveness == .suspected {
            record.liveness = .alive
            out.append(.responsive(record))
            lowerSilenceDeadline(for: record)
        }
        peers[sender.id] = record
        return out
    }

    func isKnown(_ sender: Member) -> Bool { peers[sender.id]?.member == sender }

    mutating func tick(now: MonotonicInstant, random: inout SplitMix64) -> [Output] {
        var out: [Output] = []
        if let last = lastTickAt, now - last > settings.localStallThreshold * groupScale {
            forgiveSilence(during: now - last, now: now)
        }
        // This agent's own heartbeat is late by more than the stall threshold: it was stalled
        // (paused, starved). Peers may have given it up meanwhile — in a large group heartbeats
        // are seconds apart, and one lost just before or after the stall is enough — so a few
        // heartbeats at the full rate find them at once, not at the next one seconds later.
        if let due = nextHeartbeatAt, now - due > settings.localStallThreshold {
            fullRateUntil = max(fullRateUntil ?? now, now + settings.heartbeatFullRateAfterStall)
        }
        lastTickAt = now
        while let due = announcesDue.first, due <= now {
            announcesDue.removeFirst()
            out.append(.announce(isHello: true))
        }
        if let due = nextHeartbeatAt, due <= now {
            let interval =
                if fullRateUntil.map({ now < $0 }) ?? false {
                    settings.heartbeatInterval
                } else if joiningUntil.map({ now < $0 }) ?? false {
                    // Newly joined: a hello lost in a crowded start is made up for within a
                    // second or two, not in the large group's interval — but not at the full
                    // rate either: among 64 started together, the others' full-rate heartbeats
                    // were some 215 of the 870 datagrams each agent received while the group
                    // formed (`coplay-bench scale`).
                    // The scale's square root: 500 ms among 16, 1 s among 64, 2 s among 256.
                    settings.heartbeatInterval * groupScale.squareRoot()
                } else {
                    heartbeatInterval
                }
            let jittered = random.jittered(interval, fraction: settings.heartbeatJitterFraction)
            // RTCP's timer reconsideration (RFC 3550 §6.3.3): when the heartbeat comes due, its
            // interval is worked out again for the group as it is now, and if the group grew
            // meanwhile the heartbeat waits for the longer interval. An agent that joins a crowd
            // set its first heartbeat for a group of one; among 64 it went out 500 ms after the
            // hello, when the joining interval is a second.
            if let (from, scheduled) = heartbeatCountsFrom, interval > scheduled, from + jittered > now {
                heartbeatCountsFrom = (from, interval)
                nextHeartbeatAt = from + jittered
            } else {
                out.append(.announce(isHello: false))
                heartbeatCountsFrom = (now, interval)
                nextHeartbeatAt = now + jittered
            }
        }
        let shrank = groupScale < scaleAtLastTick
        // RTCP's reverse reconsideration (RFC 3550 §6.3.4): when the group shrinks, what is left
        // of the wait for the next heartbeat shrinks with it, so this agent is soon heard at the
        // smaller group's interval, by which its peers judge it once they have heard it again
        // (`PeerRecord.heardAtScale`).
        if shrank, let due = nextHeartbeatAt, due > now {
            nextHeartbeatAt = now + (due - now) * (groupScale / scaleAtLastTick)
        }
        scaleAtLastTick = groupScale
        // A pass over the peers only when a silence may have come to its limit: the cached
        // deadline is due, or the group shrank (and its silences with it).
        if shrank || silenceDeadline.map({ $0 <= now }) ?? false { judgeSilences(now: now, into: &out) }
        departed = departed.filter { $0.value > now }
        return out
    }

    /// Suspects the peers silent for their suspicion limit, removes those silent for their
    /// departure limit (in a fixed order, for replayable runs), and finds the next deadline.
    private mutating func judgeSilences(now: MonotonicInstant, into out: inout [Output]) {
        let silences = silences(scale: scaleAtLastTick)
        let settings = settings  // read once for the pass, not once per peer
        silenceDeadline = nil
        var due: [PeerID] = []
        for (id, record) in peers {
            let deadline = Self.deadline(of: record, silences, settings)
            if deadline <= now {
                due.append(id)
            } else {
                silenceDeadline = min(silenceDeadline ?? deadline, deadline)
            }
        }
        for id in due.ordered() {
            guard var record = peers[id] else { continue }
            let silence = now - record.lastHeard
            let limits = silences.of(record, settings)
            if silence >= limits.dead {
                remove(record, because: .timeout, now: now, into: &out)
                continue
            } else if silence >= limits.suspect, record.liveness == .alive {
                record.liveness = .suspected
                peers[id] = record
                out.append(.unresponsive(record))
            }
            let deadline = Self.deadline(of: record, silences, settings)
            silenceDeadline = min(silenceDeadline ?? deadline, deadline)
        }
    }

    /// This agent did not run for `stall` (SIGSTOP, a starved machine, a suspended laptop): its
    /// peers' silence over that time is its own lateness, not evidence against them (Lifeguard:
    /// do not blame others for your own slowness). Each peer's silence is counted as if the
    /// stall had not happened, so the datagrams queued meanwhile are read before anyone is
    /// judged, and a peer that really left is still found within `deadAfter` of waking.
    private mutating func forgiveSilence(during stall: Duration, now: MonotonicInstant) {
        for (id, record) in peers {
            var forgiven = record
            forgiven.lastHeard = min(now, record.lastHeard + stall)
            peers[id] = forgiven
        }
        establishedCount = peers.values.filter({ $0.isEstablished }).count
        silenceDeadline = now  // looked at again in this tick
    }

    /// How much longer than in a small group the heartbeat interval and the silences are: 1 up
    /// to `Settings.heartbeatFullRateGroupMax` participants, then in proportion to the group.
    /// Only peers heard more than once count: a flood of hellos of invented peers (each heard
    /// once) must not slow this agent's heartbeats, nor keep the inventions in the table longer.
    var groupScale: Double {
        max(1, Double(establishedCount + 1) / Double(max(1, settings.heartbeatFullRateGroupMax)))
    }
    var heartbeatInterval: Duration { settings.heartbeatInterval * groupScale }
    /// The silences after which a peer is suspected and declared gone: scaled for an established
    /// peer, the small group's for one heard only once. Worked out once per pass over the table
    /// (a `Duration` times a `Double` is not cheap).
    struct Silences {
        var scale: Double
        var established: (suspect: Duration, dead: Duration)
        var heardOnce: (suspect: Duration, dead: Duration)
        /// An established peer last heard when the group was larger is judged at that size
        /// (`PeerRecord.heardAtScale`): worked out apart, only in the heartbeat interval or so
        /// after the group shrank.
        func of(_ record: PeerRecord, _ settings: Settings) -> (suspect: Duration, dead: Duration) {
            guard record.isEstablished else { return heardOnce }
            return record.heardAtScale > scale ? settings.silences(scale: record.heardAtScale) : established
        }
    }

    /// The group's size as the last tick found it: the silences hold still between ticks, so
    /// that `silenceDeadline` stays valid until the next one.
    private var scaleAtLastTick = 1.0

    func silences(scale: Double) -> Silences {
        return Silences(
            scale: scale, established: settings.silences(scale: scale), heardOnce: settings.silences(scale: 1))
    }

    /// The earliest instant at which `tick` has something to do. Worked out without a pass over
    /// the peers (it is asked after every input, and the pass made a heartbeat's cost grow with
    /// the group): `silenceDeadline` may be early, never late.
    var nextWake: MonotonicInstant? {
        [announcesDue.first, nextHeartbeatAt, silenceDeadline].compactMap { $0 }.min()
    }

    /// When a peer's silence comes to its next limit: suspicion for a peer alive, departure for
    /// one suspected.
    private static func deadline(of record: PeerRecord, _ silences: Silences, _ settings: Settings)
        -> MonotonicInstant
    {
        let limits = silences.of(record, settings)
        return record.lastHeard + (record.liveness == .alive ? limits.suspect : limits.dead)
    }

    /// The earliest `deadline` of any peer as the last tick found it, lowered since by each
    /// record whose deadline may have moved earlier (a newcomer, a suspected peer heard again;
    /// a peer heard moves its own later). So it is never later than the true earliest: the
    /// agent may be woken early, and that tick finds the exact one.
    private var silenceDeadline: MonotonicInstant?
    /// The peers heard more than once (`PeerRecord.isEstablished`), counted as they change.
    private var establishedCount = 0

    private mutating func lowerSilenceDeadline(for record: PeerRecord) {
        let due = Self.deadline(of: record, silences(scale: scaleAtLastTick), settings)
        silenceDeadline = min(silenceDeadline ?? due, due)
    }

    /// The name to show for a member: its own, a peer's, or the start of its id.
    func originator(_ origin: Member, local: Member, localName: String) -> Originator {
        Self.originator(origin, local: local, localName: localName, peers: peers)
    }

    /// The name to show for a member, among `peers`.
    static func originator(_ origin: Member, local: Member, localName: String, peers: [PeerID: PeerRecord])
        -> Originator
    {
        if origin == local { return Originator(member: origin, name: localName, isLocal: true) }
        return Originator(
            member: origin, name: peers[origin.id]?.name ?? String(origin.id.description.prefix(8)), isLocal: false)
    }

    // MARK: Admission and removal

    /// Records an announcement's sender: a new participant, a new incarnation of a known one, or
    /// news of a known one. Returns false when the datagram is to be ignored.
    private mutating func admit(
        _ sender: Member, name: String, endpoint: Endpoint, heardAt: MonotonicInstant, into out: inout [Output]
    ) -> Bool {
        if let record = peers[sender.id] {
            if sender.incarnation < record.member.incarnation {
                out.append(.drop(.staleIncarnation, "\(sender) after \(record.member)"))
                return false
            }
            if sender.incarnation == record.member.incarnation {
                peers[sender.id]?.name = name
                if !endpoint.isRelay {
                    peers[sender.id]?.endpoint = endpoint
                    peers[sender.id]?.heardOnNetworkAt = heardAt
                } else if record.endpoint.isRelay
                    || record.heardOnNetworkAt.map({ heardAt - $0 > settings.relay.networkPreferredFor }) ?? true
                {
                    // A peer heard on the LAN is served by the LAN; the relay takes over when the
                    // LAN has been silent for a while.
                    peers[sender.id]?.endpoint = endpoint
                }
                out += heard(sender, at: heardAt)
                return true
            }
            remove(record, because: .restarted, now: heardAt, into: &out)
        }
        guard peers.count < settings.peersMax else {
            out.append(.drop(.peerTableFull, "\(settings.peersMax) peers"))
            return false
        }
        var record = PeerRecord(member: sender, name: name, endpoint: endpoint, now: heardAt)
        record.heardAtScale = scaleAtLastTick
        if !endpoint.isRelay { record.heardOnNetworkAt = heardAt }
        peers[sender.id] = record
        lowerSilenceDeadline(for: record)
        if admitted.insert(sender).inserted {
            admittedOrder.append(sender)
            if admittedOrder.count > settings.membersRememberedMax { admitted.remove(admittedOrder.removeFirst()) }
        }
        out.append(.joined(record))
        return true
    }

    private mutating func remove(
        _ record: PeerRecord, because reason: PeerDeparture, now: MonotonicInstant, into out: inout [Output]
    ) {
        if peers.removeValue(forKey: record.member.id)?.isEstablished == true { establishedCount -= 1 }
        unicastWanted.remove(record.member.id)
        // A membership that ended for sure is remembered, so that its reordered datagrams cannot
        // bring it back. One that merely went silent is not: if it is heard again (a partition
        // healed), it is alive and rejoins the table.
        if reason != .timeout {
            if departed.count >= settings.departedMax,
                let oldest = departed.min(by: {
                    ($0.value, $0.key.id, $0.key.incarnation) < ($1.value, $1.key.id, $1.key.incarnation)
                })
            {
                departed[oldest.key] = nil
            }
            departed[record.member] = now + settings.departedMemory
        }
        out.append(.left(record, reason))
    }
}

extension Settings {
    /// The silences after which an established peer is suspected and declared gone in a group
    /// `scale` times as large as `heartbeatFullRateGroupMax` (1 in a small group): both in
    /// proportion, or the departure a fixed gap after the suspicion (`suspicionGapUnscaled`).
    @inline(never) func silences(scale: Double) -> (suspect: Duration, dead: Duration) {
        let suspect = suspectAfter * scale
        guard let gap = suspicionGapUnscaled else { return (suspect, deadAfter * scale) }
        return (suspect, max(deadAfter, suspect + gap))
    }
}

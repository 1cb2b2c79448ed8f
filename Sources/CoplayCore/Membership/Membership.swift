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
    }

    let settings: Settings
    /// The live participants other than this agent, by id. At most `Settings.peersMax`.
    private(set) var peers: [PeerID: PeerRecord] = [:]
    /// When the remaining hellos of the announce burst are due, earliest first.
    private var announcesDue: [MonotonicInstant] = []
    private var nextHeartbeatAt: MonotonicInstant?
    /// When this membership joined (its first seconds go at the full heartbeat rate).
    private var joinedAt: MonotonicInstant?
    /// Memberships that ended gracefully or were replaced, with when to forget them. At most
    /// `Settings.departedMax`; the one forgotten soonest goes first.
    private var departed: [Member: MonotonicInstant] = [:]
    /// Every membership this agent has admitted, oldest first out past `Settings.membersRememberedMax`:
    /// the origins a command of its own may depend on.
    private var admitted: Set<Member> = []
    private var admittedOrder: [Member] = []
    /// When `tick` last ran: one far later than that means this agent was stalled.
    private var lastTickAt: MonotonicInstant?

    init(settings: Settings) { self.settings = settings }

    /// Joined: the announce burst and the heartbeat begin.
    mutating func start(now: MonotonicInstant, random: inout SplitMix64) {
        lastTickAt = now
        joinedAt = now
        scaleAtLastTick = 1
        announcesDue = settings.announceOffsets.map { now + $0 }.sorted()
        nextHeartbeatAt = now + random.jittered(heartbeatInterval, fraction: settings.heartbeatJitterFraction)
    }

    /// Left: no more announcements; the table is emptied (the departures are not reported).
    mutating func stop() {
        lastTickAt = nil
        peers.removeAll()
        announcesDue.removeAll()
        nextHeartbeatAt = nil
    }

    func hasDeparted(_ member: Member) -> Bool { departed[member] != nil }

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
        if isHello, !announcement.isReply,
            record.lastHelloReplyAt.map({ heardAt - $0 >= settings.helloReplyInterval }) ?? true
        {
            record.lastHelloReplyAt = heardAt
            out.append(.replyHello(to: record.endpoint))
        }
        let changed =
            record.item != announcement.item || record.isWaiting != announcement.isWaiting
            || record.isReady != announcement.isReady || record.suspensions != announcement.suspensions
            || record.waitsOutSuspensions != announcement.waitsOutSuspensions
        record.item = announcement.item
        record.isWaiting = announcement.isWaiting
        record.isReady = announcement.isReady
        record.waitsOutSuspensions = announcement.waitsOutSuspensions
        record.suspensions = announcement.suspensions
        record.digest = announcement.digest
        peers[sender.id] = record
        if changed { out.append(.changed(record)) }
        return out
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

    /// Anything from a known membership proves it alive.
    mutating func heard(_ sender: Member, at heardAt: MonotonicInstant) -> [Output] {
        guard var record = peers[sender.id], record.member == sender else { return [] }
        record.lastHeard = max(record.lastHeard, heardAt)
        var out: [Output] = []
        if record.liveness == .suspected {
            record.liveness = .alive
            out.append(.responsive(record))
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
        lastTickAt = now
        while let due = announcesDue.first, due <= now {
            announcesDue.removeFirst()
            out.append(.announce(isHello: true))
        }
        if let due = nextHeartbeatAt, due <= now {
            out.append(.announce(isHello: false))
            // Newly joined, at the full rate: a hello lost in a crowded start is made up for in
            // half a second, not in the large group's interval.
            let isNew = joinedAt.map { now - $0 < settings.heartbeatFullRateAfterJoin } ?? false
            let interval = isNew ? settings.heartbeatInterval : heartbeatInterval
            nextHeartbeatAt = now + random.jittered(interval, fraction: settings.heartbeatJitterFraction)
        }
        scaleAtLastTick = groupScale
        let silences = silences(scale: scaleAtLastTick)
        for id in peers.keys.sorted() {
            guard var record = peers[id] else { continue }
            let silence = now - record.lastHeard
            let limits = silences.of(record)
            if silence >= limits.dead {
                remove(record, because: .timeout, now: now, into: &out)
            } else if silence >= limits.suspect, record.liveness == .alive {
                record.liveness = .suspected
                peers[id] = record
                out.append(.unresponsive(record))
            }
        }
        departed = departed.filter { $0.value > now }
        return out
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
    }

    /// How much longer than in a small group the heartbeat interval and the silences are: 1 up
    /// to `Settings.heartbeatFullRateGroupMax` participants, then in proportion to the group.
    /// Only peers heard more than once count: a flood of hellos of invented peers (each heard
    /// once) must not slow this agent's heartbeats, nor keep the inventions in the table longer.
    var groupScale: Double {
        let established = peers.values.filter(\.isEstablished).count
        return max(1, Double(established + 1) / Double(max(1, settings.heartbeatFullRateGroupMax)))
    }
    var heartbeatInterval: Duration { settings.heartbeatInterval * groupScale }
    /// The silences after which a peer is suspected and declared gone: scaled for an established
    /// peer, the small group's for one heard only once. Worked out once per pass over the table
    /// (a `Duration` times a `Double` is not cheap, and `nextWake` runs after every input).
    struct Silences {
        var established: (suspect: Duration, dead: Duration)
        var heardOnce: (suspect: Duration, dead: Duration)
        func of(_ record: PeerRecord) -> (suspect: Duration, dead: Duration) {
            record.isEstablished ? established : heardOnce
        }
    }

    /// The silences by the group's size as the last tick found it (`nextWake` runs after every
    /// input: counting the established peers each time was a tenth of an agent's time in a flood).
    private var scaleAtLastTick = 1.0

    func silences(scale: Double) -> Silences {
        return Silences(
            established: (settings.suspectAfter * scale, settings.deadAfter * scale),
            heardOnce: (settings.suspectAfter, settings.deadAfter))
    }

    /// The earliest instant at which `tick` has something to do.
    var nextWake: MonotonicInstant? {
        var earliest = [announcesDue.first, nextHeartbeatAt].compactMap { $0 }.min()
        let silences = silences(scale: scaleAtLastTick)
        for record in peers.values {
            let limits = silences.of(record)
            let due = record.lastHeard + (record.liveness == .alive ? limits.suspect : limits.dead)
            if earliest.map({ due < $0 }) ?? true { earliest = due }
        }
        return earliest
    }

    /// The name to show for a member: its own, a peer's, or the start of its id.
    func originator(_ origin: Member, local: Member, localName: String) -> Originator {
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
                peers[sender.id]?.endpoint = endpoint
                out += heard(sender, at: heardAt)
                return true
            }
            remove(record, because: .restarted, now: heardAt, into: &out)
        }
        guard peers.count < settings.peersMax else {
            out.append(.drop(.peerTableFull, "\(settings.peersMax) peers"))
            return false
        }
        let record = PeerRecord(member: sender, name: name, endpoint: endpoint, now: heardAt)
        peers[sender.id] = record
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
        peers[record.member.id] = nil
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

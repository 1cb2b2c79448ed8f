/// A party bigger than a group, over the relay: a stage that runs the whole protocol among its
/// members, and an audience that follows it (`AudienceSettings`). This machine is both sides'
/// part that the other machines do not already do:
///
/// - On the stage, the *speaker* (the member that joined first, by incarnation and then id, as
///   every stage member works it out from its own table) puts a beacon (its heartbeat) on the
///   group's subject once a second, answers a viewer's hello, keeps the table of viewers (for
///   the count, and so that a viewer may ask for repair and state), and carries the other stage
///   members' commands to the audience with their times on its own clock: a viewer needs the
///   offset to its anchor alone, never to the whole stage.
/// - A viewer is a member of nobody's table but its own: the speakers whose beacons or answers it
///   heard are its peers (one, two while the speaker changes), and the earliest of them is its
///   anchor, to which alone it heartbeats. It never sends `ready` and never decides a start: the
///   stage does not wait for its audience.
///
/// Its inputs are facts the router has (who the peers are, a viewer's announcement); its outputs
/// are decisions the router carries out.
struct Audience: Sendable {
    let settings: AudienceSettings
    /// Whether this agent is a viewer (with a relay and `AudienceSettings.isViewer`). One waiting
    /// for a seat (`Role.firstCome`) stops being one when it takes it (`seated`).
    private(set) var isViewer: Bool
    /// A viewer that asks for a seat on the stage (`Role.firstCome`), until it has one.
    private(set) var wantsSeat: Bool
    /// A viewer waiting for a seat: when it takes one itself, having heard no stage since it
    /// began to listen (`AudienceSettings.seatWait` and its jitter after that).
    private(set) var seatAt: MonotonicInstant?
    /// The speaker this viewer last asked for a seat outside its heartbeats (`asksForSeat`).
    private var askedSeatOf: Member?
    /// The speaker's seats granted and not yet taken, with when each is given up: counted against
    /// `AudienceSettings.stageSeats` (at most that many), so that a crowd joining at once is not
    /// all granted the seats the stage had free.
    private(set) var grants: [Member: MonotonicInstant] = [:]

    /// The viewers this stage member has heard, by id (at most `AudienceSettings.viewersMax`):
    /// each one's membership, its subject, when it was last heard and its last digest (what a
    /// snapshot or a repair for it is measured against). Kept as membership's records are (one
    /// table type in the browser's module, not two: 5 KB of it).
    private(set) var viewers: [PeerID: PeerRecord] = [:]
    /// Viewers not admitted because the table was full.
    private(set) var refused: Int64 = 0
    /// When the speaker's next beacon is due, and when the table is next looked at for expiry.
    private(set) var nextBeaconAt: MonotonicInstant?
    private var nextExpiryAt: MonotonicInstant?

    init(settings: AudienceSettings, hasRelay: Bool) {
        self.settings = settings
        isViewer = hasRelay && settings.isViewer
        wantsSeat = isViewer && settings.role == .firstCome
    }

    // MARK: Seats

    /// A viewer that wants a seat begins to listen for the stage (it joined, or lost every stage
    /// member it followed): it takes a seat itself at `seatAt` unless it hears one first.
    mutating func listenForStage(now: MonotonicInstant, random: inout SplitMix64) {
        guard wantsSeat, seatAt == nil else { return }
        seatAt = now + AudienceSettings.seatWait + AudienceSettings.seatWaitJitter * random.nextUnit()
    }

    /// The viewer heard a stage member: it has a stage to ask, and does not seat itself.
    mutating func heardStage() { seatAt = nil }

    /// Whether the viewer should ask `speaker` for a seat now: once for each speaker it hears
    /// beacon (its heartbeats ask again, every `viewerHeartbeatInterval`).
    mutating func asksForSeat(of speaker: Member) -> Bool {
        guard askedSeatOf != speaker else { return false }
        askedSeatOf = speaker
        return true
    }

    /// The viewer takes its seat (granted, or its own when it heard no stage): from now on it is
    /// a stage member.
    mutating func seated() {
        isViewer = false
        wantsSeat = false
        seatAt = nil
    }

    /// The speaker, asked for a seat by `member` while the stage has `stageCount` members (itself
    /// among them): whether it grants one. Seats granted and not yet taken count as taken until
    /// they expire; the same viewer asking again is granted again (its answer may have been lost).
    mutating func grantSeat(to member: Member, stageCount: Int, now: MonotonicInstant) -> Bool {
        for (holder, expiry) in grants where expiry <= now { grants[holder] = nil }
        guard grants[member] != nil || stageCount + grants.count < settings.stageSeats else { return false }
        grants[member] = now + AudienceSettings.seatGrantExpiry
        return true
    }

    /// A member joined the stage: its seat (if this speaker granted it) is taken, and it is no
    /// longer a viewer in the table.
    mutating func tookSeat(_ member: Member) {
        grants[member] = nil
        left(member)
    }

    /// The stage member that speaks for the stage, seen from one of its members: the earliest to
    /// join (lowest incarnation; then lowest id) of itself and its peers. Every stage member
    /// hears the same peers, so they agree but for a moment while one joins or leaves (then two
    /// speak, which costs a duplicate beacon, nothing more).
    static func speaker(own: Member, peers: some Sequence<Member>) -> Member {
        peers.reduce(own) { (($1.incarnation, $1.id) < ($0.incarnation, $0.id)) ? $1 : $0 }
    }

    /// A viewer's anchor: the earliest of the speakers it hears (its peers), nil before it heard any.
    static func anchor(among peers: some Sequence<Member>) -> Member? {
        peers.reduce(nil) { best, next in
            guard let best else { return next }
            return (next.incarnation, next.id) < (best.incarnation, best.id) ? next : best
        }
    }

    /// The speaker's beacons: due now (and the next one scheduled), or not. A stage member that
    /// is not the speaker forgets its schedule, so that it beacons at once when it becomes one.
    mutating func beaconDue(isSpeaker: Bool, now: MonotonicInstant) -> Bool {
        guard isSpeaker, !isViewer else {
            nextBeaconAt = nil
            return false
        }
        guard let due = nextBeaconAt, due > now else {
            nextBeaconAt = now + settings.beaconInterval
            return true
        }
        return false
    }

    /// A viewer's announcement, heard by a stage member: kept (or refreshed) in the table.
    /// False when the table is full and it is new (counted in `refused`).
    mutating func heard(_ member: Member, digest: VectorClock, at now: MonotonicInstant) -> Bool {
        if let known = viewers[member.id], member.incarnation < known.member.incarnation { return false }
        guard viewers[member.id] != nil || viewers.count < settings.viewersMax else {
            refused += 1
            return false
        }
        var record = PeerRecord(member: member, name: "", endpoint: .relay(member.id), now: now)
        record.digest = digest
        viewers[member.id] = record
        if nextExpiryAt == nil { nextExpiryAt = now + settings.viewerExpiry }
        return true
    }

    /// The viewer said goodbye (its `leave`).
    mutating func left(_ member: Member) {
        if viewers[member.id]?.member == member { viewers[member.id] = nil }
    }

    /// Whether `member` is a viewer in this stage member's table (it may ask for repair and state).
    func isViewer(_ member: Member) -> Bool { viewers[member.id]?.member == member }

    /// Where a viewer is reached (its own subject), and the digest it last announced.
    func viewer(_ id: PeerID) -> PeerRecord? { viewers[id] }

    /// Forgets the viewers not heard for `AudienceSettings.viewerExpiry`: one pass over the table
    /// every half of that (not one per input: the table holds thousands).
    mutating func tick(now: MonotonicInstant) {
        guard let due = nextExpiryAt, due <= now else { return }
        let expiry = settings.viewerExpiry
        for (id, record) in viewers where now - record.lastHeard >= expiry { viewers[id] = nil }
        nextExpiryAt = viewers.isEmpty ? nil : now + expiry * 0.5
    }

    var nextWake: MonotonicInstant? {
        let timers: MonotonicInstant? =
            switch (nextBeaconAt, nextExpiryAt) {
            case (let beacon?, let expiry?): min(beacon, expiry)
            case (let beacon, let expiry): beacon ?? expiry
            }
        guard let seatAt else { return timers }
        return timers.map { min($0, seatAt) } ?? seatAt
    }
}

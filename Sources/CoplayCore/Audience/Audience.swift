/// A party bigger than a group, over the relay: a stage that runs the whole protocol among its
/// members, and an audience that follows it (`AudienceSettings`). This machine is both sides'
/// part that the other machines do not already do:
///
/// - On the stage, the *speaker* (the first by `rank`, as every stage member works it out from
///   its own table) puts a beacon (its heartbeat) on the group's subject once a second, answers a
///   viewer's hello (on the speaker's own subject), grants the stage's free seats, keeps the table
///   of viewers (for the count, and so that a viewer may ask for repair and state), and carries
///   the other stage members' commands to the audience with their times on its own clock: a
///   viewer needs the offset to its anchor alone, never to the whole stage.
/// - A viewer is a member of nobody's table but its own: the speakers whose beacons or answers it
///   heard are its peers (one, two while the speaker changes), and the first of them by `rank` is
///   its anchor, to which alone it speaks: its clock probes, which count it there, and a heartbeat
///   only when it has something to tell (`heartbeatDue`). It never sends `ready` and never
///   decides a start: the stage does not wait for its audience.
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
    /// This stage member took its seat by a grant: it says so in its announcements, and ranks
    /// after those named or seated by themselves (`rank`).
    private(set) var seatedByGrant = false
    /// A viewer waiting for a seat: when it takes one itself, having heard no stage since it
    /// began to listen (`AudienceSettings.seatWait` and its jitter after that).
    private(set) var seatAt: MonotonicInstant?
    /// The speaker this viewer last asked for a seat outside its heartbeats (`asksForSeat`).
    private var askedSeatOf: Member?
    /// What this viewer last told its anchor in a heartbeat (the anchor, and how many commands it
    /// had delivered then), and when it asks for a seat next, and after how long the time after
    /// (`heartbeatDue`).
    private var told: (anchor: Member, delivered: Int64)?
    private var seatAskAt: MonotonicInstant?
    private var seatAskInterval: Duration = .zero
    /// This member joined the stage a moment ago: it grants no seat before then
    /// (`AudienceSettings.seatSettle`); the viewers that asked meanwhile (at most `stageSeats`),
    /// answered then rather than at their next heartbeat, 2 s away.
    private var grantsFrom: MonotonicInstant?
    private(set) var askedWhileSettling: [Member] = []
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
    /// This stage member spoke for the stage at its last tick, and so subscribes to the viewers'
    /// hellos (`RelaySeal.speakerSubject`; the router tells the shell when that changes).
    var hearsHellos = false
    /// When the speaker's next beacon is due, and when the table is next looked at for expiry.
    private(set) var nextBeaconAt: MonotonicInstant?
    private var nextExpiryAt: MonotonicInstant?

    /// The speakers' latest summaries (`AudienceSummary`), heard by a stage member: each one's
    /// count of its own viewers (at most `viewersMax`), and when. One speaker's, or two for a
    /// moment; only a member of the stage is admitted (the router asks membership), and at most
    /// `stageSeats` are kept. An entry past `summaryExpiry` is dropped at the table's expiry pass.
    private(set) var summaries: [PeerID: HeardSummary] = [:]
    struct HeardSummary {
        var member: Member
        var viewers: Int
        var at: MonotonicInstant
    }
    /// The audience as a viewer's anchor last told it, and when.
    private(set) var toldAudience: (count: Int, at: MonotonicInstant)?
    /// When this stage member next looks whether its summary is due, and what it last told when.
    private var nextSummaryAt: MonotonicInstant?
    private var summarySent: (summary: AudienceSummary, at: MonotonicInstant)?

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
        seatAskAt = nil
        return true
    }

    /// Whether this viewer's heartbeat to `anchor` is worth sending now, `delivered` commands
    /// delivered here so far: it asks for a seat (when its backoff has run,
    /// `AudienceSettings.seatAskIntervalMax`), it follows a new anchor, or it has delivered commands
    /// since it last told its anchor (its digest is new). Otherwise its clock probes keep it counted.
    mutating func heartbeatDue(to anchor: Member, delivered: Int64, now: MonotonicInstant) -> Bool {
        var due = told.map { $0.anchor != anchor || $0.delivered != delivered } ?? true
        if wantsSeat, seatAskAt.map({ now >= $0 }) ?? true {
            seatAskInterval =
                seatAskAt == nil ? .seconds(2) : min(seatAskInterval * 2, AudienceSettings.seatAskIntervalMax)
            seatAskAt = now + seatAskInterval
            due = true
        }
        if due { told = (anchor, delivered) }
        return due
    }

    /// The viewer takes its seat (granted, or its own when it heard no stage): from now on it is
    /// a stage member, which grants no seat until its table of the stage has formed.
    mutating func seated(byGrant: Bool, now: MonotonicInstant) {
        isViewer = false
        wantsSeat = false
        seatedByGrant = byGrant
        seatAt = nil
        joinedStage(now: now)
    }

    /// This agent joins the stage (named, at its start; or seated): no grant from it for
    /// `AudienceSettings.seatSettle`.
    mutating func joinedStage(now: MonotonicInstant) {
        grantsFrom = now + AudienceSettings.seatSettle
        askedWhileSettling = []
    }

    /// The viewers that asked while this member settled, once it has: taken out, to be granted
    /// (or not) as if they asked now.
    mutating func settledAsks(now: MonotonicInstant) -> [Member] {
        guard !askedWhileSettling.isEmpty, let from = grantsFrom, now >= from else { return [] }
        defer { askedWhileSettling = [] }
        return askedWhileSettling
    }

    /// The speaker, asked for a seat by `member` while the stage has `stageCount` members (itself
    /// among them): whether it grants one. Seats granted and not yet taken count as taken until
    /// they expire; the same viewer asking again is granted again (its answer may have been lost).
    mutating func grantSeat(to member: Member, stageCount: Int, now: MonotonicInstant) -> Bool {
        if let from = grantsFrom, now < from {
            if askedWhileSettling.count < settings.stageSeats, !askedWhileSettling.contains(member) {
                askedWhileSettling.append(member)
            }
            return false
        }
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

    /// How a stage member ranks to speak for the stage, first the lowest: one named to the stage
    /// or seated by itself before one seated by a grant (`PeerRecord.seated`), then the earliest
    /// to join the session (lowest incarnation; then lowest id). A member seated by a grant joined
    /// the session as a viewer, often before the speaker that granted it: ranked by that alone it
    /// took over speaking as it joined, and every viewer followed it anew (among 10,000 simulated
    /// joining at once the speaker changed with each seat, and the cluster's queues never drained).
    static func rank(_ member: Member, seated: Bool) -> (Int, Incarnation, PeerID) {
        (seated ? 1 : 0, member.incarnation, member.id)
    }

    /// The stage member that speaks for the stage, seen from one of its members: the first by
    /// `rank` of itself and its peers. Every stage member hears the same peers, so they agree but
    /// for a moment while one joins or leaves (then two speak, which costs a duplicate beacon,
    /// nothing more).
    static func speaker(own: Member, ownSeated: Bool, peers: some Sequence<PeerRecord>) -> Member {
        first(among: peers, own: (own, rank(own, seated: ownSeated))) ?? own
    }

    /// A viewer's anchor: the first by `rank` of the speakers it hears (its peers), nil before it
    /// heard any.
    static func anchor(among peers: some Sequence<PeerRecord>) -> Member? { first(among: peers, own: nil) }

    /// The first by `rank` of `peers` and `own` (with its rank, when there is one).
    private static func first(among peers: some Sequence<PeerRecord>, own: (Member, (Int, Incarnation, PeerID))?)
        -> Member?
    {
        var best = own
        for peer in peers {
            let ranked = rank(peer.member, seated: peer.seated)
            if best.map({ ranked < $0.1 }) ?? true { best = (peer.member, ranked) }
        }
        return best?.0
    }

    /// The speaker's beacons: due now (and the next one scheduled), or not. A stage member that
    /// is not the speaker forgets its schedule, so that it beacons at once when it becomes one.
    mutating func beaconDue(isSpeaker: Bool, now: MonotonicInstant) -> Bool {
        Self.due(&nextBeaconAt, every: settings.beaconInterval, if: isSpeaker && !isViewer, now: now)
    }

    /// Whether the speaker's timer `next` has run (due now, and set again `interval` on), or
    /// never when `speaking` is false (then forgotten, so that it is due at once when it is true).
    private static func due(
        _ next: inout MonotonicInstant?, every interval: Duration, if speaking: Bool, now: MonotonicInstant
    ) -> Bool {
        guard speaking else {
            next = nil
            return false
        }
        guard let due = next, due > now else {
            next = now + interval
            return true
        }
        return false
    }

    // MARK: Summaries: how many watch

    /// This stage member's summary when one is due now (nil when not): the speaker's alone, at once when it
    /// begins to speak, then (looked at every `summaryInterval`) when it changed or
    /// `summaryRefresh` after it was last told. Every viewer follows the speaker, so its table is
    /// the audience; another member's table holds only those that followed it while it spoke (or
    /// seemed to, as the stage formed), until they expire: summed with the speaker's, they were
    /// counted twice (among 1,000 simulated, up to 985 of 968 viewers).
    mutating func summaryDue(isSpeaker: Bool, now: MonotonicInstant, isMember: (Member) -> Bool) -> AudienceSummary? {
        let speaks = isSpeaker && !isViewer
        if !speaks { summarySent = nil }
        guard Self.due(&nextSummaryAt, every: AudienceSettings.summaryInterval, if: speaks, now: now) else {
            return nil
        }
        let current = summary(now: now, isMember: isMember)
        if let sent = summarySent, sent.summary == current, now - sent.at < AudienceSettings.summaryRefresh {
            return nil
        }
        summarySent = (current, now)
        return current
    }

    /// The speaker's summary: its own viewers, and the audience it knows of (another speaker's
    /// too, while two speak).
    @inline(never) func summary(now: MonotonicInstant, isMember: (Member) -> Bool) -> AudienceSummary {
        let own = viewers.count
        let total = watching(now: now, speaks: true, isMember: isMember) ?? own
        return AudienceSummary(viewers: UInt32(clamping: own), audience: UInt32(clamping: max(own, total)))
    }

    /// A summary from a stage member that the router admitted (a member of this one's table; a
    /// viewer's anchor, for a viewer): kept. A stage member keeps the sender's own count, which no
    /// table holds more of than `viewersMax`; a viewer keeps the total its anchor knows (at most
    /// `viewersMax` per stage seat: a key holder's forged number shows no more than that, and
    /// decides nothing).
    @inline(never) mutating func heardSummary(
        _ summary: AudienceSummary, from member: Member, at now: MonotonicInstant
    ) {
        guard isViewer else {
            let heard = HeardSummary(
                member: member, viewers: min(Int(clamping: summary.viewers), settings.viewersMax), at: now)
            if summaries[member.id] != nil || summaries.count < max(1, settings.stageSeats) {
                summaries[member.id] = heard
            }
            if nextExpiryAt == nil { nextExpiryAt = now + settings.viewerExpiry }
            return
        }
        let (product, overflow) = settings.viewersMax.multipliedReportingOverflow(by: max(1, settings.stageSeats))
        let most = overflow ? Int.max : product
        toldAudience = (min(Int(clamping: summary.audience), most), now)
    }

    /// How many watch, as this participant knows it: for a stage member, the viewers in the fresh
    /// summaries of the stage's members (`isMember`: one that left counts no more), and in its
    /// own table when it `speaks`; for a viewer, what its anchor last said, while fresh. Nil when
    /// a viewer has heard no summary (or none lately).
    @inline(never) func watching(now: MonotonicInstant, speaks: Bool, isMember: (Member) -> Bool) -> Int? {
        guard !isViewer else {
            guard let told = toldAudience, now - told.at < AudienceSettings.summaryExpiry else { return nil }
            return told.count
        }
        var total = speaks ? viewers.count : 0
        for entry in summaries.values where now - entry.at < AudienceSettings.summaryExpiry && isMember(entry.member) {
            total += entry.viewers
        }
        return total
    }

    /// A viewer's clock probe, heard by a stage member: it is still watching. One in the table is
    /// refreshed in place, with the digest it last told (a probe every 5 s from each viewer: at
    /// 10,000, 2,000 a second at the speaker); one that is not (it follows this member since the
    /// last speaker went, and had nothing to tell) comes in as it would by a heartbeat.
    mutating func probed(by member: Member, at now: MonotonicInstant) -> Bool {
        guard viewers[member.id]?.member == member else { return heard(member, digest: VectorClock(), at: now) }
        viewers[member.id]?.lastHeard = now
        return true
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
        for (id, entry) in summaries where now - entry.at >= AudienceSettings.summaryExpiry { summaries[id] = nil }
        nextExpiryAt = viewers.isEmpty && summaries.isEmpty ? nil : now + expiry * 0.5
    }

    var nextWake: MonotonicInstant? {
        let seat = askedWhileSettling.isEmpty ? seatAt : grantsFrom
        return earliest(earliest(nextBeaconAt, nextExpiryAt), earliest(nextSummaryAt, seat))
    }

    private func earliest(_ a: MonotonicInstant?, _ b: MonotonicInstant?) -> MonotonicInstant? {
        guard let a, let b else { return a ?? b }
        return min(a, b)
    }
}

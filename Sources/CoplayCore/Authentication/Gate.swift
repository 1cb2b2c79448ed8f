/// The gate every decoded datagram passes before any machine reads it: the session, the tag, the
/// send time and the replay window (`Authentication`), a plausible incarnation, not this agent's
/// own, this agent joined, not from a departed membership nor from an incarnation older than one
/// seen; then, by kind, only a current member. A machine of its own, as raft's `Step` checks
/// terms before any state machine sees a message: it decides, and the router carries out.
///
/// What it needs of the rest of the agent comes in as `Standing`, facts and lookups at this
/// datagram, never the machines that know them.
struct Gate: Sendable {
    /// Who may speak: tags, freshness and replays. The gate owns it; the router signs through it.
    var authentication: Authentication
    private let session: SessionID
    private let own: PeerID
    private let incarnationAheadMax: Duration

    init(authentication: Authentication, session: SessionID, own: PeerID, settings: Settings) {
        self.authentication = authentication
        self.session = session
        self.own = own
        incarnationAheadMax = settings.incarnationAheadMax
    }

    /// What the gate must know of the agent at one datagram.
    struct Standing {
        var isJoined: Bool
        /// Whether an incarnation of this agent's own id is this agent's (now or before a rejoin).
        var isOwn: (Incarnation) -> Bool
        /// Membership's memory: departed memberships, the newest incarnation seen of an id, and
        /// whether a membership is a current member.
        var hasDeparted: (Member) -> Bool
        var newestIncarnation: (PeerID) -> Incarnation?
        var isKnown: (Member) -> Bool
        /// Whether a membership is a viewer this stage member counts (`Audience`): it may ask for
        /// repair and state (`MessageType.viewersMay`), nothing else a member may.
        var isViewer: (Member) -> Bool
        /// The sender's clock offset, when measured (a keyed group judges send times by it).
        var offsetNanos: (PeerID) -> Int64?
    }

    enum Verdict: Equatable {
        /// Handed to the machine that owns its kind; `provesAlive` when its kind shows that the
        /// sender is alive (a command, a probe: not an announcement, which membership judges).
        case admitted(provesAlive: Bool)
        /// This agent's own datagram, looped back by the network: counted, not a drop.
        case ownEcho
        /// Dropped and counted. `heardOnNetwork`: the network's copy of an announcement the relay
        /// brought first (refused as replayed) still says the sender is reachable on the network.
        case refused(DropReason, detail: String, heardOnNetwork: Announcement? = nil)
    }

    /// The verdict on a decoded datagram (`bytes` as received); `sealed` when it came out of the
    /// relay's seal (`Authentication.admit`).
    mutating func admit(
        _ datagram: Datagram, bytes: [UInt8], from source: Endpoint, receivedAt: WallInstant, now: WallInstant,
        standing: Standing, sealed: Bool = false
    ) -> Verdict {
        guard datagram.session == session else {
            return .refused(.otherSession, detail: "session \(datagram.session)")
        }
        let sender = datagram.sender
        // Only a keyed group judges send times: an open one spares the lookup on every datagram.
        let offset = authentication.keys == nil ? nil : standing.offsetNanos(sender.id)
        if let refusal = authentication.admit(
            datagram, bytes: bytes, receivedAt: receivedAt, senderOffsetNanos: offset, sealed: sealed)
        {
            let onNetwork =
                refusal.reason == .replayed && !source.isRelay ? datagram.payload.announcement : nil
            return .refused(refusal.reason, detail: refusal.detail, heardOnNetwork: onNetwork)
        }
        // Incarnations count tenths of seconds of the sender's clock: one far beyond ours is a
        // takeover attempt (2^32 - 1 would outrank every real restart), not a restart.
        guard sender.incarnation <= Incarnation.initial(at: now + incarnationAheadMax) else {
            return .refused(.implausibleIncarnation, detail: "\(sender)")
        }
        guard sender.id != own else {
            if standing.isOwn(sender.incarnation) { return .ownEcho }
            return .refused(.idConflict, detail: "another agent uses id \(sender.id)")
        }
        let kind = datagram.payload.type
        guard standing.isJoined else { return .refused(.notJoined, detail: "\(kind)") }
        guard !standing.hasDeparted(sender) else { return .refused(.fromDeparted, detail: "\(sender) has left") }
        if let newer = standing.newestIncarnation(sender.id), sender.incarnation < newer {
            return .refused(.staleIncarnation, detail: "\(sender) after incarnation \(newer.rawValue)")
        }
        if let what = kind.membersOnly, !standing.isKnown(sender), !(kind.viewersMay && standing.isViewer(sender)) {
            return .refused(.unknownSender, detail: "\(what) from \(sender)")
        }
        return .admitted(provesAlive: kind.provesSenderAlive)
    }
}

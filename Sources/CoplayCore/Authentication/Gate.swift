/// The gate every decoded datagram passes before any machine reads it: the session, the tag, the
/// send time and the replay window (`Authentication`), a plausible incarnation, not this agent's
/// own, this agent joined, not from a departed membership nor from an incarnation older than one
/// seen; then, by kind, only a current member. A machine of its own, as raft's `Step` checks
/// terms before any state machine sees a message: it decides, and the router carries out.
///
/// What it needs of the rest of the agent comes in as `Standing`: facts about this datagram's
/// sender, looked up by the router, never the machines that know them. Values, not lookups: a
/// datagram is the hot path, and closures for them cost an allocation each on every one
/// (`coplay-bench cost`: a probe 1.69 -> 2.16 µs).
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

    /// What the gate must know of the agent and of one datagram's sender.
    struct Standing {
        var isJoined: Bool
        /// The sender's incarnation is one of this agent's own (now or before a rejoin): what
        /// decides, when the sender uses this agent's id, between an echo and a conflict.
        var isOwnIncarnation: Bool
        /// Membership's memory of the sender: a departed membership, the newest incarnation seen
        /// of its id (live or departed), and whether it is a current member.
        var hasDeparted: Bool
        var newestIncarnation: Incarnation?
        var isKnown: Bool
        /// The sender's clock offset, when measured; looked up only where `judgesSendTimes`.
        var offsetNanos: Int64?
    }

    /// Only a keyed group judges send times: an open one spares the offset's lookup.
    var judgesSendTimes: Bool { authentication.keys != nil }

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

    mutating func admit(
        _ datagram: Datagram, bytes: [UInt8], from source: Endpoint, receivedAt: WallInstant, now: WallInstant,
        standing: Standing
    ) -> Verdict {
        guard datagram.session == session else {
            return .refused(.otherSession, detail: "session \(datagram.session)")
        }
        let sender = datagram.sender
        if let refusal = authentication.admit(
            datagram, bytes: bytes, receivedAt: receivedAt, senderOffsetNanos: standing.offsetNanos)
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
            if standing.isOwnIncarnation { return .ownEcho }
            return .refused(.idConflict, detail: "another agent uses id \(sender.id)")
        }
        let kind = datagram.payload.type
        guard standing.isJoined else { return .refused(.notJoined, detail: "\(kind)") }
        guard !standing.hasDeparted else { return .refused(.fromDeparted, detail: "\(sender) has left") }
        if let newer = standing.newestIncarnation, sender.incarnation < newer {
            return .refused(.staleIncarnation, detail: "\(sender) after incarnation \(newer.rawValue)")
        }
        if let what = kind.membersOnly, !standing.isKnown {
            return .refused(.unknownSender, detail: "\(what) from \(sender)")
        }
        return .admitted(provesAlive: kind.provesSenderAlive)
    }
}

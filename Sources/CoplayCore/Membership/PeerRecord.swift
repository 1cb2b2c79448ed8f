/// What membership knows about one live participant.
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
    /// The group's scale (`Membership.groupScale`) when it was last heard: the interval it was
    /// heartbeating at then, as far as this agent can tell. Its silences are judged at no less.
    /// When most of a large group leaves at once (a party's end), the silences of those staying
    /// would otherwise shrink at once below the interval they are still keeping: at the end of
    /// a crowd of 100 tabs (`Tools/web/crowd.mjs`), as half of them left, the agent suspected
    /// the other half, and gave up 31 of them before their own leave arrived.
    var heardAtScale = 1.0
    public var liveness: Liveness = .alive
    var lastHelloReplyAt: MonotonicInstant?
    /// It sent this agent a clock probe, so it has admitted this agent: the later hellos of its
    /// announce burst need no answer.
    var hasAdmittedUs = false
    /// Its current item, waiting and ready flags and suspensions, from its last announcement.
    public var item: String?
    public var isWaiting = false
    public var isReady = false
    /// By its own waiting policy it holds coordinated starts of its item for a suspended participant.
    public var waitsOutSuspensions = false
    public var suspensions: [String] = []
    /// How its copy of the item differs (`anotherEncode`, announced as `copy:anotherEncode`),
    /// else nil. Announced after the suspensions, but not one: it is waited for and followed as
    /// anyone.
    public var copy: String?
    /// Its announcement's list, as it came: the suspensions, then the copy's kind (one kind so
    /// far, compared whole: the page's module stays small).
    var announced: [String] {
        get { suspensions + (copy == nil ? [] : [Suspensions.anotherEncode]) }
        set {
            suspensions = newValue.filter { $0 != Suspensions.anotherEncode }
            copy = newValue.contains(Suspensions.anotherEncode) ? "anotherEncode" : nil
        }
    }
    /// The commands it had delivered, from its last announcement.
    public var digest = VectorClock()
    /// Multicast reaches it late or incompletely: it asks for time-critical datagrams by unicast.
    public var wantsUnicast = false
    /// A stage member that took its seat by a grant (`Announcement.seat` on a stage member's own
    /// announcement): it speaks for the stage only when no member named or seated by itself is
    /// on it (`Audience.rank`).
    public var seated = false
    /// When it last announced itself over the network (not the relay): while that is recent,
    /// its network endpoint is kept though its announcements also arrive through the relay.
    var heardOnNetworkAt: MonotonicInstant?

    init(member: Member, name: String, endpoint: Endpoint, now: MonotonicInstant) {
        self.member = member
        self.name = name
        self.endpoint = endpoint
        firstSeen = now
        lastHeard = now
    }

    /// Heard from again after it was first seen (not a one-off hello, as an invented peer's is).
    var isEstablished: Bool { lastHeard > firstSeen }

    /// What `peers` and the peer events show; the clock fields come from clock sync.
    func info(now: MonotonicInstant, offset: OffsetEstimate?, isClockSynced: Bool) -> PeerInfo {
        var info = PeerInfo(
            member: member, name: name, endpoint: endpoint, isSuspected: liveness == .suspected,
            lastSeenAgo: now - lastHeard, offset: offset, isClockSynced: isClockSynced)
        info.item = item
        info.isWaiting = isWaiting
        info.isReady = isReady
        info.waitsOutSuspensions = waitsOutSuspensions
        info.suspensions = suspensions
        info.copy = copy
        info.wantsUnicast = wantsUnicast
        return info
    }
}

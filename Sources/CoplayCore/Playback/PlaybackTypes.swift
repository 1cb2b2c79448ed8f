/// The group state of one item: the command that won (times on the local clock) and the
/// timeline it defines.
public struct ItemGroupState: Hashable, Sendable {
    public var winner: CommandEnvelope
    /// The timeline on the local clock, as converted when the command arrived.
    public var timeline: Timeline
    /// Whose clock the command's times were on, and the offset used to convert them: as that
    /// clock drifts against ours the timeline is re-mapped (`nil` for this agent's own commands).
    public var clockSource: ClockSource?
}

/// The clock a command's times were converted from.
public struct ClockSource: Hashable, Sendable {
    public var peer: PeerID
    public var offsetNanos: Int64
}

/// A coordinated start or seek of the current item: every participant prepares at `position`
/// and reports ready; the originator (or, failing it, a fallback) then issues the start.
public struct PendingStart: Hashable, Sendable {
    /// The play or seek command being coordinated.
    public var trigger: Dot
    public var item: String
    public var rate: Double
    public var position: Double
    /// When it was requested, on the local wall clock.
    public var requestedAt: WallInstant
    /// The participants that reported ready (this agent included once it is).
    public var ready: Set<Member> = []
    /// When this agent last said it is ready, while the start is collected (it says so again
    /// every `Settings.readyRepeatInterval`: a lost `ready` must not hold the start to its deadline).
    public var readySentAt: MonotonicInstant?
}

/// Where this agent stands in coordinated playback of its current item.
///
/// Legal transitions: `idle` → `collecting` (a play or seek is delivered) → `decided` (this
/// agent issued the start) → `idle` (the start, or any later command, is delivered; a
/// suspension begins; the item changes; the agent leaves). `collecting` → `idle` likewise.
public enum Coordination: Hashable, Sendable {
    case idle
    /// Waiting for participants to be ready.
    case collecting(PendingStart)
    /// This agent issued the start; it waits for it to be delivered.
    case decided(PendingStart)

    public var isWaiting: Bool {
        if case .idle = self { return false }
        return true
    }

    var pending: PendingStart? {
        switch self {
        case .idle: nil
        case .collecting(let start), .decided(let start): start
        }
    }
}

/// What playback needs to know of the rest of the agent for one input: who it is, whether it is
/// joined, the peers (names, items, suspensions, liveness) and their clocks. Read-only copies.
struct PlaybackContext {
    var now: Timestamp
    var member: Member
    var name: String
    var state: SessionState
    /// The live peers, by id (membership's table).
    var peers: [PeerID: PeerRecord]
    /// The estimate of a peer's clock offset now (live or departed), when there is one.
    var offset: (PeerID) -> OffsetEstimate?

    var isJoined: Bool { state.isJoined }

    func originator(_ origin: Member) -> Originator {
        Membership.originator(origin, local: member, localName: name, peers: peers)
    }
}

/// How the player is being steered onto the group's timeline from its position samples.
public struct Correction: Hashable, Sendable {
    /// The relative rate nudge in force: +0.003 plays 0.3% faster than the group.
    public var nudge = 0.0
    /// The integral part of the nudge: what the player's own speed error has been found to be
    /// (a sound card 0.1% fast settles at -0.001), so that the error itself settles at zero.
    public var trim = 0.0
    /// When the last sample was taken.
    public var lastSampleAt: WallInstant?
    /// The last sample's error in seconds (positive: ahead of the group); nil when not playing.
    public var sampleError: Double?
    /// The player's own last position sample: where it said it was, and when (local wall clock).
    public var samplePosition: Double?
    public var sampleAt: WallInstant?
    /// The error the last seek correction removed, in seconds.
    public var lastSeek: Double?
    /// Whether the player reports samples at all (then they steer it, not the core's belief).
    public var playerSamples = false

    public init() {}
}

/// What an agent reports on its standard output, one line per event.
public enum Event: Hashable, Sendable {
    /// This agent's session state changed.
    case session(SessionReport)
    /// A participant was seen for the first time (or with a new incarnation).
    case peerJoined(PeerInfo)
    /// A participant is gone, and why.
    case peerLeft(PeerInfo, reason: PeerDeparture)
    /// A participant has been silent for `Settings.suspectAfter` and is being probed.
    case peerUnresponsive(PeerInfo)
    /// A suspected participant was heard from again.
    case peerResponsive(PeerInfo)
    /// The first good clock-offset estimate for a participant.
    case clockSynced(PeerInfo)
    /// The answer to `status`.
    case status(StatusReport)
    /// The answer to `peers`.
    case peers([PeerInfo])
    /// The answer to `help`.
    case help([ConsoleCommand.Usage])
    /// A console line that is not a valid command.
    case commandError(ConsoleCommand.ParseError)
}

/// Why a participant left the table.
public enum PeerDeparture: String, Hashable, Sendable {
    /// It said `leave`.
    case left
    /// Its agent exited gracefully.
    case shutdown
    /// Silent for `Settings.deadAfter`: crashed or cut off.
    case timeout
    /// A newer incarnation of the same id appeared.
    case restarted
}

/// This agent's session state, as reported in events.
public struct SessionReport: Hashable, Sendable {
    public var state: SessionState
    public var member: Member
    public init(state: SessionState, member: Member) {
        self.state = state
        self.member = member
    }
}

/// A participant as the `peers` command and the peer events show it.
public struct PeerInfo: Hashable, Sendable {
    public var member: Member
    public var name: String
    public var endpoint: Endpoint
    public var isSuspected: Bool
    /// How long since anything was heard from it.
    public var lastSeenAgo: Duration
    /// The current clock-offset estimate, once there is one.
    public var offset: OffsetEstimate?
    /// Whether enough samples have arrived for the estimate to be trusted.
    public var isClockSynced: Bool

    public init(
        member: Member, name: String, endpoint: Endpoint, isSuspected: Bool, lastSeenAgo: Duration,
        offset: OffsetEstimate?,
        isClockSynced: Bool
    ) {
        self.member = member
        self.name = name
        self.endpoint = endpoint
        self.isSuspected = isSuspected
        self.lastSeenAgo = lastSeenAgo
        self.offset = offset
        self.isClockSynced = isClockSynced
    }
}

/// The answer to `status`.
public struct StatusReport: Hashable, Sendable {
    public var member: Member
    public var name: String
    public var sessionName: String
    public var state: SessionState
    /// The current item's id; nil until an item is loaded.
    public var item: String?
    public var rate: Double
    /// The playback position in seconds at `sampledAt`.
    public var positionSeconds: Double
    public var sampledAt: Timestamp
    public var isWaiting: Bool
    public var suspensions: [String]
    public var peerCount: Int
    public var counters: Counters

    public init(
        member: Member, name: String, sessionName: String, state: SessionState, item: String?, rate: Double,
        positionSeconds: Double, sampledAt: Timestamp, isWaiting: Bool, suspensions: [String], peerCount: Int,
        counters: Counters
    ) {
        self.member = member
        self.name = name
        self.sessionName = sessionName
        self.state = state
        self.item = item
        self.rate = rate
        self.positionSeconds = positionSeconds
        self.sampledAt = sampledAt
        self.isWaiting = isWaiting
        self.suspensions = suspensions
        self.peerCount = peerCount
        self.counters = counters
    }
}

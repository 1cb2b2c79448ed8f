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
    /// A participant's item, waiting or ready state, or suspensions changed.
    case peerChanged(PeerInfo)
    /// The first good clock-offset estimate for a participant.
    case clockSynced(PeerInfo)
    /// The answer to `status`. Boxed: its report (705 bytes in the 64-bit build) made every event,
    /// and every directive and output that carries one, as large, and each a pause moved was
    /// copied whole (a viewer's pause 5–8% dearer, a coordinated start 17%, by
    /// Tools/web/command-cost.mjs). The next largest case, a peer's info, is 169 bytes.
    indirect case status(StatusReport)
    /// The answer to `peers`.
    case peers([PeerInfo])
    /// The answer to `help`.
    case help([ConsoleCommand.Usage])
    /// A console line that is not a valid command, or a command that cannot be carried out now.
    case commandError(ConsoleCommand.ParseError)
    /// The group's shared activity changed.
    case activityChanged(Activity, originator: Originator)
    /// `share` named the group's current activity: nothing is shared again.
    case activityUnchanged(Activity)
    /// What became of a time proposed with `resume <id> at=…`.
    case proposal(ProposalReport)
    /// This agent's current item changed.
    case itemChanged(ItemReport)
    /// The current item was unloaded (the session ended): nothing is loaded now.
    case itemUnloaded(item: String, reason: String)
    /// The local player failed: a load error, or it quit. The text says how.
    case playerError(String)
    /// Playback of the current item is waiting for a coordinated start or seek.
    case waiting(PlaybackReport)
    /// Playback of the current item started, or continues at a new rate.
    case playing(PlaybackReport)
    /// Playback of the current item paused.
    case paused(PlaybackReport)
    /// The position jumped (a seek, a snap to the originator's pause time, a catch-up).
    case timeJumped(PlaybackReport)
    /// The player's rate changed (to 0 when pausing or waiting), and why.
    case rateChanged(PlaybackReport)
    /// A command was for another item than the current one: kept as that item's group state.
    case commandIgnored(IgnoredCommand)
    /// A suspension began or ended (`stallRecovery` here).
    case suspension(SuspensionReport)
    /// An app message for this participant.
    case message(MessageReport)
    /// This agent sent an app message.
    case messageSent(MessageSent)
    /// This agent caught up from a member's snapshot of the group state (state transfer).
    case stateAdopted(StateAdoptedReport)
    /// The group's queue changed: an entry added, removed or moved, the queue cleared, or the
    /// group moved to an entry. Reported once by every agent, with who did it.
    case queueChanged(QueueChangeReport)
    /// The answer to `queue`.
    case queue(QueueReport)
    /// An interstitial was scheduled, began or ended here.
    case interstitial(InterstitialReport)
}

/// An interstitial scheduled (for a main-item time), begun or ended on this agent.
public struct InterstitialReport: Hashable, Sendable {
    public enum Phase: String, Hashable, Sendable {
        case scheduled, began, ended
    }
    public var phase: Phase
    public var interstitial: Interstitial
    /// The main item it interrupts, and where.
    public var item: String
    public var position: Double
    /// For the whole group, or for this participant only.
    public var forAll: Bool
    /// Who asked for it (a group interstitial's issuer; this agent for its own).
    public var originator: Originator
    /// Why it ended early (its player failed, the item changed, the session ended); nil when it
    /// played its duration.
    public var cutShort: String?

    public init(
        phase: Phase, interstitial: Interstitial, item: String, position: Double, forAll: Bool,
        originator: Originator, cutShort: String? = nil
    ) {
        self.phase = phase
        self.interstitial = interstitial
        self.item = item
        self.position = position
        self.forAll = forAll
        self.originator = originator
        self.cutShort = cutShort
    }
}

/// A change to the queue, with the entry's title for people.
public struct QueueChangeReport: Hashable, Sendable {
    public var change: QueueChange
    public var title: String?
    public var url: String?
    public init(change: QueueChange, title: String?, url: String?) {
        self.change = change
        self.title = title
        self.url = url
    }
}

/// The queue as it stands, in order, and the entry the group is on.
public struct QueueReport: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public var item: QueueItem
        public var addedBy: Originator
        public init(item: QueueItem, addedBy: Originator) {
            self.item = item
            self.addedBy = addedBy
        }
    }
    public var entries: [Entry]
    public var current: String?
    public init(entries: [Entry], current: String?) {
        self.entries = entries
        self.current = current
    }
}

/// A snapshot adopted: whose, how many winning commands it carried, and how many commands it
/// stood for that this agent had not delivered.
public struct StateAdoptedReport: Hashable, Sendable {
    public var from: Originator
    public var snapshot: UInt64
    public var winners: Int
    public var commandsCovered: Int
}

/// A time proposed when a suspension ends (`resume <id> at=<seconds>`), and its fate.
public struct ProposalReport: Hashable, Sendable {
    public enum Outcome: Hashable, Sendable {
        /// Other suspensions remain: it is sent when the last of them ends.
        case held(suspensionsRemaining: Int)
        /// Sent to the group (as a seek).
        case sent
        /// Not sent: the group moved on meanwhile (the words say how, e.g. "a pause by bob").
        case superseded(by: String)
    }

    public var item: String
    public var position: Double
    public var outcome: Outcome
}

/// Who caused a change: the participant whose command it was.
public struct Originator: Hashable, Sendable {
    public var member: Member
    public var name: String
    /// Whether it was this agent.
    public var isLocal: Bool
    public init(member: Member, name: String, isLocal: Bool) {
        self.member = member
        self.name = name
        self.isLocal = isLocal
    }
}

public struct ItemReport: Hashable, Sendable {
    public var item: LoadedItem
    /// `load` (this agent only) or `share` (the group's activity).
    public var source: String
    /// Whether the group already had state for it, which was adopted (a late join).
    public var adoptedGroupState: Bool
}

/// A playback change and its cause.
public struct PlaybackReport: Hashable, Sendable {
    public var item: String
    public var rate: Double
    public var position: Double
    public var originator: Originator
    /// The command behind it: play, start, play-now, pause, seek, rate, catch-up.
    public var reason: String
    public var dot: Dot
    /// A live item's edge (the newest program date its playlist listed at the player's last
    /// reading), for saying how far behind it the group plays; nil for an item that is not live.
    public var liveEdge: Double? = nil
}

public struct IgnoredCommand: Hashable, Sendable {
    public var commandItem: String
    public var currentItem: String?
    public var operation: String
    public var originator: Originator
    public var dot: Dot
}

public struct SuspensionReport: Hashable, Sendable {
    public var id: UInt32
    public var reason: String
    public var began: Bool
    public var item: String
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
    /// What it announced: its current item, whether it waits for a coordinated start, whether its
    /// player is prepared, its suspensions.
    public var item: String? = nil
    public var isWaiting = false
    public var isReady = false
    public var waitsOutSuspensions = false
    public var suspensions: [String] = []
    /// How its copy of the item differs (`anotherEncode`), else nil.
    public var copy: String? = nil
    /// Multicast reaches it late or incompletely: it gets time-critical datagrams by unicast too.
    public var wantsUnicast = false
    /// "web" for a browser tab (it announces `LocalIdentity.browserPort`), else "agent".
    public var kind: String { endpoint.port == LocalIdentity.browserPort ? "web" : "agent" }

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

/// This agent's part in a party with an audience (`status` → `relay.audience`): a viewer or a
/// stage member, whether it speaks for the stage, and the viewers its table counts.
public struct AudienceStatus: Hashable, Sendable {
    public var isViewer = false
    public var speaks = false
    public var viewers = 0
    /// How many watch the party (`Instance.watching`): nil off the relay, or for a viewer that has
    /// heard no summary lately.
    public var watching: Int?
    public init(isViewer: Bool = false, speaks: Bool = false, viewers: Int = 0, watching: Int? = nil) {
        (self.isViewer, self.speaks, self.viewers, self.watching) = (isViewer, speaks, viewers, watching)
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
    /// The group's shared activity, if any.
    public var activity: Activity?
    /// The local player's kind and how it is being steered onto the group's timeline.
    public var playerKind: String
    public var correction: Correction
    /// The interstitial playing here (its id), if any.
    public var interstitial: String?
    /// A live item's edge: the newest program date its playlist listed at the player's last
    /// reading (`PlayerReport.liveWindow`); nil for an item that is not live.
    public var liveEdge: Double?
    /// Its part in a party with an audience (written under the relay's record: only a relay has one).
    public var audience = AudienceStatus()

    public init(
        member: Member, name: String, sessionName: String, state: SessionState, item: String?, rate: Double,
        positionSeconds: Double, sampledAt: Timestamp, isWaiting: Bool, suspensions: [String], peerCount: Int,
        counters: Counters, activity: Activity? = nil, playerKind: String = "simulated",
        correction: Correction = Correction(), interstitial: String? = nil, liveEdge: Double? = nil
    ) {
        self.interstitial = interstitial
        self.liveEdge = liveEdge
        self.activity = activity
        self.playerKind = playerKind
        self.correction = correction
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

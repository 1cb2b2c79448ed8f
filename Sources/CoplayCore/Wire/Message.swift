/// The messages of wire format version 1. PROTOCOL.md gives each one byte by byte.

/// The type byte of a datagram. Values not listed are rejected as `unknownType`.
public enum MessageType: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    /// Multicast announce on joining, and its unicast answer.
    case hello = 0x01
    /// Periodic multicast liveness.
    case heartbeat = 0x02
    /// Graceful departure of one membership.
    case leave = 0x03
    /// Unicast clock probe (NTP's T1).
    case probe = 0x04
    /// Unicast answer to a clock probe (T1 echoed, T2, T3).
    case probeReply = 0x05
    /// The members the sender knows and where it reaches them, unicast to members reached
    /// without multicast (`--peer`), so a group joined through one seed forms a whole.
    case peerList = 0x06
    /// How many viewers the stage's speaker counts (`Audience`): every
    /// `AudienceSettings.summaryInterval` on the relay, to everyone.
    case audience = 0x07
    /// A group command (multicast), or its retransmission (unicast, answering a nack).
    case command = 0x10
    /// A request for missing commands, unicast to an agent that has them.
    case nack = 0x11
    /// "I am prepared for this waiting start or seek" (multicast).
    case ready = 0x12
    /// The session ends for everyone (multicast, repeated).
    case end = 0x13
    /// One part of an unreliable app message (multicast, never repaired).
    case unreliableMessage = 0x14
    /// "Send me your state": a lagging or joining agent asks a member for a snapshot (unicast).
    case stateRequest = 0x15
    /// One part of a snapshot of the group state (unicast, answering a state request or a nack
    /// for commands the sender no longer stores).
    case state = 0x16

    public var description: String {
        switch self {
        case .hello: "hello"
        case .heartbeat: "heartbeat"
        case .leave: "leave"
        case .probe: "probe"
        case .probeReply: "probe-reply"
        case .peerList: "peer-list"
        case .audience: "audience"
        case .command: "command"
        case .nack: "nack"
        case .ready: "ready"
        case .end: "end"
        case .unreliableMessage: "unreliable-message"
        case .stateRequest: "state-request"
        case .state: "state"
        }
    }
}

/// A member and the unicast endpoint another member reaches it at: one entry of a `peer-list`.
public struct PeerEntry: Hashable, Sendable {
    public var member: Member
    public var endpoint: Endpoint
    public init(member: Member, endpoint: Endpoint) {
        self.member = member
        self.endpoint = endpoint
    }
}

/// Who is speaking and where to answer them: the payload of `hello` and `heartbeat`.
public struct Announcement: Hashable, Sendable {
    /// True on a hello that answers another's hello (it is itself not answered).
    public var isReply: Bool
    /// The UDP port of the sender's unicast socket, on the datagram's source address.
    public var unicastPort: UInt16
    /// The human name, UTF-8, at most `Settings.nameBytesMax` bytes.
    public var name: String
    /// The id of the sender's current item, if any (at most 128 bytes).
    public var item: String?
    /// The sender is waiting for a coordinated start or seek.
    public var isWaiting: Bool
    /// The sender's player is prepared (it can start at once).
    public var isReady: Bool
    /// By its own waiting policy (`--wait-for`, `--wait-limit`), the sender waits out the
    /// suspension of a participant on its item: coordinated starts of that item are held for it.
    public var waitsOutSuspensions: Bool
    /// The reasons of the sender's active suspensions (at most 8, each 1 to 64 bytes).
    public var suspensions: [String]
    /// The commands the sender has delivered, per origin: peers that have fewer ask it for the rest.
    public var digest: VectorClock
    /// On a group announcement: its number and when it was sent, from which receivers learn how
    /// promptly and how completely the group's multicast reaches them (`MulticastPath`).
    public var path: PathStamp?
    /// Multicast reaches the sender late or incompletely (an access point holding group frames
    /// for its DTIM beacon): it asks for time-critical datagrams by unicast too.
    public var wantsUnicast: Bool
    /// The sender is a viewer (`AudienceSettings`): a stage member counts it and answers its
    /// requests, and never takes it into its table of peers.
    public var isViewer: Bool
    /// A seat on the stage (`AudienceSettings.Role.firstCome`): on a viewer's announcement, it asks
    /// for one; on a stage member's answer to a viewer's hello, it grants one; on a stage member's
    /// other announcements, it took its own seat by a grant (it ranks after the others to speak).
    public var seat: Bool

    public init(
        isReply: Bool = false, unicastPort: UInt16, name: String, item: String? = nil, isWaiting: Bool = false,
        isReady: Bool = false, waitsOutSuspensions: Bool = false, suspensions: [String] = [],
        digest: VectorClock = VectorClock(), path: PathStamp? = nil, wantsUnicast: Bool = false, isViewer: Bool = false,
        seat: Bool = false
    ) {
        self.isViewer = isViewer
        self.seat = seat
        self.path = path
        self.wantsUnicast = wantsUnicast
        self.isReply = isReply
        self.unicastPort = unicastPort
        self.name = name
        self.item = item
        self.isWaiting = isWaiting
        self.isReady = isReady
        self.waitsOutSuspensions = waitsOutSuspensions
        self.suspensions = suspensions
        self.digest = digest
    }

    public static let suspensionsMax = 8
    public static let suspensionReasonBytesMax = 64
}

/// A group announcement's place in its sender's sequence of them and when it was sent.
public struct PathStamp: Hashable, Sendable {
    /// Group announcements the sender has made in this incarnation, this one included: a gap
    /// in what arrives by multicast is a loss.
    public var number: UInt32
    /// When it was sent, on the sender's wall clock.
    public var sentAt: WallInstant

    public init(number: UInt32, sentAt: WallInstant) {
        self.number = number
        self.sentAt = sentAt
    }
}

/// Why a membership ends gracefully.
public enum LeaveReason: UInt8, Sendable, CustomStringConvertible {
    /// The participant asked to leave (`leave`) and may join again as a new incarnation.
    case left = 0
    /// The agent is exiting (`quit`, end of input, SIGINT or SIGTERM).
    case shutdown = 1

    public var description: String {
        switch self {
        case .left: "left"
        case .shutdown: "shutdown"
        }
    }
}

/// A clock probe: the requester's transmit time on its own wall clock (T1) and an opaque token
/// that the reply echoes, by which the requester finds the probe's send time on its own
/// monotonic clock.
public struct ClockProbe: Hashable, Sendable {
    /// Opaque to the responder: the requester's name for this probe.
    public var token: UInt64
    /// T1: requester's wall clock at transmit.
    public var originWall: WallInstant

    public init(token: UInt64, originWall: WallInstant) {
        self.token = token
        self.originWall = originWall
    }
}

/// The answer to a clock probe.
public struct ClockProbeReply: Hashable, Sendable {
    /// The probe's token, echoed.
    public var token: UInt64
    /// T1, echoed from the probe.
    public var originWall: WallInstant
    /// T2: responder's wall clock when the probe arrived.
    public var receiveWall: WallInstant
    /// T3: responder's wall clock at transmit of this reply.
    public var transmitWall: WallInstant

    public init(token: UInt64, originWall: WallInstant, receiveWall: WallInstant, transmitWall: WallInstant) {
        self.token = token
        self.originWall = originWall
        self.receiveWall = receiveWall
        self.transmitWall = transmitWall
    }
}

/// A range of one origin's commands that an agent is missing: counters `from...to`.
public struct MissingRange: Hashable, Sendable {
    public var origin: Member
    public var from: UInt32
    public var to: UInt32
    public init(origin: Member, from: UInt32, to: UInt32) {
        self.origin = origin
        self.from = from
        self.to = to
    }
}

/// A request for the responder's snapshot: all its parts, or (to resume a transfer that lost
/// some) only the parts `wanted` of snapshot `snapshot`.
public struct StateRequest: Hashable, Sendable {
    /// The snapshot being assembled, or 0 for "the current one, whole".
    public var snapshot: UInt64
    /// Bit i set: part `base` + i is wanted. 0 asks for every part.
    public var wanted: UInt32
    /// The index of the part bit 0 stands for: a snapshot may have up to 255 parts, a request
    /// names 32 of them, from the first one still missing.
    public var base: UInt8
    public init(snapshot: UInt64 = 0, wanted: UInt32 = 0, base: UInt8 = 0) {
        self.snapshot = snapshot
        self.wanted = wanted
        self.base = base
    }
}

/// One part of a snapshot of the sender's group state: the commands that decide it (the winning
/// `share`, and each item's winning command) and the slice of the frontier (the sender's
/// delivered vector clock) this part carries. The whole snapshot is the union of its parts; it
/// stands for every command at or below the frontier. Message commands among the winners are not
/// state: they are reliable message parts the receiver has not delivered, carried with the
/// snapshot so that it never swallows a message. Every command travels without dependencies.
public struct StatePart: Hashable, Sendable {
    /// The snapshot's identity: a hash of its content, the same for the same state.
    public var snapshot: UInt64
    public var index: UInt8
    public var count: UInt8
    /// The sender's Lamport clock when it made the snapshot (the same in every part).
    public var lamport: UInt64
    /// Some entries of the frontier (each entry is in exactly one part).
    public var frontier: VectorClock
    /// Winning commands (times on the sender's clock), then message commands.
    public var winners: [CommandEnvelope]

    public init(
        snapshot: UInt64, index: UInt8, count: UInt8, lamport: UInt64, frontier: VectorClock,
        winners: [CommandEnvelope]
    ) {
        self.snapshot = snapshot
        self.index = index
        self.count = count
        self.lamport = lamport
        self.frontier = frontier
        self.winners = winners
    }
}

/// A datagram's body; its case decides the type byte.
public enum Payload: Hashable, Sendable {
    case hello(Announcement)
    case heartbeat(Announcement)
    case leave(LeaveReason)
    case probe(ClockProbe)
    case probeReply(ClockProbeReply)
    /// A command; `isRepair` marks a retransmission answering a nack.
    case command(CommandEnvelope, isRepair: Bool)
    case nack([MissingRange])
    /// Ready for the waiting start or seek `trigger`.
    case ready(trigger: Dot)
    /// The session ends for everyone, for the reason given.
    case end(reason: String)
    /// One part of an unreliable app message.
    case unreliableMessage(MessagePart)
    /// Members the sender knows, with the endpoints it reaches them at (at most
    /// `WireFormat.peerListEntriesMax`).
    case peerList([PeerEntry])
    case stateRequest(StateRequest)
    case state(StatePart)
    /// A stage member's count of the audience (`MessageType.audience`).
    case audience(AudienceSummary)

    public var type: MessageType {
        switch self {
        case .hello: .hello
        case .heartbeat: .heartbeat
        case .leave: .leave
        case .probe: .probe
        case .probeReply: .probeReply
        case .command: .command
        case .nack: .nack
        case .ready: .ready
        case .end: .end
        case .unreliableMessage: .unreliableMessage
        case .peerList: .peerList
        case .stateRequest: .stateRequest
        case .state: .state
        case .audience: .audience
        }
    }
}

/// The speaker's summary of the audience: the viewers in its own table (each counted by the clock
/// probes it sends anyway, `Audience`), and the whole audience as it knows it (its own, and
/// another speaker's latest while two speak for a moment). One datagram per interval, not one
/// per viewer: how every participant, viewers too, learns how many watch.
public struct AudienceSummary: Hashable, Sendable {
    /// Viewers in the sender's table.
    public var viewers: UInt32
    /// The whole audience the sender knows of, its own viewers included (so never fewer).
    public var audience: UInt32
    public init(viewers: UInt32, audience: UInt32) {
        (self.viewers, self.audience) = (viewers, audience)
    }
}

/// One coplay datagram: the header's fields and the payload.
public struct Datagram: Hashable, Sendable {
    public var session: SessionID
    public var sender: Member
    /// Per-sender-incarnation datagram counter, starting at 1 and wrapping at 2^32.
    public var sequence: UInt32
    public var payload: Payload
    /// When the sender sent it, by its own wall clock (flag bit 1): every datagram of a keyed
    /// group carries it, under the tag, so that a recorded one cannot pass for news later
    /// (`Freshness`). Set as the datagram is encoded, not when it is made.
    public var sentAt: WallInstant?
    /// The authentication tag, empty when the datagram is not authenticated.
    public var authTag: [UInt8]

    public init(
        session: SessionID, sender: Member, sequence: UInt32, payload: Payload, sentAt: WallInstant? = nil,
        authTag: [UInt8] = []
    ) {
        self.session = session
        self.sender = sender
        self.sequence = sequence
        self.payload = payload
        self.sentAt = sentAt
        self.authTag = authTag
    }
}

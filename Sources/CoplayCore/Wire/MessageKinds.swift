// What the receive table asks of each kind of datagram, besides its payload.

extension MessageType {
    /// What a datagram of this kind is called when it is dropped for coming from no current
    /// member; nil for kinds anyone may send. Only a member may ask for repair or state, send
    /// state, point this agent's traffic somewhere (with a key, only an authentic one), or end
    /// the session for everyone.
    var membersOnly: String? {
        switch self {
        case .nack: "nack"
        case .stateRequest: "state request"
        case .state: "state"
        case .peerList: "peer list"
        case .end: "end"
        case .audience: "audience summary"
        case .hello, .heartbeat, .leave, .probe, .probeReply, .command, .ready, .unreliableMessage: nil
        }
    }

    /// Whether a datagram of this kind, sent to the whole group, goes through the relay to the
    /// stage alone (`RelayCarriage.frame`): the stage's membership and readiness, which the
    /// audience does not take part in. Commands and the end go to everyone.
    var isStageOnly: Bool {
        switch self {
        case .hello, .heartbeat, .leave, .ready, .peerList, .probe, .probeReply, .nack, .stateRequest, .state,
            .audience:
            true
        case .command, .end, .unreliableMessage: false
        }
    }

    /// Whether a viewer in a stage member's table (`Audience`) may send a datagram of this
    /// members-only kind: it asks for repair and for the state, as a member does.
    var viewersMay: Bool { self == .nack || self == .stateRequest }

    /// Whether a datagram of this kind proves its known sender alive on arrival. Announcements
    /// and leaves are membership's own input; a probe reply proves it only with a sample; an end
    /// ends the session.
    var provesSenderAlive: Bool {
        switch self {
        case .probe, .command, .nack, .stateRequest, .state, .ready, .unreliableMessage, .peerList, .audience: true
        case .hello, .heartbeat, .leave, .probeReply, .end: false
        }
    }
}

extension Payload {
    /// The announcement of a hello or heartbeat.
    var announcement: Announcement? {
        switch self {
        case .hello(let announcement), .heartbeat(let announcement): announcement
        default: nil
        }
    }

    /// Late, it is felt: a command (a pause, a start instant), readiness for a coordinated start,
    /// the end of the session. A member whose multicast is slow gets these by unicast too, and a
    /// shell sends them in the faster class of service where the network has one
    /// (`Settings.expeditedTrafficClass`); a repair is not (it answers a loss, in bulk).
    public var isTimeCritical: Bool {
        switch self {
        case .command(_, let isRepair): !isRepair
        case .ready, .end: true
        default: false
        }
    }

    /// Sent on the sender's own schedule (a heartbeat, a hello that answers nothing): what tells
    /// `Reach` that the group's multicast carries this sender's traffic.
    var isUnsolicited: Bool {
        switch self {
        case .hello(let announcement): !announcement.isReply
        case .heartbeat: true
        default: false
        }
    }
}

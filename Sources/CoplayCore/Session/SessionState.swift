/// The local participant's membership of its session.
///
/// Legal transitions:
/// - `waiting` → `joined`: `start()` or the `join` command.
/// - `joined` → `invalidated`: the `leave` or `quit` command, end of input, a signal.
/// - `invalidated` → `joined`: the `join` command, as a new incarnation.
/// Every other transition is a bug and traps with the state in the message.
public enum SessionState: Hashable, Sendable {
    /// Created, not yet a member.
    case waiting
    /// A member since the instant given.
    case joined(since: MonotonicInstant)
    /// No longer a member, for the reason given.
    case invalidated(reason: InvalidationReason)

    public var name: String {
        switch self {
        case .waiting: "waiting"
        case .joined: "joined"
        case .invalidated: "invalidated"
        }
    }

    public var isJoined: Bool {
        if case .joined = self { return true }
        return false
    }
}

/// Why this agent's membership ended.
public enum InvalidationReason: Hashable, Sendable, CustomStringConvertible {
    /// The `leave` command.
    case left
    /// The agent is exiting.
    case shutdown
    /// A participant ended the session for everyone.
    case ended(by: String, reason: String)

    public var description: String {
        switch self {
        case .left: "left"
        case .shutdown: "shutdown"
        case .ended(let by, let reason): reason.isEmpty ? "ended by \(by)" : "ended by \(by): \(reason)"
        }
    }
}

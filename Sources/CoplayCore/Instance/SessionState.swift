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
    case invalidated(reason: LeaveReason)

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

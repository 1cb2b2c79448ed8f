/// The local membership of the session: joining, leaving (with repeated leave copies), a new
/// incarnation on rejoin, and the sequence numbers of everything this agent sends.
///
/// Phases and their legal transitions:
/// - `waiting` → `joined`: `start()` or the `join` command.
/// - `joined` → `leaving`: `leave`, `quit`, end of input, a signal, an `end` sent or received.
/// - `leaving` → `invalidated`: the last leave copy went out (then exit, if asked to).
/// - `invalidated` (or `leaving`) → `joined`: `join`, as a new incarnation.
/// Any other transition is a bug and traps with the phase in the message.
struct SessionLifecycle: Sendable {
    enum Phase: Sendable {
        case waiting
        case joined(since: MonotonicInstant)
        /// Invalidated, with copies of the leave (or end) datagram still to send at `copiesDue`.
        case leaving(reason: InvalidationReason, copy: Datagram, copiesDue: [MonotonicInstant], exitAfter: Bool)
        case invalidated(reason: InvalidationReason)
    }

    /// What a timer tick produced.
    enum Output: Hashable, Sendable {
        /// Multicast this leave copy.
        case send(Datagram)
        /// The last copy is out and `quit` asked to exit.
        case exit
    }

    let session: SessionID
    let id: PeerID
    private(set) var phase: Phase = .waiting
    private(set) var incarnation: Incarnation
    /// This agent's own earlier incarnations (a leave and a join in one burst leaves copies of the
    /// old leave in flight): their echoes are its own, not another agent's. At most
    /// `incarnationsRememberedMax`, the oldest forgotten first.
    private var pastIncarnations: [Incarnation] = []
    private let incarnationsRememberedMax: Int
    private var sequence: UInt32 = 0

    init(session: SessionID, id: PeerID, now: Timestamp, incarnationsRememberedMax: Int = 8) {
        self.session = session
        self.id = id
        self.incarnationsRememberedMax = incarnationsRememberedMax
        incarnation = Incarnation.initial(at: now.wall)
    }

    /// Whether `incarnation` is this agent's, now or before.
    func isOwn(_ incarnation: Incarnation) -> Bool {
        incarnation == self.incarnation || pastIncarnations.contains(incarnation)
    }

    var member: Member { Member(id: id, incarnation: incarnation) }

    /// The state as the outside sees it: leaving is already invalidated.
    var state: SessionState {
        switch phase {
        case .waiting: .waiting
        case .joined(let since): .joined(since: since)
        case .leaving(let reason, _, _, _), .invalidated(let reason): .invalidated(reason: reason)
        }
    }

    var isJoined: Bool { state.isJoined }

    /// Joins; returns whether this is a new incarnation (a rejoin), whose replicated state
    /// starts afresh.
    mutating func join(now: Timestamp) -> Bool {
        let isRejoin: Bool
        switch phase {
        case .waiting: isRejoin = false
        case .leaving, .invalidated: isRejoin = true
        case .joined: preconditionFailure("join in phase \(phase)")
        }
        if isRejoin {
            pastIncarnations.append(incarnation)
            if pastIncarnations.count > incarnationsRememberedMax { pastIncarnations.removeFirst() }
            incarnation = max(incarnation.next, Incarnation.initial(at: now.wall))
        }
        sequence = 0
        phase = .joined(since: now.monotonic)
        return isRejoin
    }

    /// Leaves with `copy` (a stamped leave or end), sent at each of `copyOffsets` from now.
    mutating func leave(
        sending copy: Datagram, reason: InvalidationReason, copyOffsets: [Duration], now: MonotonicInstant
    ) {
        guard case .joined = phase else { preconditionFailure("leaving (\(reason)) in phase \(phase)") }
        let offsets = copyOffsets.isEmpty ? [.zero] : copyOffsets.ordered()
        phase = .leaving(reason: reason, copy: copy, copiesDue: offsets.map { now + $0 }, exitAfter: false)
    }

    /// `quit`: exit once the last leave copy is out. Returns true when that is already so.
    mutating func requestExit() -> Bool {
        switch phase {
        case .leaving(let reason, let copy, let due, _):
            phase = .leaving(reason: reason, copy: copy, copiesDue: due, exitAfter: true)
            return false
        case .waiting, .invalidated: return true
        case .joined: preconditionFailure("requestExit while joined: leave first")
        }
    }

    mutating func tick(now: MonotonicInstant) -> [Output] {
        guard case .leaving(let reason, let copy, var due, let exitAfter) = phase else { return [] }
        var out: [Output] = []
        while let first = due.first, first <= now {
            due.removeFirst()
            out.append(.send(copy))
        }
        if due.isEmpty {
            phase = .invalidated(reason: reason)
            if exitAfter { out.append(.exit) }
        } else {
            phase = .leaving(reason: reason, copy: copy, copiesDue: due, exitAfter: exitAfter)
        }
        return out
    }

    var nextWake: MonotonicInstant? {
        if case .leaving(_, _, let due, _) = phase { return due.first }
        return nil
    }

    /// Wraps a payload in this agent's header, with the next sequence number.
    mutating func stamp(_ payload: Payload) -> Datagram {
        sequence &+= 1
        if sequence == 0 { sequence = 1 }
        return Datagram(session: session, sender: member, sequence: sequence, payload: payload)
    }
}

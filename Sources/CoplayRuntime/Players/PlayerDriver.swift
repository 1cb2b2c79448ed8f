import CoplayCore
import CoplaySimulatedPlayer

/// A local player as the shell drives it: the core's `PlayerCommand`s go in, `PlayerReport`s
/// come out, at once, when its timer fires (`nextEvent`/`advance`), or when it writes a line on
/// its connection (`receive`). The simulated player, mpv and a delegating socket all sit behind
/// this one boundary.
protocol PlayerDriver: DrivenPlayer, Sendable {
    /// "simulated", "mpv", "socket": shown by `status`.
    var kind: String { get }
    /// When it next has something to do or report, on the monotonic clock.
    func nextEvent(now: Timestamp) -> MonotonicInstant?
    mutating func advance(now: Timestamp) -> [PlayerReport]
    /// One line from the player's connection, stamped when it arrived.
    mutating func receive(line: [UInt8], at: Timestamp) -> [PlayerReport]
    /// A player connected (a delegating player; mpv is connected from the start).
    mutating func connected(now: Timestamp) -> [PlayerReport]
    /// The player's connection ended: what to report, and whether the agent should leave and
    /// exit (it should when the player it drives is gone for good).
    mutating func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool)
    /// The agent is exiting: let the player go (and stop one the agent started).
    mutating func close()
}

extension PlayerDriver {
    func connected(now: Timestamp) -> [PlayerReport] { [] }
}

extension PlayerReport.UserAction {
    /// The action, if its values are within what a command may carry (a player's report is
    /// checked like a datagram).
    var checked: Self? {
        switch self {
        case .pause, .next, .previous: return self
        case .play(let rate):
            return rate.isFinite && rate >= WireFormat.rateMin && rate <= WireFormat.rateMax ? self : nil
        case .seek(let position):
            return position.isFinite && position >= 0 && position <= WireFormat.positionMax ? self : nil
        }
    }
}

extension SimulatedPlayer: PlayerDriver {
    var kind: String { "simulated" }
    func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] { [] }
    func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) { ([], false) }
    func close() {}
}

import CoplayCore
import CoplayPlayers

/// A local player as the shell drives it: the core's `PlayerCommand`s go in, `PlayerReport`s
/// come out, at once, when its timer fires (`nextEvent`/`advance`), or when it writes a line on
/// its connection (`receive`). The simulated player, mpv and a delegating socket all sit behind
/// this one boundary.
protocol PlayerDriver: Sendable {
    /// "simulated", "mpv", "socket": shown by `status`.
    var kind: String { get }
    mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport]
    /// When it next has something to do or report, on the monotonic clock.
    func nextEvent(now: Timestamp) -> MonotonicInstant?
    mutating func advance(now: Timestamp) -> [PlayerReport]
    /// One line from the player's connection, stamped when it arrived.
    mutating func receive(line: [UInt8], at: Timestamp) -> [PlayerReport]
    /// The agent is exiting: let the player go (and stop one the agent started).
    mutating func close()
}

extension SimulatedPlayer: PlayerDriver {
    var kind: String { "simulated" }
    func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] { [] }
    func close() {}
}

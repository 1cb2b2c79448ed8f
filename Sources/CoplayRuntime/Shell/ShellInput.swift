import CoplayCore

/// Everything that can wake the shell, delivered through one stream so the instance sees one
/// input at a time.
enum ShellInput: Sendable {
    /// A datagram from either socket, stamped when the receive thread got it; `viaGroup` if it
    /// came to the multicast socket.
    case datagram([UInt8], from: Endpoint, receivedAt: Timestamp, viaGroup: Bool)
    /// One line from standard input.
    case line(String)
    /// One line from a client of the control socket.
    case controlLine(client: Int, String)
    /// Standard input ended.
    case endOfInput
    /// SIGINT or SIGTERM.
    case signal(Int32)
    /// The wake-up timer fired.
    case tick
    /// The player's timer fired.
    case playerTick
    /// A line from an external player's connection, stamped when it arrived.
    case playerLine([UInt8], receivedAt: Timestamp)
    /// A delegating player connected.
    case playerConnected
    /// The external player closed its connection (mpv quit, a delegating player went away).
    case playerClosed
}

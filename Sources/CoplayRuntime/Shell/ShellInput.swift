import CoplayCore

/// The inputs that come from threads of their own, delivered through one stream to the
/// shell's `run()`. (Datagrams and timers are the event loop's own: it hands them to the shell
/// directly.)
enum ShellInput: Sendable {
    /// One line from standard input.
    case line(String)
    /// One line from a client of the control socket.
    case controlLine(client: Int, String)
    /// Standard input ended.
    case endOfInput
    /// SIGINT or SIGTERM (leave and exit; a second one exits at once), or SIGHUP (reread the
    /// key file).
    case signal(Int32)
    /// A datagram or a timer, handled on the event loop outside `run()`'s loop, ended the
    /// agent.
    case finished
    /// A line from an external player's connection, stamped when it arrived.
    case playerLine([UInt8], receivedAt: Timestamp)
    /// A delegating player connected.
    case playerConnected
    /// The external player closed its connection (mpv quit, a delegating player went away).
    case playerClosed
}

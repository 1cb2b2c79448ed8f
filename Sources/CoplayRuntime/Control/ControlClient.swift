import CoplayCore
import Glibc

/// What `coplay ctl PATH …` asks of a running agent.
public enum ControlRequest: Sendable, Equatable {
    /// One command line, as typed on the agent's standard input.
    case command(String)
    /// Every event from now on, until the agent exits.
    case follow
    /// A table of the group redrawn once a second, `times` times (nil: until interrupted).
    case watch(times: Int?)
}

/// `coplay ctl`: a client of an agent's control socket (`--control PATH`).
public enum ControlClient {
    /// Longest reply line read: a `peers` reply of 256 peers is about 100 KiB.
    static let lineBytesMax = 1 << 20

    public static func run(path: String, request: ControlRequest) -> Int32 {
        let socket: LineSocket
        do {
            socket = try LineSocket.connect(path: path, patience: .zero)
        } catch {
            StandardStreams.writeError(
                "coplay ctl: no agent answers at \(path): \(error) (is it running with --control \(path)?)")
            return 1
        }
        defer { socket.close() }
        switch request {
        case .command(let line):
            guard let reply = exchange(line, over: socket) else {
                StandardStreams.writeError("coplay ctl: the agent closed the connection before replying")
                return 1
            }
            for line in reply.lines { StandardStreams.writeOutput(line) }
            return reply.refused ? 1 : 0
        case .follow:
            guard exchange("follow", over: socket) != nil else { return 1 }
            _ = socket.readLines(lineBytesMax: lineBytesMax) { line in
                StandardStreams.writeOutput(line)
                return true
            }
            return 0
        case .watch(let times):
            let redraw = isatty(STDOUT_FILENO) == 1
            var drawn = 0
            while times.map({ drawn < $0 }) ?? true {
                if drawn > 0 { usleep(1_000_000) }
                guard let status = exchange("status", over: socket)?.event("status"),
                    let peers = exchange("peers", over: socket)?.event("peers")
                else {
                    StandardStreams.writeError("coplay ctl: the agent went away")
                    return 1
                }
                let table = WatchTable.render(
                    status: status, peers: peers["peers"], atUnixNanos: AgentClock.trueUnixNanosNow())
                StandardStreams.writeOutput((redraw ? "\u{1B}[H\u{1B}[2J" : (drawn > 0 ? "\n" : "")) + table)
                drawn += 1
            }
            return 0
        }
    }

    /// A command's reply: its lines (the `done` line left out) and whether it was refused.
    struct Reply {
        var lines: [String] = []
        var events: [JSONValue] = []
        var refused: Bool { events.contains { $0["event"]?.string == "error" } }
        func event(_ name: String) -> JSONValue? { events.last { $0["event"]?.string == name } }
    }

    /// Sends `line` and reads its reply up to the `done` line; nil if the connection ended first.
    static func exchange(_ line: String, over socket: LineSocket) -> Reply? {
        // A send that fails is not the end: an agent that refused the connection has already
        // written why, and that is read below.
        socket.send(line)
        var reply = Reply()
        var done = false
        _ = socket.readLines(lineBytesMax: lineBytesMax) { text in
            let value = try? JSONParser.parse(text)
            if value?["event"]?.string == "done" {
                done = true
                return false
            }
            reply.lines.append(text)
            if let value { reply.events.append(value) }
            return true
        }
        return done ? reply : nil
    }
}

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
        let silent = "coplay ctl: the agent closed the connection, or did not answer within \(replyPatienceSeconds) s"
        switch request {
        case .command(let line):
            socket.setReceiveTimeout(seconds: replyPatienceSeconds)
            var refused = false
            let done = exchange(line, over: socket) { text, value in
                StandardStreams.writeOutput(text)
                if value?["event"]?.string == "error" { refused = true }
            }
            guard done else {
                StandardStreams.writeError(silent)
                return 1
            }
            return refused ? 1 : 0
        case .follow:
            guard exchange("follow", over: socket, { text, _ in StandardStreams.writeOutput(text) }) else { return 1 }
            _ = socket.readLines(lineBytesMax: lineBytesMax) { line in
                StandardStreams.writeOutput(line)
                return true
            }
            return 0
        case .watch(let times):
            socket.setReceiveTimeout(seconds: replyPatienceSeconds)
            let redraw = isatty(STDOUT_FILENO) == 1
            var drawn = 0
            while times.map({ drawn < $0 }) ?? true {
                if drawn > 0 { usleep(1_000_000) }
                guard let status = lastEvent("status", replying: "status", over: socket),
                    let peers = lastEvent("peers", replying: "peers", over: socket)
                else {
                    StandardStreams.writeError(silent)
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

    /// How long `ctl` waits for a reply line before it gives up on the agent (a wedged agent
    /// must not hang a script; `--follow` waits for events without limit).
    static let replyPatienceSeconds = 10

    /// The last event named `name` in the reply to `line`; nil if there is none or no reply.
    static func lastEvent(_ name: String, replying line: String, over socket: LineSocket) -> JSONValue? {
        var found: JSONValue?
        let done = exchange(line, over: socket) { _, value in
            if value?["event"]?.string == name { found = value }
        }
        return done ? found : nil
    }

    /// Sends `line` and hands each line of its reply, with its JSON, to `each` as it arrives, up
    /// to the `done` line (which is not handed on); false if the connection ended, or went quiet
    /// past the socket's receive timeout, first. Nothing of the reply is kept here.
    static func exchange(_ line: String, over socket: LineSocket, _ each: (String, JSONValue?) -> Void) -> Bool {
        // A send that fails is not the end: an agent that refused the connection has already
        // written why, and that is read below.
        socket.send(line)
        var done = false
        _ = socket.readLines(lineBytesMax: lineBytesMax) { text in
            let value = try? JSONParser.parse(text)
            if value?["event"]?.string == "done" {
                done = true
                return false
            }
            each(text, value)
            return true
        }
        return done
    }
}

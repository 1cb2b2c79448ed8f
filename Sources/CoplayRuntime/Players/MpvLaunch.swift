import CoplayCore
import Glibc

extension MpvPlayer {
    /// Starts mpv (or attaches to the user's) and connects to its IPC. The caller starts reading
    /// the socket's lines and hands them to `receive(line:at:)`.
    ///
    /// An mpv the agent starts is reached through one end of a socket pair, whose other end mpv
    /// gets as `--input-ipc-client`: mpv quits when that connection closes, so it ends with the
    /// agent however the agent ends (a crash, `kill -9`), and there is no socket file to leave
    /// behind. With `--mpv-socket PATH` it also listens on PATH, for other tools.
    static func connect(_ options: MpvOptions, settings: Settings) throws(SocketError) -> (MpvPlayer, LineSocket) {
        if options.attach {
            guard let path = options.socketPath else { throw SocketError("--mpv-attach needs --mpv-socket PATH") }
            let socket = try LineSocket.connect(path: path, patience: .zero)
            return (
                MpvPlayer(socket: socket, process: nil, settings: settings, options: options.options),
                socket
            )
        }
        let pair = try ChildProcess.connectionPair()
        let arguments =
            [
                "mpv", "--idle=yes", "--keep-open=yes", "--pause", "--no-terminal",
                "--input-ipc-client=fd://\(ChildProcess.connectionDescriptor)",
            ]
            + (options.socketPath.map { ["--input-ipc-server=\($0)"] } ?? [])
            + options.options.map { "--\($0)" }
        let process: ChildProcess
        do {
            defer { Glibc.close(pair.child) }
            process = try ChildProcess.spawn(arguments, connection: pair.child, output: try output())
        } catch {
            Glibc.close(pair.agent)
            throw error
        }
        let socket = LineSocket(descriptor: pair.agent)
        do {
            try awaitAnswer(on: socket, from: process, patience: .seconds(10))
        } catch {
            process.waitForExit(patience: .zero)
            socket.close()
            if let path = options.socketPath { unlink(path) }
            throw error
        }
        return (
            MpvPlayer(
                socket: socket, process: process, settings: settings, options: options.options,
                ownedSocketPath: options.socketPath),
            socket
        )
    }

    /// Where mpv's own output goes: read by the agent, its first line said once (`ChildOutput`).
    static func output() throws(SocketError) -> ChildOutput {
        try ChildOutput(name: "mpv", hint: "--mpv-option log-file=PATH keeps mpv's log")
    }

    /// Asks the mpv just started a question and waits until it answers, so that an mpv that
    /// exits at start (an option it refused) is an error that says so. The answer is left
    /// unread: its `request_id` 0 is none of the player's, which start at 1.
    private static func awaitAnswer(
        on socket: LineSocket, from process: ChildProcess, patience: Duration
    ) throws(SocketError) {
        socket.send(#"{"command":["get_property","mpv-version"],"request_id":0}"#)
        try socket.awaitFirstWord(
            from: process, patience: patience, exited: exitedAtStart,
            silent: SocketError("mpv did not answer within \(patience)", code: 0))
    }

    private static func exitedAtStart(_ status: Int32?) -> SocketError {
        SocketError(
            "mpv exited\(status.map { " with status \($0)" } ?? "") at start: check the --mpv-option values "
                + "(mpv --NAME=VALUE alone prints mpv's own complaint)",
            code: 0)
    }

    /// What mpv's failure to load `url` was, in words and as a kind: mpv says "loading failed"
    /// for a missing file and an unreachable server alike, so a path is looked at here.
    static func loadFailure(url: String?, fileError: String, player: String = "mpv") -> PlayerReport {
        let shown = url ?? "the item"
        let path = url.map { $0.hasPrefix("file://") ? String($0.dropFirst(7)) : $0 }
        if let path, path.hasPrefix("/") || !path.contains("://") {
            var status = stat()
            if stat(path, &status) != 0 {
                return .loadFailed(
                    "\(player) could not play \(shown): no such file (\(String(cString: strerror(errno))))",
                    problem: .notFound)
            }
        }
        let problem: PlaybackProblem = fileError.contains("unrecognized file format") ? .format : .other
        return .loadFailed("\(player) could not play \(shown): \(fileError)", problem: problem)
    }
}

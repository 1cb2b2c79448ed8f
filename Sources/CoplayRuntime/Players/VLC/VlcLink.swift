import CoplayCore
import Glibc
import Synchronization

/// The VLC this agent started and the connection to coplay's script in it (one end of a socket
/// pair on VLC's standard input and output). A VLC that crashes or is killed (ended by a signal
/// other than SIGTERM, SIGINT or SIGHUP, which are a person's ways to end it) is started again,
/// at most `Settings.Players.vlcRestartsMax` times, and the group's item played there again: a
/// stall of this participant, not the end of the agent. A VLC the person quit ends the agent, as
/// mpv's does.
final class VlcLink: Sendable {
    private struct Running: Sendable {
        var socket: LineSocket
        var process: ChildProcess?
        /// The folder its script was written to: removed once it ends.
        var folder: String?
    }

    private let options: VlcOptions?
    private let current: Mutex<Running?>
    private let stopped = Atomic<Bool>(false)
    /// The last VLC ended and another is being started.
    private let restarting = Atomic<Bool>(false)
    /// How the last VLC ended (its exit status as a shell says it), once it has; -1 before.
    private let lastStatus = Atomic<Int32>(-1)
    private let restarts = Atomic<Int>(0)

    /// Starts VLC (`VlcPlayer.launch`): an error that says why if it does not start.
    init(options: VlcOptions) throws(SocketError) {
        self.options = options
        let (socket, process, folder) = try VlcPlayer.launch(options)
        current = Mutex(Running(socket: socket, process: process, folder: folder))
    }

    /// A link over `connected` with no process of the agent's (the tests' scripted VLC).
    init(connected: LineSocket) {
        options = nil
        current = Mutex(Running(socket: connected, process: nil, folder: nil))
    }

    func send(_ line: String) {
        guard let socket = current.withLock({ $0?.socket }) else { return }
        socket.send(line)
    }

    /// Whether the VLC that ended is being started again (read when its connection closed).
    var willRestart: Bool { restarting.load(ordering: .acquiring) }

    /// How the VLC that ended did: "exited with status N" or "ended by signal N".
    var ending: String {
        let status = lastStatus.load(ordering: .acquiring)
        guard status >= 0 else { return "ended" }
        return status > 128 ? "ended by signal \(status - 128)" : "exited with status \(status)"
    }

    /// Reads each VLC's lines on a thread of its own (`line`); when one ends, `closed` (after which
    /// `willRestart` says whether another comes), and once another has said hello, `connected`.
    func start(
        lineBytesMax: Int, clock: AgentClock, line: @escaping @Sendable ([UInt8], Timestamp) -> Void,
        connected: @escaping @Sendable () -> Void, closed: @escaping @Sendable () -> Void
    ) {
        BackgroundThread.start { [self] in
            while let running = current.withLock({ $0 }), !stopped.load(ordering: .relaxed) {
                let ended = Mutex<Bool>(false)
                running.socket.startReading(
                    lineBytesMax: lineBytesMax, clock: clock, line: line, ended: { ended.withLock { $0 = true } })
                while !ended.withLock({ $0 }) { usleep(20_000) }
                guard !stopped.load(ordering: .relaxed) else { return }
                // Why it ended: its status, which comes a moment after its end of the socket.
                var status: Int32?
                for _ in 0..<50 {
                    status = running.process?.exitStatus()
                    if status != nil { break }
                    usleep(20_000)
                }
                lastStatus.store(status ?? -1, ordering: .releasing)
                let personal: Set<Int32> = [128 + SIGTERM, 128 + SIGINT, 128 + SIGHUP]
                let crashed = status.map { $0 > 128 && !personal.contains($0) } ?? false
                let again =
                    crashed && options != nil && restarts.load(ordering: .relaxed) < Settings.Players.vlcRestartsMax
                restarting.store(again, ordering: .releasing)
                current.withLock { $0 = nil }
                running.socket.close()
                if let folder = running.folder { VlcPlayer.removeScript(in: folder) }
                closed()
                guard again, let options else { return }
                restarts.add(1, ordering: .relaxed)
                // Started again after a pause; a VLC that will not start is tried again, then given up.
                var started: (LineSocket, ChildProcess, String)?
                for _ in 0..<Settings.Players.vlcStartAttempts where started == nil && !stopped.load(ordering: .relaxed)
                {
                    usleep(UInt32(Settings.Players.vlcRestartDelay.nanoseconds / 1000))
                    started = try? VlcPlayer.launch(options)
                }
                guard let (socket, process, folder) = started, !stopped.load(ordering: .relaxed) else {
                    if let (socket, process, folder) = started {
                        // Started while the agent was closing: it ends with the agent all the same.
                        socket.send("quit")
                        process.waitForExit(patience: .seconds(1))
                        socket.close()
                        VlcPlayer.removeScript(in: folder)
                        return
                    }
                    restarting.store(false, ordering: .releasing)
                    closed()
                    return
                }
                current.withLock { $0 = Running(socket: socket, process: process, folder: folder) }
                connected()
            }
        }
    }

    /// Quits VLC (the script's `quit`, then SIGTERM after `patience`) and removes its script.
    func close(patience: Duration) {
        stopped.store(true, ordering: .relaxed)
        guard let running = current.withLock({ $0 }) else { return }
        if let process = running.process {
            running.socket.send("quit")
            process.waitForExit(patience: patience)
        }
        running.socket.close()
        if let folder = running.folder { VlcPlayer.removeScript(in: folder) }
    }
}

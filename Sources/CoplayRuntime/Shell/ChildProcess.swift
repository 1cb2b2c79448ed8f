import Glibc
import Synchronization

/// A program the agent starts and owns (mpv): started from `PATH` with `posix_spawnp`, its
/// standard input closed, its output shared with the agent's standard error or read by the
/// agent (`ChildOutput`).
final class ChildProcess: Sendable {
    let pid: pid_t
    let name: String
    /// Its exit status once reaped, else -1: a reaped pid may be another process's by now, so
    /// nothing is sent to it after.
    private let reapedStatus = Atomic<Int32>(-1)

    /// The agent's end of a `spawnTied` child's socket pair, else -1; closed with this object.
    private let tie: Int32

    private init(pid: pid_t, name: String, tie: Int32 = -1) {
        self.pid = pid
        self.name = name
        self.tie = tie
    }

    deinit { if tie >= 0 { close(tie) } }

    /// The descriptor a `connection` given to `spawn` has in the child.
    static let connectionDescriptor: Int32 = 3

    /// Starts `arguments[0]` tied to the agent: the child gets one end of a socket pair as
    /// `connectionDescriptor`, and the agent holds the other until it lets go of the child, or
    /// ends, however it ends. A child that quits when that end closes (mpv with
    /// `--input-ipc-client`) cannot outlive the agent. What it writes there is never read: the
    /// few events of an interstitial's mpv fit in the socket's buffer many times over.
    static func spawnTied(_ arguments: [String], output: ChildOutput? = nil) throws(SocketError) -> ChildProcess {
        let pair = try connectionPair()
        defer { close(pair.child) }
        do {
            return try spawn(arguments, connection: pair.child, tie: pair.agent, output: output)
        } catch {
            close(pair.agent)
            throw error
        }
    }

    /// A connected pair of Unix stream sockets, both close-on-exec: the agent's end, and the one
    /// to give a child as `connection` (and close once it is started).
    static func connectionPair() throws(SocketError) -> (agent: Int32, child: Int32) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw SocketError("socketpair(AF_UNIX)")
        }
        return (pair[0], pair[1])
    }

    /// Starts `arguments[0]` from `PATH`. `connection`: a descriptor of the agent's (close-on-exec,
    /// as all of them are) that the child gets as `connectionDescriptor`, and only the child.
    /// `output`: where its standard output and error go instead of the agent's standard error.
    /// `standardIO`: the connection is the child's standard input and output instead (VLC's Lua
    /// interface reaches no other descriptor), and only its standard error goes to `output`.
    /// `environment`: variables set for the child on top of the agent's own.
    static func spawn(
        _ arguments: [String], connection: Int32? = nil, standardIO: Bool = false, environment: [String: String] = [:],
        output: ChildOutput? = nil
    ) throws(SocketError) -> ChildProcess {
        try spawn(
            arguments, connection: connection, standardIO: standardIO, environment: environment, tie: -1, output: output
        )
    }

    private static func spawn(
        _ arguments: [String], connection: Int32?, standardIO: Bool = false, environment: [String: String] = [:],
        tie: Int32, output: ChildOutput?
    ) throws(SocketError) -> ChildProcess {
        precondition(!arguments.isEmpty)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if standardIO, let connection {
            posix_spawn_file_actions_adddup2(&actions, connection, STDIN_FILENO)
            posix_spawn_file_actions_adddup2(&actions, connection, STDOUT_FILENO)
            posix_spawn_file_actions_adddup2(&actions, output?.childEnd ?? STDERR_FILENO, STDERR_FILENO)
        } else {
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
            if let output {
                posix_spawn_file_actions_adddup2(&actions, output.childEnd, STDOUT_FILENO)
                posix_spawn_file_actions_adddup2(&actions, output.childEnd, STDERR_FILENO)
            } else {
                posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
            }
        }
        var moved: Int32 = -1
        defer { if moved >= 0 { close(moved) } }
        if !standardIO, var connection {
            // dup2 onto itself would leave the descriptor close-on-exec: move it out of the way.
            if connection == Self.connectionDescriptor {
                moved = fcntl(connection, F_DUPFD_CLOEXEC, Self.connectionDescriptor + 1)
                guard moved >= 0 else { throw SocketError("fcntl(F_DUPFD_CLOEXEC)") }
                connection = moved
            }
            posix_spawn_file_actions_adddup2(&actions, connection, Self.connectionDescriptor)
        }
        // The agent ignores SIGPIPE and catches SIGINT, SIGTERM and SIGHUP (`Signals`). An ignored
        // signal would stay ignored across exec: the child gets all four at their defaults, with
        // nothing blocked, so that SIGTERM ends it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for pointer in argv { free(pointer) } }
        var environmentPointers: [UnsafeMutablePointer<CChar>?] = []
        if !environment.isEmpty {
            var index = 0
            while let entry = environ[index] {
                let text = String(cString: entry)
                let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
                if environment[name] == nil { environmentPointers.append(strdup(text)) }
                index += 1
            }
            for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
                environmentPointers.append(strdup("\(name)=\(value)"))
            }
            environmentPointers.append(nil)
        }
        defer { for pointer in environmentPointers { free(pointer) } }
        var pid = pid_t()
        let status =
            environment.isEmpty
            ? posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
            : posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, &environmentPointers)
        guard status == 0 else {
            throw SocketError("start \(arguments[0]) (is it installed and on PATH?)", code: status)
        }
        output?.started()
        return ChildProcess(pid: pid, name: arguments[0], tie: tie)
    }

    /// Its exit status if it has exited (reaping it), else nil.
    func exitStatus() -> Int32? {
        let reaped = reapedStatus.load(ordering: .acquiring)
        if reaped >= 0 { return reaped }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let exit = Self.exitCode(status)
        reapedStatus.store(exit, ordering: .releasing)
        return exit
    }

    /// Asks it to end (SIGTERM) without waiting: `exitStatus()` reaps it later.
    func terminate() { if reapedStatus.load(ordering: .acquiring) < 0 { kill(pid, SIGTERM) } }

    /// Waits for it to exit by itself for up to `patience`, then terminates it.
    func waitForExit(patience: Duration) {
        var waited: Duration = .zero
        while waited < patience {
            if exitStatus() != nil { return }
            usleep(10_000)
            waited += .milliseconds(10)
        }
        guard reapedStatus.load(ordering: .acquiring) < 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        if waitpid(pid, &status, 0) == pid { reapedStatus.store(Self.exitCode(status), ordering: .releasing) }
    }

    /// A wait status as a shell says it: the exit code, or 128 plus the signal that ended it.
    private static func exitCode(_ status: Int32) -> Int32 {
        (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}

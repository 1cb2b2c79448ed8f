import Glibc

/// A program the agent starts and owns (mpv): started from `PATH` with `posix_spawnp`, its
/// standard input closed, its output shared with the agent's standard error.
final class ChildProcess: Sendable {
    let pid: pid_t
    let name: String

    private init(pid: pid_t, name: String) {
        self.pid = pid
        self.name = name
    }

    /// Starts `arguments[0]` from `PATH`.
    static func spawn(_ arguments: [String]) throws(SocketError) -> ChildProcess {
        precondition(!arguments.isEmpty)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let status = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        guard status == 0 else {
            throw SocketError("start \(arguments[0]) (is it installed and on PATH?)", code: status)
        }
        return ChildProcess(pid: pid, name: arguments[0])
    }

    /// Its exit status if it has exited (reaping it), else nil.
    func exitStatus() -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// Waits for it to exit by itself for up to `patience`, then terminates it.
    func waitForExit(patience: Duration) {
        var waited: Duration = .zero
        while waited < patience {
            if exitStatus() != nil { return }
            usleep(10_000)
            waited += .milliseconds(10)
        }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

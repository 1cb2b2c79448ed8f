import CoplayCore
import Glibc

/// A server this process starts and is tied to however it ends (nats-server for a party, a hub
/// or a joining agent; Caddy for a hub). Neither program has an option to end with its parent,
/// so a small `sh` watchdog starts it and waits on one end of a socket pair whose other end only
/// this process holds: when it closes it, or is killed outright, the watchdog's read ends and it
/// stops the server. The watchdog and the server ignore SIGINT, so a Ctrl-C in the terminal
/// reaches coplay alone, which leaves its group through the server before the server stops.
final class TiedServer {
    private let watchdog: ChildProcess
    /// This process's end of the watchdog's socket pair; closing it stops the server.
    private var tie: Int32

    /// How long a stop waits for the watchdog to end the server before it is killed.
    static let stopPatience: Duration = .seconds(2)
    /// How long a server has to listen before coplay gives up: nats-server starts in tens of
    /// milliseconds and Caddy in a few hundred (a new certificate of its own CA); a loaded
    /// machine may take seconds.
    static let startPatience: Duration = .seconds(10)

    static let watchdogScript = """
        trap '' INT HUP
        log=$1
        shift
        "$@" >"$log" 2>&1 &
        n=$!
        trap 'kill $n 2>/dev/null; wait $n; exit 0' TERM
        read -r _ <&3
        kill $n 2>/dev/null
        wait $n
        """

    struct StartError: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts `command`, its output to `log`, and waits until `listening()` says it serves
    /// (failing at once when its log says `fatal`, or when it does not within `startPatience`).
    static func start(
        _ command: [String], name: String, log: String, listening: () -> Bool, fatal: (String) -> String?
    ) throws(StartError) -> TiedServer {
        let pair: (agent: Int32, child: Int32)
        let watchdog: ChildProcess
        do {
            pair = try ChildProcess.connectionPair()
            defer { close(pair.child) }
            watchdog = try ChildProcess.spawn(
                ["/bin/sh", "-c", watchdogScript, name, log] + command, connection: pair.child)
        } catch {
            throw StartError(description: "cannot start \(command[0]): \(error)")
        }
        let server = TiedServer(watchdog: watchdog, tie: pair.agent)
        var waited: Duration = .zero
        while !listening() {
            let text = String(decoding: WebServer.readWholeFile(log, bytesMax: 1 << 20) ?? [], as: UTF8.self)
            let failure = fatal(text)
            if failure != nil || waited >= startPatience || watchdog.exitStatus() != nil {
                server.stop()
                let program = command[0].split(separator: "/").last.map(String.init) ?? command[0]
                throw StartError(
                    description: "\(program) did not start: \(failure ?? "it did not listen within \(startPatience)")")
            }
            usleep(10_000)
            waited += .milliseconds(10)
        }
        return server
    }

    private init(watchdog: ChildProcess, tie: Int32) {
        self.watchdog = watchdog
        self.tie = tie
    }

    deinit { stop() }

    /// Stops the server: the watchdog sees its end of the pair close and ends it.
    func stop() {
        guard tie >= 0 else { return }
        close(tie)
        tie = -1
        watchdog.waitForExit(patience: Self.stopPatience)
    }

    // MARK: What starting a server needs

    /// Where `program` is, if installed: on `PATH`, or in Debian's `/usr/sbin` (not on a user's
    /// `PATH`).
    static func programPath(_ program: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/usr/local/bin"]
        return folders.map { $0 + "/" + program }.first { access($0, X_OK) == 0 }
    }

    /// A TCP port free on `host` now (the kernel's pick; the server binds it a moment later).
    static func freePort(_ host: String) throws(StartError) -> UInt16 {
        switch WebServer.listen(host: host, port: 0) {
        case .failure(let error): throw StartError(description: error.message)
        case .success(let listening):
            close(listening.descriptor)
            return listening.port
        }
    }

    /// Whether something accepts TCP connections on `host`:`port` (an address of this machine:
    /// the answer is immediate).
    static func canConnect(_ host: String, _ port: UInt16) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return false }
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A new folder only this user can enter, in `$XDG_RUNTIME_DIR` (else `/tmp`).
    static func makePrivateFolder(_ name: String) throws(StartError) -> String {
        var base = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? ""
        if base.isEmpty || access(base, W_OK | X_OK) != 0 { base = "/tmp" }
        var template = Array((base + "/\(name)-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw StartError(description: "cannot make a folder in \(base): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    /// Writes a new file readable by this user alone.
    static func writePrivateFile(_ path: String, _ text: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == bytes.count
    }

    /// The first line of a nats-server log that says it cannot go on (a leaf node's hub not
    /// reached yet is not one: the server retries it, and serves its own clients meanwhile).
    static func natsFatal(_ log: String) -> String? {
        log.split(separator: "\n").first {
            $0.hasPrefix("nats-server:")  // its configuration refused, before it logs anything
                || (($0.contains("[FTL]") || $0.contains("[ERR]")) && !$0.contains("eafnode"))
        }.map { String($0.suffix(300)) }
    }
}

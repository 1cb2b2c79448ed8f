import CoplayCore
import Glibc

/// The nats-server a party starts for itself: the relay that carries the group's sealed frames
/// to the room's browsers (its WebSocket listener) and to the host's agent (its client port).
///
/// It is tied to the party's process however that ends. nats-server has no option to end with
/// its parent, so a small `sh` watchdog starts it and waits on one end of a socket pair whose
/// other end only the party holds: when the party closes it, or is killed outright, the
/// watchdog's read ends and it stops the server. The watchdog and the server ignore SIGINT, so a
/// Ctrl-C in the terminal reaches the agent alone, which leaves the group through the relay
/// before the relay stops.
///
/// Its configuration (with the token) and its log are written in a fresh 0700 folder of the
/// user's runtime directory, and removed once the server has read the one and opened the other:
/// nothing of the party is left on disk, even after a `kill -9`.
final class PartyRelay {
    let clientPort: UInt16
    let webSocketPort: UInt16
    let token: String
    private let watchdog: ChildProcess
    /// The party's end of the watchdog's socket pair; closing it stops the server.
    private var tie: Int32

    /// How long the server has to listen before the party gives up: nats-server starts in tens of
    /// milliseconds; a loaded machine may take a second.
    static let startPatience: Duration = .seconds(5)
    /// How long a stop waits for the watchdog to end the server before it is killed.
    static let stopPatience: Duration = .seconds(2)
    /// A party's frames: a datagram is at most 1,200 bytes, 1,231 sealed; NATS adds its subject.
    static let maxPayloadBytes = 4096

    static let watchdogScript = """
        trap '' INT HUP
        "$1" -c "$2" >"$3" 2>&1 &
        n=$!
        trap 'kill $n 2>/dev/null; wait $n; exit 0' TERM
        read -r _ <&3
        kill $n 2>/dev/null
        wait $n
        """

    struct StartError: Error, CustomStringConvertible {
        var description: String
    }

    /// Where nats-server is, if installed: on `PATH`, or in Debian's `/usr/sbin` (not on a
    /// user's `PATH`).
    static func serverPath() -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/usr/local/bin"]
        return folders.map { $0 + "/nats-server" }.first { access($0, X_OK) == 0 }
    }

    /// Starts nats-server listening on `host` (client port and WebSocket, each on a free port),
    /// with a random token, and waits until it accepts connections.
    static func start(host: String) throws(StartError) -> PartyRelay {
        guard let server = serverPath() else {
            throw StartError(
                description:
                    "a party needs nats-server, the relay the room's browsers reach: apt install nats-server (or give --relay ws://TOKEN@HOST:PORT of a server that runs)"
            )
        }
        let clientPort = try freePort(host)
        let webSocketPort = try freePort(host)
        var random = SystemRandomNumberGenerator()
        let token = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &random) })
        let folder = try makePrivateFolder()
        let configPath = folder + "/nats.conf"
        let logPath = folder + "/nats.log"
        defer {
            unlink(configPath)
            unlink(logPath)
            rmdir(folder)
        }
        let configuration = """
            # written by coplay party; removed once read
            server_name: coplay-party
            listen: "\(host):\(clientPort)"
            authorization { token: "\(token)" }
            max_payload: \(maxPayloadBytes)
            websocket { host: "\(host)", port: \(webSocketPort), no_tls: true, same_origin: false }
            """
        guard writePrivateFile(configPath, configuration) else {
            throw StartError(description: "cannot write \(configPath): \(String(cString: strerror(errno)))")
        }
        let pair: (agent: Int32, child: Int32)
        let watchdog: ChildProcess
        do {
            pair = try ChildProcess.connectionPair()
            defer { close(pair.child) }
            watchdog = try ChildProcess.spawn(
                ["/bin/sh", "-c", watchdogScript, "coplay-party-relay", server, configPath, logPath],
                connection: pair.child)
        } catch {
            throw StartError(description: "cannot start nats-server: \(error)")
        }
        let relay = PartyRelay(
            clientPort: clientPort, webSocketPort: webSocketPort, token: token, watchdog: watchdog, tie: pair.agent)
        var waited: Duration = .zero
        while !(canConnect(host, clientPort) && canConnect(host, webSocketPort)) {
            let log = String(decoding: WebServer.readWholeFile(logPath, bytesMax: 1 << 20) ?? [], as: UTF8.self)
            let fatal = log.split(separator: "\n").first { $0.contains("[FTL]") || $0.contains("[ERR]") }
            if fatal != nil || waited >= startPatience || watchdog.exitStatus() != nil {
                relay.stop()
                let reason = fatal.map { String($0.suffix(300)) } ?? "it did not listen within \(startPatience)"
                throw StartError(description: "nats-server did not start: \(reason)")
            }
            usleep(10_000)
            waited += .milliseconds(10)
        }
        return relay
    }

    private init(clientPort: UInt16, webSocketPort: UInt16, token: String, watchdog: ChildProcess, tie: Int32) {
        self.clientPort = clientPort
        self.webSocketPort = webSocketPort
        self.token = token
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

    /// A TCP port free on `host` now (the kernel's pick; nats-server binds it a moment later).
    private static func freePort(_ host: String) throws(StartError) -> UInt16 {
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
    private static func makePrivateFolder() throws(StartError) -> String {
        var base = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? ""
        if base.isEmpty || access(base, W_OK | X_OK) != 0 { base = "/tmp" }
        var template = Array((base + "/coplay-party-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw StartError(description: "cannot make a folder in \(base): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    /// Writes a new file readable by this user alone.
    private static func writePrivateFile(_ path: String, _ text: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == bytes.count
    }
}

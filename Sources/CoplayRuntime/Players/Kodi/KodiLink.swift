import CoplayCore
import Glibc
import Synchronization

/// Where Kodi's JSON-RPC listens (`--player kodi[:HOST[:PORT]]`): this machine's own by default.
public struct KodiOptions: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port: UInt16 = 9090

    public init() {}

    /// Reads `kodi`, `kodi:HOST`, `kodi:HOST:PORT` or `kodi:[IPV6]:PORT`; nil if it is none.
    public static func parse(_ text: String) -> KodiOptions? {
        guard text == "kodi" || text.hasPrefix("kodi:") else { return nil }
        var options = KodiOptions()
        var rest = Substring(text.dropFirst(4))
        guard rest.first == ":" else { return options }
        rest = rest.dropFirst()
        let explicitPort: Bool
        if rest.first == "[" {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            options.host = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
            guard rest.isEmpty || rest.first == ":" else { return nil }
            explicitPort = !rest.isEmpty
            rest = rest.dropFirst()
        } else {
            // An IPv6 address goes in brackets: a second colon here is a mistake.
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            options.host = String(parts[0])
            explicitPort = parts.count == 2
            rest = explicitPort ? parts[1] : ""
        }
        if explicitPort {
            guard let port = UInt16(rest), port > 0 else { return nil }
            options.port = port
        }
        let hostBytes = options.host.utf8
        guard !hostBytes.isEmpty, hostBytes.count <= 253,
            hostBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") })
        else { return nil }
        return options
    }

    /// Whether the host is this machine (a name or address of loopback).
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.") || host == "ip6-localhost"
    }

    /// `HOST:PORT`, with an IPv6 address in brackets.
    public var endpoint: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
}

/// The TCP connection to Kodi's JSON-RPC, made again whenever it ends: Kodi is a program of the
/// person's own (a box under the television, restarted when it likes), so its going away is a
/// stall of this participant, not the end of the agent. Kodi writes JSON objects one after
/// another (`LineSocket.Framing.jsonObjects`); the agent writes one object a line.
final class KodiLink: Sendable {
    let options: KodiOptions
    private let current = Mutex<LineSocket?>(nil)
    private let stopped = Atomic<Bool>(false)

    /// A link to Kodi at `options`; with `connected`, one already made (the tests' own).
    init(options: KodiOptions, connected: LineSocket? = nil) {
        self.options = options
        current.withLock { $0 = connected }
    }

    /// Writes one JSON-RPC message; false while Kodi is not connected.
    @discardableResult
    func send(_ message: String) -> Bool {
        guard let connection = current.withLock({ $0 }) else { return false }
        return connection.send(message)
    }

    var isConnected: Bool { current.withLock { $0 != nil } }

    /// Connects on a thread of its own, again `retry` after each failure or end: `connected` once a
    /// connection is made, `frame` for each object Kodi writes, `closed` when that connection ends.
    func start(
        frameBytesMax: Int, retry: Duration, clock: AgentClock,
        frame: @escaping @Sendable ([UInt8], Timestamp) -> Void,
        connected: @escaping @Sendable () -> Void, closed: @escaping @Sendable () -> Void
    ) {
        BackgroundThread.start { [self] in
            while !stopped.load(ordering: .relaxed) {
                guard let made = Self.connect(options) else {
                    usleep(UInt32(retry.nanoseconds / 1000))
                    continue
                }
                current.withLock { $0 = made }
                guard !stopped.load(ordering: .relaxed) else { break }
                connected()
                let ended = Mutex<Bool>(false)
                made.startReading(
                    lineBytesMax: frameBytesMax, framing: .jsonObjects, clock: clock, line: frame,
                    ended: { ended.withLock { $0 = true } })
                while !ended.withLock({ $0 }) { usleep(20_000) }
                current.withLock { $0 = nil }
                made.close()
                guard !stopped.load(ordering: .relaxed) else { break }
                closed()
                usleep(UInt32(retry.nanoseconds / 1000))
            }
            current.withLock { $0?.close() }
        }
    }

    func close() {
        stopped.store(true, ordering: .relaxed)
        current.withLock { $0?.close() }
    }

    /// A TCP connection to Kodi, or nil (refused, unreachable, a name that does not resolve).
    static func connect(_ options: KodiOptions) -> LineSocket? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(options.host, String(options.port), &hints, &found) == 0, let first = found else {
            return nil
        }
        defer { freeaddrinfo(first) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            let descriptor = socket(
                address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if descriptor >= 0 {
                if Glibc.connect(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return LineSocket(descriptor: descriptor)
                }
                Glibc.close(descriptor)
            }
            entry = address.pointee.ai_next
        }
        return nil
    }
}

/// One NATS server a relay may connect to.
public struct RelayServer: Equatable, Sendable, CustomStringConvertible {
    /// Its address, for a shell that connects by address (a `--relay` host name is resolved when
    /// the agent starts). Nil for a shell that connects by name (a browser's WebSocket resolves
    /// the host itself).
    public var endpoint: Endpoint?
    /// As the user gave it or the cluster announced it (`host:port`, `ws://host:port`), for
    /// messages.
    public var name: String
    public var credentials: NatsCommand.Credentials
    /// Given by the user (`--relay`, an invitation); announced servers come and go with the
    /// cluster.
    public var isSeed: Bool
    /// Reached through nats-server's WebSocket listener (`ws://`, the browsers' way in): the
    /// `host:port` to name in the handshake. Nil: the NATS protocol straight over TCP.
    public var webSocketHost: String?
    /// `wss://`: the WebSocket under TLS, which a browser speaks itself (the native client does
    /// not: its frames are sealed already).
    public var isSecure: Bool

    public init(
        endpoint: Endpoint?, name: String, credentials: NatsCommand.Credentials, isSeed: Bool = true,
        webSocketHost: String? = nil, isSecure: Bool = false
    ) {
        self.endpoint = endpoint
        self.name = name
        self.credentials = credentials
        self.isSeed = isSeed
        self.webSocketHost = webSocketHost
        self.isSecure = isSecure
    }

    public var description: String { name }

    /// What a WebSocket opens: the URL without its credentials (they go in CONNECT).
    public var webSocketURL: String? {
        webSocketHost.map { (isSecure ? "wss://" : "ws://") + $0 + "/" }
    }

    /// What tells two servers apart: the address where there is one, else the name.
    var key: String {
        if let endpoint { return endpoint.description }
        return webSocketHost ?? name
    }

    /// A relay from an invitation: `ws://[TOKEN@]HOST[:PORT][/]` or `wss://…` (the token
    /// percent-encoded), for a shell whose WebSocket resolves the host. Nil for anything else.
    public static func webSocket(_ text: String) -> RelayServer? {
        let secure: Bool
        var rest: Substring
        if text.hasPrefix("ws://") {
            (secure, rest) = (false, text.dropFirst(5))
        } else if text.hasPrefix("wss://") {
            (secure, rest) = (true, text.dropFirst(6))
        } else {
            return nil
        }
        guard text.utf8.count <= 512 else { return nil }
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...].allSatisfy({ $0 == "/" }) else { return nil }
            rest = rest[..<slash]
        }
        var credentials = NatsCommand.Credentials()
        if let at = rest.lastIndex(of: "@") {
            guard let token = percentDecoded(rest[..<at]), !token.isEmpty else { return nil }
            credentials.token = token
            rest = rest[rest.index(after: at)...]
        }
        guard let (host, portText) = splitHostPort(String(rest)), !host.isEmpty,
            host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") })
        else { return nil }
        var port: UInt16 = secure ? 443 : 80
        if let portText {
            guard let parsed = Self.port(portText) else { return nil }
            port = parsed
        }
        let hostPort = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return RelayServer(
            endpoint: nil, name: (secure ? "wss://" : "ws://") + hostPort, credentials: credentials,
            webSocketHost: hostPort, isSecure: secure)
    }

    /// `host:port`, `[v6]:port`, `host`, or a bare IPv6 address, split; nil when malformed.
    public static func splitHostPort(_ text: String) -> (host: String, port: String?)? {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return (host, nil) }
            guard rest.hasPrefix(":") else { return nil }
            return (host, String(rest.dropFirst()))
        }
        let colons = text.utf8.filter { $0 == UInt8(ascii: ":") }.count
        if colons > 1 { return (text, nil) }  // a bare IPv6 address
        guard colons == 1, let colon = text.firstIndex(of: ":") else { return (text, nil) }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// A port of 1 to 65535 in decimal; nil for anything else (an announced port 99999 is no
    /// server).
    static func port(_ text: String) -> UInt16? {
        guard text.utf8.count <= 5, let number = NatsParser.decimal(text.utf8), number > 0, number <= 65535 else {
            return nil
        }
        return UInt16(number)
    }

    /// `%XX` escapes decoded; nil for a malformed escape, a line break, or bytes that are not
    /// UTF-8.
    public static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        func digit(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: byte - 0x30
            case 0x41...0x46: byte - 0x41 + 10
            case 0x61...0x66: byte - 0x61 + 10
            default: nil
            }
        }
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%") {
                guard index + 2 < utf8.count, let high = digit(utf8[index + 1]),
                    let low = digit(utf8[index + 2])
                else { return nil }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        guard !bytes.contains(0x0A), !bytes.contains(0x0D) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// Which server to try next, and when: the failover policy, without sockets.
///
/// The servers are tried in turn, starting after the one that failed, so that a dead server is
/// left at once for the next; only when a whole round has failed does the client wait, from
/// `relayBackoffMin` doubling to `relayBackoffMax`, each wait jittered. Servers the cluster
/// announces (INFO's `connect_urls`, or `ws_connect_urls` to a client that came through a
/// WebSocket) join the list up to `relayServersMax`, with the credentials of the server that
/// announced them (one cluster, one set of accounts); each announcement replaces the last, so a
/// server the cluster no longer names leaves the list, as does one that failed
/// `relayAnnouncedFailuresMax` times in a row (the seeds stay). A server whose `max_payload`
/// cannot carry a frame is passed over while another can.
public struct RelayServers: Sendable {
    /// A server and what this client knows of it.
    private struct Entry: Sendable {
        var server: RelayServer
        /// Failures since it last succeeded.
        var failures = 0
        /// Its `max_payload` is smaller than a frame.
        var tooSmall = false
    }
    /// At most `relayServersMax` (a list, not a dictionary by name: hashing a `String` would
    /// carry Unicode's normalization tables into the browser's build).
    private var entries: [Entry]
    public var servers: [RelayServer] { entries.map { $0.server } }
    /// The relay's bounds alone: a whole `Settings` in each copy of this value cost the browser's
    /// build some 20 KB of copying code.
    private let settings: Settings.Relay
    /// An announced `host` and port as the address a native shell connects to (an IP address
    /// alone: it does not wait for a resolver on its loop), nil for none it can use. Nil for a
    /// shell that connects by name (a browser's WebSocket resolves the host): announced servers
    /// are kept by name, and the browser's build carries no address parsing.
    public typealias Resolver = @Sendable (_ host: String, _ port: UInt16) -> Endpoint?
    private let resolve: Resolver?

    /// What a native shell connects to: an IP address that is a unicast destination outside the
    /// relay's block.
    public static let addressesOnly: Resolver = { host, port in
        guard let address = IPAddress.parse(host) else { return nil }
        let endpoint = Endpoint(address: address, port: port)
        return endpoint.isUnicastDestination && !endpoint.isRelay ? endpoint : nil
    }
    /// The server being tried or used.
    public private(set) var current = 0
    /// Attempts that failed since the last success.
    private(set) var failuresInRow = 0

    public init(seeds: [RelayServer], settings: Settings, resolve: Resolver? = RelayServers.addressesOnly) {
        precondition(!seeds.isEmpty, "a relay needs a server")
        entries = seeds.prefix(settings.relay.serversMax).map { Entry(server: $0) }
        self.settings = settings.relay
        self.resolve = resolve
    }

    public var server: RelayServer { entries[current].server }

    /// The current server failed (or its connection ended, or cannot carry frames): moves to the
    /// next one it may use and says how long to wait before trying it.
    mutating func failed(random: inout SplitMix64) -> Duration {
        failuresInRow += 1
        entries[current].failures += 1
        let failing = entries[current]
        if !failing.server.isSeed, failing.failures >= settings.announcedFailuresMax, entries.count > 1 {
            entries.remove(at: current)
            current %= entries.count
        } else {
            current = (current + 1) % entries.count
        }
        // Past the servers that cannot carry a frame, while one may.
        if entries.contains(where: { !$0.tooSmall }) {
            while entries[current].tooSmall { current = (current + 1) % entries.count }
        }
        guard failuresInRow % entries.count == 0 else { return .zero }
        let rounds = min(failuresInRow / entries.count, 16)
        var wait = settings.backoffMin
        for _ in 1..<rounds where wait < settings.backoffMax { wait = wait * 2 }
        return random.jittered(min(wait, settings.backoffMax), fraction: settings.backoffJitterFraction)
    }

    /// The current server accepted the connection.
    mutating func succeeded() {
        failuresInRow = 0
        entries[current].failures = 0
    }

    /// The current server's `max_payload` cannot carry a frame. Returns whether another server may
    /// (then the client should move on).
    mutating func markTooSmall() -> Bool {
        entries[current].tooSmall = true
        return entries.contains { !$0.tooSmall }
    }

    /// What a connected server announced: the servers of its cluster reached the way the current
    /// one is (TCP or WebSocket). nats-server tells a WebSocket client its cluster's WebSocket
    /// listeners in `connect_urls` (seen from 2.9.10: its own among them); `ws_connect_urls` is
    /// read first where a server sends it. See `learn(_:)`.
    @discardableResult
    mutating func learn(from info: NatsServerInfo) -> (added: Int, dropped: Int) {
        guard server.webSocketHost != nil else { return learn(info.connectURLs) }
        return learn(info.webSocketConnectURLs.isEmpty ? info.connectURLs : info.webSocketConnectURLs)
    }

    /// The servers a connected server announced: the new ones join the list (for a native shell
    /// only IP addresses: a name would need resolving, which the event loop does not wait for),
    /// and the announced ones it no longer names leave it (not the one in use). Returns how many
    /// joined and how many left.
    @discardableResult
    mutating func learn(_ urls: [String]) -> (added: Int, dropped: Int) {
        let model = server
        let inUse = model.key
        let announced = urls.compactMap { announcedServer($0, like: model) }
        let announcedKeys = announced.map { $0.key }
        let before = entries.count
        entries = entries.filter {
            $0.server.isSeed || $0.server.key == inUse || announcedKeys.contains($0.server.key)
        }
        let dropped = before - entries.count
        var added = 0
        for candidate in announced where entries.count < settings.serversMax {
            guard !entries.contains(where: { $0.server.key == candidate.key }) else { continue }
            entries.append(Entry(server: candidate))
            added += 1
        }
        current = entries.firstIndex { $0.server.key == inUse } ?? 0
        return (added, dropped)
    }

    /// An announced `host:port` (a scheme is tolerated) as a server reached like `model`, with its
    /// credentials; nil when it names no server this client can use.
    private func announcedServer(_ url: String, like model: RelayServer) -> RelayServer? {
        var text = Substring(url)
        for scheme in ["nats://", "tls://", "ws://", "wss://"] where text.hasPrefix(scheme) {
            text = text.dropFirst(scheme.count)
        }
        while text.hasSuffix("/") { text = text.dropLast() }
        guard let (host, portText) = RelayServer.splitHostPort(String(text)), !host.isEmpty,
            host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "@") })
        else { return nil }
        let webSocket = model.webSocketHost != nil
        let port: UInt16
        if let portText {
            guard let parsed = RelayServer.port(portText) else { return nil }
            port = parsed
        } else {
            port = webSocket ? (model.isSecure ? 443 : 80) : 4222
        }
        var endpoint: Endpoint?
        if let resolve {
            guard let address = resolve(host, port) else { return nil }
            endpoint = address
        }
        let hostPort = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let scheme = webSocket ? (model.isSecure ? "wss://" : "ws://") : ""
        return RelayServer(
            endpoint: endpoint, name: scheme + hostPort, credentials: model.credentials,
            isSeed: false, webSocketHost: webSocket ? hostPort : nil, isSecure: model.isSecure)
    }

    /// `host:port` or `[v6]:port` with an IP address for host, and a port of 1 to 65535 (4222 when
    /// none is given); nil for anything else (an announced port 99999 is no server).
    public static func endpoint(_ url: String) -> Endpoint? {
        var text = url
        for scheme in ["nats://", "tls://"] where text.hasPrefix(scheme) { text = String(text.dropFirst(scheme.count)) }
        guard let (host, portText) = RelayServer.splitHostPort(text), let address = IPAddress.parse(host)
        else { return nil }
        var port: UInt16 = 4222
        if let portText {
            guard let parsed = RelayServer.port(portText) else { return nil }
            port = parsed
        }
        let endpoint = Endpoint(address: address, port: port)
        return endpoint.isUnicastDestination && !endpoint.isRelay ? endpoint : nil
    }
}

import CoplayCore

/// One NATS server a relay may connect to.
public struct RelayServer: Equatable, Sendable, CustomStringConvertible {
    /// Its address (a `--relay` host name is resolved when the agent starts).
    public var endpoint: Endpoint
    /// As the user gave it or the cluster announced it (`host:port`), for messages.
    public var name: String
    public var credentials: NatsCommand.Credentials
    /// Given with `--relay` (announced servers come and go with the cluster).
    public var isSeed: Bool
    /// Reached through nats-server's websocket listener (`ws://`, the browsers' way in): the
    /// host to name in the handshake. Nil: the NATS protocol straight over TCP.
    public var webSocketHost: String?

    public init(
        endpoint: Endpoint, name: String, credentials: NatsCommand.Credentials, isSeed: Bool = true,
        webSocketHost: String? = nil
    ) {
        self.endpoint = endpoint
        self.name = name
        self.credentials = credentials
        self.isSeed = isSeed
        self.webSocketHost = webSocketHost
    }

    public var description: String { name }
}

/// Which server to try next, and when: the failover policy, without sockets.
///
/// The servers are tried in turn, starting after the one that failed, so that a dead server is
/// left at once for the next; only when a whole round has failed does the client wait, from
/// `relayBackoffMin` doubling to `relayBackoffMax`, each wait jittered. Servers the cluster
/// announces (INFO's `connect_urls`) join the list up to `relayServersMax`, with the
/// credentials of the server that announced them (one cluster, one set of accounts); each
/// announcement replaces the last, so a server the cluster no longer names leaves the list, as
/// does one that failed `relayAnnouncedFailuresMax` times in a row (the `--relay` seeds stay).
/// A server whose `max_payload` cannot carry a frame is passed over while another can.
struct RelayServers {
    private(set) var servers: [RelayServer]
    private let settings: Settings
    /// The server being tried or used.
    private(set) var current = 0
    /// Attempts that failed since the last success.
    private(set) var failuresInRow = 0
    /// Each server's failures since it last succeeded, by endpoint (at most `relayServersMax`).
    private var failures: [Endpoint: Int] = [:]
    /// Servers whose `max_payload` is smaller than a frame (at most `relayServersMax`).
    private(set) var tooSmall: Set<Endpoint> = []

    init(seeds: [RelayServer], settings: Settings) {
        precondition(!seeds.isEmpty, "a relay needs a server")
        servers = Array(seeds.prefix(settings.relay.serversMax))
        self.settings = settings
    }

    var server: RelayServer { servers[current] }

    /// The current server failed (or its connection ended, or cannot carry frames): moves to the
    /// next one it may use and says how long to wait before trying it.
    mutating func failed(random: inout SplitMix64) -> Duration {
        failuresInRow += 1
        let failing = server
        let count = failures[failing.endpoint, default: 0] + 1
        failures[failing.endpoint] = count
        if !failing.isSeed, count >= settings.relay.announcedFailuresMax, servers.count > 1 {
            servers.remove(at: current)
            failures[failing.endpoint] = nil
            tooSmall.remove(failing.endpoint)
            current %= servers.count
        } else {
            current = (current + 1) % servers.count
        }
        // Past the servers that cannot carry a frame, while one may.
        if servers.contains(where: { !tooSmall.contains($0.endpoint) }) {
            while tooSmall.contains(server.endpoint) { current = (current + 1) % servers.count }
        }
        guard failuresInRow % servers.count == 0 else { return .zero }
        let rounds = min(failuresInRow / servers.count, 16)
        var wait = settings.relay.backoffMin
        for _ in 1..<rounds where wait < settings.relay.backoffMax { wait = wait * 2 }
        return random.jittered(min(wait, settings.relay.backoffMax), fraction: settings.relay.backoffJitterFraction)
    }

    /// The current server accepted the connection.
    mutating func succeeded() {
        failuresInRow = 0
        failures[server.endpoint] = nil
    }

    /// The current server's `max_payload` cannot carry a frame. Returns whether another server may
    /// (then the client should move on).
    mutating func markTooSmall() -> Bool {
        tooSmall.insert(server.endpoint)
        return servers.contains { !tooSmall.contains($0.endpoint) }
    }

    /// The servers a connected server announced: the new ones that are IP addresses join the
    /// list (a name would need resolving, which the event loop does not wait for), and the
    /// announced ones it no longer names leave it (not the one in use). Returns how many joined
    /// and how many left.
    @discardableResult
    mutating func learn(_ urls: [String]) -> (added: Int, dropped: Int) {
        let credentials = server.credentials
        let inUse = server.endpoint
        let announced = Set(urls.compactMap(Self.endpoint))
        let before = servers.count
        servers.removeAll { !$0.isSeed && $0.endpoint != inUse && !announced.contains($0.endpoint) }
        let dropped = before - servers.count
        var added = 0
        for url in urls where servers.count < settings.relay.serversMax {
            guard let endpoint = Self.endpoint(url), !servers.contains(where: { $0.endpoint == endpoint }) else {
                continue
            }
            servers.append(RelayServer(endpoint: endpoint, name: url, credentials: credentials, isSeed: false))
            added += 1
        }
        current = servers.firstIndex { $0.endpoint == inUse } ?? 0
        let known = Set(servers.map(\.endpoint))
        failures = failures.filter { known.contains($0.key) }
        tooSmall = tooSmall.filter { known.contains($0) }
        return (added, dropped)
    }

    /// `host:port` or `[v6]:port` with an IP address for host, and a port of 1 to 65535 (4222 when
    /// none is given); nil for anything else (an announced port 99999 is no server).
    static func endpoint(_ url: String) -> Endpoint? {
        var text = url
        for scheme in ["nats://", "tls://"] where text.hasPrefix(scheme) { text = String(text.dropFirst(scheme.count)) }
        guard let (host, portText) = CommandLineOptions.splitHostPort(text), let address = IPAddress.parse(host)
        else { return nil }
        let port: UInt16
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = UInt16(portText), number > 0
            else { return nil }
            port = number
        } else {
            port = 4222
        }
        let endpoint = Endpoint(address: address, port: port)
        return endpoint.isUnicastDestination && !endpoint.isRelay ? endpoint : nil
    }
}

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

    public init(endpoint: Endpoint, name: String, credentials: NatsCommand.Credentials, isSeed: Bool = true) {
        self.endpoint = endpoint
        self.name = name
        self.credentials = credentials
        self.isSeed = isSeed
    }

    public var description: String { name }
}

/// Which server to try next, and when: the failover policy, without sockets.
///
/// The servers are tried in turn, starting after the one that failed, so that a dead server is
/// left at once for the next; only when a whole round has failed does the client wait, from
/// `relayBackoffMin` doubling to `relayBackoffMax`, each wait jittered. Servers the cluster
/// announces (INFO's `connect_urls`) join the list up to `relayServersMax`, with the
/// credentials of the server that announced them (one cluster, one set of accounts).
struct RelayServers {
    private(set) var servers: [RelayServer]
    private let settings: Settings
    /// The server being tried or used.
    private(set) var current = 0
    /// Attempts that failed since the last success.
    private(set) var failuresInRow = 0

    init(seeds: [RelayServer], settings: Settings) {
        precondition(!seeds.isEmpty, "a relay needs a server")
        servers = Array(seeds.prefix(settings.relayServersMax))
        self.settings = settings
    }

    var server: RelayServer { servers[current] }

    /// The current server failed (or its connection ended): moves to the next one and says how
    /// long to wait before trying it.
    mutating func failed(random: inout SplitMix64) -> Duration {
        failuresInRow += 1
        current = (current + 1) % servers.count
        guard failuresInRow % servers.count == 0 else { return .zero }
        let rounds = min(failuresInRow / servers.count, 16)
        var wait = settings.relayBackoffMin
        for _ in 1..<rounds where wait < settings.relayBackoffMax { wait = wait * 2 }
        return random.jittered(min(wait, settings.relayBackoffMax), fraction: settings.relayBackoffJitterFraction)
    }

    /// The current server accepted the connection.
    mutating func succeeded() { failuresInRow = 0 }

    /// The servers a connected server announced: the new ones that are IP addresses join the
    /// list (a name would need resolving, which the event loop does not wait for). Returns how
    /// many joined.
    @discardableResult
    mutating func learn(_ urls: [String]) -> Int {
        let credentials = server.credentials
        var added = 0
        for url in urls where servers.count < settings.relayServersMax {
            guard let endpoint = Self.endpoint(url), !servers.contains(where: { $0.endpoint == endpoint }) else {
                continue
            }
            servers.append(RelayServer(endpoint: endpoint, name: url, credentials: credentials, isSeed: false))
            added += 1
        }
        return added
    }

    /// `host:port` or `[v6]:port` with an IP address for host.
    static func endpoint(_ url: String) -> Endpoint? {
        var text = url
        for scheme in ["nats://", "tls://"] where text.hasPrefix(scheme) { text = String(text.dropFirst(scheme.count)) }
        guard let (host, portText) = CommandLineOptions.splitHostPort(text), let address = IPAddress.parse(host)
        else { return nil }
        let port = portText.flatMap { UInt16($0) } ?? 4222
        let endpoint = Endpoint(address: address, port: port)
        return endpoint.isUnicastDestination && !endpoint.isRelay ? endpoint : nil
    }
}

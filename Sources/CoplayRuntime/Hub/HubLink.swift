import CoplayCore

/// A hub's link, `https://HOST[:PORT]/#hub=SECRET`, as `coplay hub` prints it: where the hub
/// serves the page and `wss://` for everything (one port, behind Caddy), and the hub's secret,
/// which opens its nats-server to tabs and agents (as a token) and to parties' servers (as a leaf
/// node's password). The secret is in the fragment, which a browser never sends; it travels only
/// inside TLS. It keeps strangers off the hub; the group key, which the hub never sees, keeps
/// them out of a group.
public struct HubLink: Equatable, Sendable {
    /// A DNS name or an IPv4 address.
    public var host: String
    public var port: UInt16
    /// 32 lowercase hex digits (128 bits).
    public var secret: String

    public static let secretHexDigits = 32

    public init(host: String, port: UInt16, secret: String) {
        self.host = host
        self.port = port
        self.secret = secret
    }

    var hostPort: String { port == 443 ? host : "\(host):\(port)" }
    /// The hub's page: what a phone in another home opens.
    public var page: String { "https://\(hostPort)/" }
    public var text: String { page + "#hub=" + secret }
    /// Where tabs and agents reach the hub's nats-server, as an invitation names it.
    public var relay: String { "wss://\(secret)@\(hostPort)" }

    /// A hub link, or the `wss://SECRET@HOST[:PORT]` relay of an invitation made for one.
    public static func parse(_ text: String) -> Result<HubLink, UsageError> {
        func fail(_ why: String) -> Result<HubLink, UsageError> {
            .failure(
                UsageError(
                    message:
                        "'\(text.prefix(200))' is not a hub link (https://HOST[:PORT]/#hub=SECRET, as coplay hub prints it): \(why)"
                ))
        }
        let secret: String
        let authority: Substring
        if text.hasPrefix("https://") {
            let rest = text.dropFirst("https://".count)
            guard let hash = rest.firstIndex(of: "#") else { return fail("it has no #hub=") }
            let fragment = rest[rest.index(after: hash)...]
            guard fragment.hasPrefix("hub=") else { return fail("its fragment is not hub=…") }
            secret = String(fragment.dropFirst(4))
            authority = rest[..<hash].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)[0]
        } else if text.hasPrefix("wss://"), let at = text.firstIndex(of: "@") {
            secret = String(text[text.index(text.startIndex, offsetBy: 6)..<at])
            authority =
                text[text.index(after: at)...].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)[0]
        } else {
            return fail("it does not start with https://")
        }
        guard Self.isSecret(secret) else { return fail("its secret is not \(secretHexDigits) lowercase hex digits") }
        var host = authority
        var port: UInt16 = 443
        if let colon = authority.lastIndex(of: ":") {
            guard let number = UInt16(authority[authority.index(after: colon)...]), number > 0 else {
                return fail("its port is not 1 to 65535")
            }
            port = number
            host = authority[..<colon]
        }
        guard Self.isHost(host) else { return fail("its host is not a name or an IPv4 address") }
        return .success(HubLink(host: String(host), port: port, secret: secret))
    }

    /// A hub's secret: `secretHexDigits` lowercase hex digits.
    static func isSecret(_ text: some StringProtocol) -> Bool {
        text.utf8.count == secretHexDigits
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// A DNS name or an IPv4 address: letters, digits, dots and hyphens, at most 253 bytes.
    static func isHost(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.count <= 253
            && text.utf8.allSatisfy {
                $0 == 0x2E || $0 == 0x2D || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0)
                    || (0x41...0x5A).contains($0)
            }
    }

    /// What makes a nats-server this hub's leaf node, over `wss://` through the hub's front door.
    public struct Leaf: Equatable, Sendable {
        public var url: String
        /// A CA to trust for the hub's certificate besides the system's (a hub with
        /// `--tls internal`: its Caddy's root); nil: the system's alone.
        public var caFile: String?

        /// The `leafnodes` block of the server's configuration. A lost hub is retried every
        /// second, so that a home is back in the group within seconds of the hub's return.
        var configuration: String {
            let tls = caFile.map { ", tls { ca_file: \"\($0)\" }" } ?? ""
            return "leafnodes { reconnect: 1, remotes [ { url: \"\(url)\"\(tls) } ] }"
        }
    }

    /// The port is always named: nats-server takes a `wss://` remote without one for its leaf
    /// port (7422), not 443.
    public func leaf(caFile: String?) -> Leaf { Leaf(url: "wss://leaf:\(secret)@\(host):\(port)", caFile: caFile) }
}

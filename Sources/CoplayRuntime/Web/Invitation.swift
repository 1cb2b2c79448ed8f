/// An invitation: the page's address with a fragment that carries the relay's WebSocket address
/// (or several: the servers of a cluster, each a `relay=` field, tried in turn), the session and
/// the group key. A browser never sends a fragment to any server, so neither
/// the page's server nor anyone between learns the key from the link; whoever holds the link
/// holds the key, as whoever holds the key file does.
///
///   https://watch.example.net/#relay=ws%3A%2F%2FTOKEN%40relay.example.net%3A8443&session=film-night&key=6a…
public struct Invitation: Equatable, Sendable {
    public var page: String
    /// One or more (at most `relaysMax`).
    public var relays: [String]
    public var session: String
    public var key: [UInt8]
    /// Whoever opens it joins a large party's audience (`audience=1` in the link; `--audience`).
    public var audience = false

    /// The first relay.
    public var relay: String { relays[0] }

    /// Relays one link names at most: the `--relay` seeds an agent takes.
    public static let relaysMax = 8

    public static func make(page: String, relay: String, session: String, key: [UInt8]) -> Result<
        Invitation, UsageError
    > {
        make(page: page, relays: [relay], session: session, key: key)
    }

    /// The fields an invitation needs, checked: a page at http(s), one to `relaysMax` relays at
    /// ws(s), a key of 32 bytes or more.
    public static func make(page: String, relays: [String], session: String, key: [UInt8]) -> Result<
        Invitation, UsageError
    > {
        guard page.hasPrefix("http://") || page.hasPrefix("https://") else {
            return .failure(
                UsageError(message: "--page must be the page's http:// or https:// address, not '\(page.prefix(60))'"))
        }
        guard !relays.isEmpty, relays.count <= relaysMax else {
            return .failure(UsageError(message: "an invitation names 1 to \(relaysMax) relays, not \(relays.count)"))
        }
        for relay in relays where !(relay.hasPrefix("ws://") || relay.hasPrefix("wss://")) || relay.utf8.count <= 6 {
            return .failure(
                UsageError(
                    message:
                        "--relay must be nats-server's WebSocket address, ws://[TOKEN@]HOST:PORT (wss:// with TLS), not '\(relay.prefix(60))'"
                ))
        }
        guard key.count >= 32 else { return .failure(UsageError(message: "the group key must be 32 bytes or more")) }
        let base =
            page.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? page
        return .success(Invitation(page: base, relays: relays, session: session, key: key))
    }

    public var link: String {
        page + "#" + relays.map { "relay=" + Self.percentEncoded($0) + "&" }.joined() + "session="
            + Self.percentEncoded(session) + "&key="
            + key.map { Self.hexDigit($0 >> 4) + Self.hexDigit($0 & 15) }.joined() + (audience ? "&audience=1" : "")
    }

    /// The invitation a link carries. A link without a key, or a mangled one, is refused with
    /// what is wrong.
    public static func parse(_ link: String) -> Result<Invitation, UsageError> {
        let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            return .failure(
                UsageError(
                    message: "this link carries no invitation (nothing after '#'): ask for a new one (coplay invite)"))
        }
        var fields: [String: String] = [:]
        var relays: [String] = []
        for pair in parts[1].split(separator: "&") {
            let halves = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard halves.count == 2, let value = percentDecoded(String(halves[1])) else {
                return .failure(
                    UsageError(message: "this invitation is damaged near '\(pair.prefix(30))': ask for a new one"))
            }
            if halves[0] == "relay" {
                guard relays.count < relaysMax else {
                    return .failure(UsageError(message: "this invitation names more than \(relaysMax) relays"))
                }
                relays.append(value)
            }
            fields[String(halves[0])] = value
        }
        guard let hex = fields["key"], !hex.isEmpty else {
            return .failure(
                UsageError(message: "this invitation carries no group key: ask for a new link (coplay invite)"))
        }
        guard let key = hexBytes(hex), key.count >= 32 else {
            return .failure(
                UsageError(message: "this invitation's key is damaged (64 hex digits or more): ask for a new link"))
        }
        guard !relays.isEmpty else {
            return .failure(UsageError(message: "this invitation names no relay: ask for a new link"))
        }
        return make(page: String(parts[0]), relays: relays, session: fields["session"] ?? "default", key: key).map {
            var invitation = $0
            invitation.audience = fields["audience"] == "1"
            return invitation
        }
    }

    static func hexDigit(_ value: UInt8) -> String { String(UnicodeScalar(value < 10 ? 48 + value : 87 + value)) }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.count <= 512 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - 55
        default: nil
        }
    }

    /// Everything but unreserved characters (RFC 3986) is %-encoded.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out += String(UnicodeScalar(byte))
            default:
                out += "%" + hexDigit(byte >> 4).uppercased() + hexDigit(byte & 15).uppercased()
            }
        }
        return out
    }

    static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard input.count >= 2, let high = nibble(input.removeFirst()), let low = nibble(input.removeFirst())
                else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

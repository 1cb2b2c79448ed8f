/// A participant's identity: a 64-bit id that stays the same for the life of the agent
/// (or across restarts with `--id`), and a 32-bit incarnation that grows every time that
/// participant joins. The pair (id, incarnation) names one membership of one agent.
public struct PeerID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// Parses 1 to 16 hexadecimal digits.
    public init?(hex: some StringProtocol) {
        guard (1...16).contains(hex.count), let value = UInt64(hex, radix: 16) else { return nil }
        rawValue = value
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// Sixteen lowercase hex digits.
    public var description: String { hex16(rawValue) }
}

/// Which session a datagram belongs to: the FNV-1a 64-bit hash of the session name, so agents
/// of different sessions on one multicast group ignore each other.
public struct SessionID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public init(name: String) { rawValue = fnv1a64(Array(name.utf8)) }
    public var description: String { hex16(rawValue) }
}

/// How many times a participant has joined. A larger incarnation of the same id replaces the
/// smaller one: a restarted or rejoined agent is a new participant.
public struct Incarnation: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var next: Incarnation { Incarnation(rawValue &+ 1) }
    public var description: String { String(rawValue) }

    /// A first incarnation that grows across restarts: tenths of a second since 2025-01-01
    /// on the agent's wall clock (fits 32 bits until 2038), so a restarted agent that keeps its
    /// id with `--id` outranks its previous life.
    public static func initial(at wall: WallInstant) -> Incarnation {
        let epoch2025Nanos: Int64 = 1_735_689_600 * 1_000_000_000
        let tenths = max(0, (wall.unixNanos - epoch2025Nanos) / 100_000_000)
        return Incarnation(UInt32(truncatingIfNeeded: min(tenths, Int64(UInt32.max - 1_000_000))))
    }
}

/// One membership of one participant.
public struct Member: Hashable, Sendable, CustomStringConvertible {
    public var id: PeerID
    public var incarnation: Incarnation
    public init(id: PeerID, incarnation: Incarnation) {
        self.id = id
        self.incarnation = incarnation
    }
    public var description: String { "\(id)/\(incarnation)" }
}

/// An IPv4 or IPv6 address, as 128 bits: IPv4 as an IPv4-mapped IPv6 address (::ffff:a.b.c.d),
/// so one type and one comparison serve both families.
public struct IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The first and last 64 bits, in network order read as big-endian integers.
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// An IPv4 address in host byte order (127.0.0.1 is 0x7F00_0001).
    public init(ipv4: UInt32) { self.init(high: 0, low: 0xFFFF_0000_0000 | UInt64(ipv4)) }

    /// Sixteen bytes of an IPv6 address.
    public init(ipv6 bytes: some Collection<UInt8>) {
        precondition(bytes.count == 16, "an IPv6 address is 16 bytes")
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// The IPv4 address, if this is one (IPv4-mapped).
    public var ipv4: UInt32? { high == 0 && low >> 32 == 0xFFFF ? UInt32(truncatingIfNeeded: low) : nil }
    public var isIPv4: Bool { ipv4 != nil }

    /// The sixteen bytes, in network order.
    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// 224.0.0.0/4 or ff00::/8.
    public var isMulticast: Bool { ipv4.map { $0 >> 28 == 0xE } ?? (high >> 56 == 0xFF) }
    /// fe80::/10: reachable only through one interface (a datagram to it needs the interface).
    public var isLinkLocalIPv6: Bool { !isIPv4 && high >> 54 == 0x3FA }

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text (with `::`, without a zone).
    public static func parse(_ text: some StringProtocol) -> IPAddress? {
        if let v4 = Endpoint.parseAddress(text) { return IPAddress(ipv4: v4) }
        return parseIPv6(String(text))
    }

    private static func parseIPv6(_ text: String) -> IPAddress? {
        guard text.contains(":"), text.utf8.count <= 45 else { return nil }
        func groups(_ part: Substring) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            var values: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                values.append(value)
            }
            return values
        }
        // Split at "::" by hand: `split(separator:)` with a string separator is not in Embedded
        // Swift's standard library (the browser build).
        var halves: [Substring] = []
        var (start, index) = (text.startIndex, text.startIndex)
        while index < text.endIndex {
            let next = text.index(after: index)
            if text[index] == ":", next < text.endIndex, text[next] == ":" {
                halves.append(text[start..<index])
                start = text.index(after: next)
                index = start
            } else {
                index = next
            }
        }
        halves.append(text[start...])
        let words: [UInt16]
        switch halves.count {
        case 1:
            guard let all = groups(Substring(text)), all.count == 8 else { return nil }
            words = all
        case 2:
            guard let head = groups(Substring(halves[0])), let tail = groups(Substring(halves[1])),
                head.count + tail.count <= 7
            else { return nil }
            words = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        default:
            return nil
        }
        return IPAddress(ipv6: words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
    }

    public static func < (left: IPAddress, right: IPAddress) -> Bool { (left.high, left.low) < (right.high, right.low) }

    /// Dotted quad for IPv4; RFC 5952 text for IPv6 (lower case, the longest run of zero groups
    /// as `::`).
    public var description: String {
        if let v4 = ipv4 { return "\(v4 >> 24).\(v4 >> 16 & 0xFF).\(v4 >> 8 & 0xFF).\(v4 & 0xFF)" }
        let words = (0..<8).map { index -> UInt16 in
            UInt16(truncatingIfNeeded: (index < 4 ? high : low) >> (48 - 16 * UInt64(index % 4)))
        }
        var best = (start: -1, length: 0)
        var run = (start: -1, length: 0)
        for (index, word) in words.enumerated() {
            if word == 0 {
                run = run.start < 0 ? (index, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        guard best.length >= 2 else { return words.map { String($0, radix: 16) }.joined(separator: ":") }
        let head = words[..<best.start].map { String($0, radix: 16) }.joined(separator: ":")
        let tail = words[(best.start + best.length)...].map { String($0, radix: 16) }.joined(separator: ":")
        return head + "::" + tail
    }
}

/// An address and UDP port, as the core names where to send a unicast datagram.
public struct Endpoint: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16

    public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// An IPv4 endpoint; `address` in host byte order (127.0.0.1 is 0x7F00_0001).
    public init(address: UInt32, port: UInt16) { self.init(address: IPAddress(ipv4: address), port: port) }

    /// Parses dotted-quad IPv4 text.
    public static func parseAddress(_ text: some StringProtocol) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0.isASCII }), let octet = UInt8(part) else {
                return nil
            }
            value = value << 8 | UInt32(octet)
        }
        return value
    }

    /// Whether a datagram may be sent here: a port, and an address that is neither unspecified,
    /// multicast, nor the IPv4 limited broadcast (what a peer list may name).
    public var isUnicastDestination: Bool {
        port != 0 && !address.isMulticast && address != IPAddress(ipv4: 0) && address != IPAddress(ipv4: 0xFFFF_FFFF)
            && address != IPAddress(high: 0, low: 0)
    }

    public var addressText: String { relayPeer.map { "relay/\($0)" } ?? address.description }
    /// `a.b.c.d:port`, `[v6]:port`, or `relay/ID` for a peer reached through the relay.
    public var description: String {
        if let peer = relayPeer { return "relay/\(peer)" }
        return address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)"
    }

    /// Where a peer heard through the relay (`--relay`) is reached: an address in IPv6's
    /// discard-only block 100::/64 (RFC 6666), which no network routes, whose low 64 bits are
    /// the peer's id. The core treats it as any other unicast endpoint; the shell publishes what
    /// is sent there on that peer's relay subject instead of sending a datagram.
    public static func relay(_ peer: PeerID) -> Endpoint {
        Endpoint(address: IPAddress(high: Self.relayPrefix, low: peer.rawValue), port: 1)
    }

    /// The peer this endpoint reaches through the relay, or nil for a network endpoint (or one
    /// of the relay's shared subjects).
    public var relayPeer: PeerID? {
        address.high == Self.relayPrefix && address.low != 0 ? PeerID(address.low) : nil
    }

    /// The relay's subjects for more than one peer, as endpoints a datagram is sent to: the
    /// group's (`.all`: the stage and the audience) and the stage's (`.stage`). Never on the
    /// LAN; no peer's endpoint (the relay refuses a frame whose sender claims id 0).
    public static let relayEveryone = Endpoint(address: IPAddress(high: relayPrefix, low: 0), port: 2)
    public static let relayStage = Endpoint(address: IPAddress(high: relayPrefix, low: 0), port: 3)
    /// The stage's speaker alone (its subject, `RelaySeal.speakerSubject`): where a viewer's hello goes.
    public static let relaySpeaker = Endpoint(address: IPAddress(high: relayPrefix, low: 0), port: 5)
    /// The LAN's multicast group alone, not the relay: where a command's later copies go (against
    /// a LAN's losses; the relay is TCP, and a copy there would cost every viewer of a party a
    /// frame to open and drop).
    public static let lanGroup = Endpoint(address: IPAddress(high: relayPrefix, low: 0), port: 4)

    /// Whether this endpoint is reached through the relay.
    public var isRelay: Bool { address.high == Self.relayPrefix }

    private static let relayPrefix: UInt64 = 0x0100_0000_0000_0000

    public static func < (left: Endpoint, right: Endpoint) -> Bool {
        (left.address, left.port) < (right.address, right.port)
    }
}

/// FNV-1a, 64-bit (public domain constants).
public func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash ^= UInt64(byte)
        hash &*= 0x0000_0100_0000_01b3
    }
    return hash
}

/// `value`'s low `bytes` bytes in hex, two digits each (sixteen digits by default).
func hex16(_ value: UInt64, bytes: Int = 8) -> String {
    Hex.encode((0..<bytes).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (bytes - 1 - $0))) })
}

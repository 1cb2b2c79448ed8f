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

/// An IPv4 address and UDP port, as the core names where to send a unicast datagram.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// The address in host byte order (127.0.0.1 is 0x7F00_0001).
    public var address: UInt32
    public var port: UInt16
    public init(address: UInt32, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// Parses dotted-quad IPv4 text.
    public static func parseAddress(_ text: some StringProtocol) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let octet = UInt8(part) else { return nil }
            value = value << 8 | UInt32(octet)
        }
        return value
    }

    /// Whether a datagram may be sent here: a port, and an address that is neither 0.0.0.0,
    /// multicast, nor the limited broadcast (what a peer list may name).
    public var isUnicastDestination: Bool {
        port != 0 && address != 0 && address >> 28 != 0xE && address != 0xFFFF_FFFF
    }

    public var addressText: String {
        "\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF)"
    }
    public var description: String { "\(addressText):\(port)" }
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

func hex16(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

/// The group's shared keys, derived for one session: datagrams are signed with the current key
/// and accepted under the current or an older one (rotation without stopping the group). The tag
/// is HMAC-SHA256 over everything before it (header and payload), truncated to 16 bytes; the key
/// is HKDF-SHA256 of the file's key with the session id, so one key file serves several sessions
/// without their tags being interchangeable. Traffic stays readable: authenticated, not encrypted.
public struct GroupKeys: Sendable {
    public static let tagBytes = 16
    /// A key in a key file has at least this many bytes (64 hex digits).
    public static let keyBytesMin = 32

    private let signing: HMAC
    private let accepted: [HMAC]

    /// `keys[0]` signs and verifies; the others (older ones, during a rotation) only verify.
    public init(keys: [[UInt8]], session: SessionID) {
        precondition(!keys.isEmpty, "GroupKeys needs at least one key")
        var info = Array("coplay v1 session ".utf8)
        for shift in stride(from: 56, through: 0, by: -8) {
            info.append(UInt8(truncatingIfNeeded: session.rawValue >> UInt64(shift)))
        }
        let derived = keys.map {
            HMAC(key: HKDF.derive(ikm: $0, salt: Array("coplay group key".utf8), info: info, length: 32))
        }
        signing = derived[0]
        accepted = derived
    }

    /// The tag for the bytes of a datagram up to its tag.
    public func tag(_ signed: ArraySlice<UInt8>) -> [UInt8] {
        Array(signing.authenticate(Array(signed)).prefix(Self.tagBytes))
    }

    /// Whether the datagram's last `tagBytes` are the tag of what precedes them under one of the
    /// accepted keys. Compared in constant time.
    public func verifies(_ bytes: [UInt8]) -> Bool {
        guard bytes.count > Self.tagBytes else { return false }
        let body = Array(bytes[..<(bytes.count - Self.tagBytes)])
        let tag = bytes[(bytes.count - Self.tagBytes)...]
        return accepted.contains { hmac in
            zip(hmac.authenticate(body).prefix(Self.tagBytes), tag).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }

    /// The keys of a key file: one key per line as hexadecimal digits (at least 64, i.e. 32
    /// bytes); blank lines and `#` comments are skipped. The first key is current; a second,
    /// older one is still accepted but never signs.
    public static func parse(keyFile text: String) -> Result<[[UInt8]], KeyFileError> {
        var keys: [[UInt8]] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingWhitespace
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let key = Hex.decode(trimmed), key.count >= keyBytesMin else {
                return .failure(
                    KeyFileError(
                        message:
                            "line \(number + 1) is not a key of at least \(keyBytesMin) bytes written as hex (coplay keygen writes one)"
                    ))
            }
            keys.append(key)
        }
        guard !keys.isEmpty else {
            return .failure(KeyFileError(message: "no key in the file (coplay keygen writes one)"))
        }
        guard keys.count <= 2 else {
            return .failure(
                KeyFileError(message: "\(keys.count) keys: a key file holds the current key and at most one older one"))
        }
        return .success(keys)
    }
}

public struct KeyFileError: Error, Equatable, Sendable {
    public var message: String
}

extension Substring {
    fileprivate var trimmingWhitespace: Substring {
        var text = self
        while let first = text.first, first.isWhiteSpace { text.removeFirst() }
        while let last = text.last, last.isWhiteSpace { text.removeLast() }
        return text
    }
}

extension WireFormat {
    /// Encodes a datagram and, with keys, signs it (the tag flag, length and tag).
    public static func encode(_ datagram: Datagram, signedWith keys: GroupKeys?) -> [UInt8] {
        guard let keys else { return encode(datagram) }
        var tagged = datagram
        tagged.authTag = [UInt8](repeating: 0, count: GroupKeys.tagBytes)
        var bytes = encode(tagged)
        let bodyEnd = bytes.count - GroupKeys.tagBytes
        bytes.replaceSubrange(bodyEnd..., with: keys.tag(bytes[..<bodyEnd]))
        return bytes
    }
}

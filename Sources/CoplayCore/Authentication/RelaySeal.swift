/// How datagrams travel through a relay (`--relay`, a NATS cluster) without its operator reading
/// them: each is sealed with ChaCha20-Poly1305 (RFC 8439) under a key derived from the group
/// key, and published on subjects derived from the group key and the session's name, which
/// nobody without the key can guess or subscribe to.
///
/// A frame on the relay: version (1 byte, 1), nonce (12 random bytes), the datagram encrypted,
/// the 16-byte tag; the additional data is the version byte and the subject the frame is
/// published on, so a frame moved to another subject does not open. The datagram inside is
/// the one the LAN carries, tag and all, so everything the gate checks holds on the relay too.
///
/// Subjects: `coplay.<32 hex digits>.all` carries what goes to the whole group (one publish,
/// every subscriber gets it); `coplay.<…>.p.<peer id>` what goes to one peer (clock probes,
/// replies, repairs). The hex digits are HKDF-SHA256 of the key with the session's name.
public struct RelaySeal: Sendable {
    public static let version: UInt8 = 1
    /// The bytes a frame adds to its datagram: version, nonce and tag.
    public static let overheadBytes = 1 + ChaChaPoly.nonceBytes + ChaChaPoly.tagBytes

    /// The sealing key (the current group key's) first, then the older key's, which still opens.
    private let keys: [[UInt8]]
    /// Each key's subject prefix (`coplay.<hex>`), in the same order: publishing uses the first;
    /// an agent subscribes to all of them (a rotation in progress).
    public let prefixes: [String]

    /// `keys` as a key file holds them, current first; `sessionName` the session's name.
    public init(keys: [[UInt8]], sessionName: String) {
        precondition(!keys.isEmpty, "RelaySeal needs a key")
        let salt = Array("coplay relay".utf8)
        self.keys = keys.map {
            HKDF.derive(ikm: $0, salt: salt, info: Array("coplay relay v1 seal".utf8), length: ChaChaPoly.keyBytes)
        }
        prefixes = keys.map {
            "coplay."
                + Hex.encode(
                    HKDF.derive(
                        ikm: $0, salt: salt, info: Array("coplay relay v1 subject ".utf8) + Array(sessionName.utf8),
                        length: 16))
        }
    }

    /// The subject every agent of the group subscribes to, under the current key.
    public var groupSubject: String { prefixes[0] + ".all" }

    /// The subject one peer subscribes to for what is sent to it alone, under the current key.
    public func peerSubject(_ peer: PeerID) -> String { prefixes[0] + ".p." + peer.description }

    /// What this agent subscribes to: the group's and its own subject under each key in force.
    public func subscriptions(own: PeerID) -> [String] {
        prefixes.flatMap { [$0 + ".all", $0 + ".p." + own.description] }
    }

    /// `datagram` sealed for `subject`, with a nonce of 12 bytes that must never repeat under one
    /// key (random, from the system's generator: the chance of a repeat among 2^32 frames is
    /// about 2^-33, RFC 8439 §4).
    public func seal(_ datagram: [UInt8], subject: String, nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == ChaChaPoly.nonceBytes, "a relay nonce is 12 bytes")
        return [Self.version] + nonce
            + ChaChaPoly.seal(datagram, key: keys[0], nonce: nonce, aad: Self.aad(subject: subject))
    }

    /// The datagram inside a frame received on `subject`, or nil when it is not a frame of this
    /// version sealed under one of the keys in force for that subject.
    public func open(_ frame: [UInt8], subject: String) -> [UInt8]? {
        guard frame.count > Self.overheadBytes, frame[0] == Self.version else { return nil }
        let nonce = Array(frame[1...ChaChaPoly.nonceBytes])
        let sealed = Array(frame[(1 + ChaChaPoly.nonceBytes)...])
        let aad = Self.aad(subject: subject)
        for key in keys {
            if let datagram = ChaChaPoly.open(sealed, key: key, nonce: nonce, aad: aad) { return datagram }
        }
        return nil
    }

    private static func aad(subject: String) -> [UInt8] { [version] + Array(subject.utf8) }
}

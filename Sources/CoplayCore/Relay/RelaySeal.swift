/// How datagrams travel through a relay (`--relay`, a NATS cluster) without its operator reading
/// them: each is sealed with ChaCha20-Poly1305 (RFC 8439) under a key derived from the group
/// key, padded to one of a few sizes, and published on subjects derived from the group key and
/// the session's name, which nobody without the key can guess, subscribe to or follow.
///
/// A frame on the relay: version (1 byte, 2), nonce (12 random bytes), the plaintext encrypted,
/// the 16-byte tag. The plaintext is the datagram's length (2 bytes, big-endian), the datagram,
/// and zeros up to the next of `paddedSizes`, so that a frame's size says little of what it
/// carries (a heartbeat, a probe and a pause are one size). The additional data is the version
/// byte and the subject the frame is published on, so a frame moved to another subject does not
/// open. The datagram inside is the one the LAN carries, tag and all, so everything the gate
/// checks holds on the relay too.
///
/// Subjects: `coplay.<32 hex digits>.all` carries what goes to the whole group (one publish,
/// every subscriber gets it); `coplay.<…>.p.<24 hex digits>` what goes to one peer (clock probes,
/// replies, repairs), the digits an HMAC of the peer's id under a key derived from the group key
/// and the session, so that an observer cannot tell whose subject it is nor follow an id kept
/// (`--id`) from one session to the next. The 32 hex digits are HKDF-SHA256 of the key with the
/// session's name.
public struct RelaySeal: Sendable {
    public static let version: UInt8 = 2
    /// The bytes a frame adds to its datagram before padding: version, nonce, length and tag.
    public static let overheadBytes = 1 + ChaChaPoly.nonceBytes + 2 + ChaChaPoly.tagBytes
    /// The plaintext sizes (length, datagram, zeros) a frame is padded to: the smallest that
    /// holds it. Announcements, probes and most commands fit the first two; the last holds a
    /// datagram at its bound (1200 bytes).
    public static let paddedSizes = [128, 256, 512, 1202]

    /// The sealing key (the current group key's) first, then the older key's, which still opens.
    private let keys: [[UInt8]]
    /// Each key's subject prefix (`coplay.<hex>`), in the same order: publishing uses the first;
    /// an agent subscribes to all of them (a rotation in progress).
    public let prefixes: [String]
    /// Each key's key for naming peers' subjects, in the same order.
    private let peerNames: [HMAC]

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
        peerNames = keys.map {
            HMAC(
                key: HKDF.derive(
                    ikm: $0, salt: salt, info: Array("coplay relay v2 peer ".utf8) + Array(sessionName.utf8),
                    length: 32))
        }
    }

    /// The subject every agent of the group subscribes to, under the current key.
    public var groupSubject: String { prefixes[0] + ".all" }

    /// The subject one peer subscribes to for what is sent to it alone, under the current key.
    public func peerSubject(_ peer: PeerID) -> String {
        Self.peerSubject(peer, prefix: prefixes[0], names: peerNames[0])
    }

    /// The subject of the stage's membership (announcements, readiness, leaves), under the
    /// current key: stage members subscribe to it, viewers do not (`AudienceSettings`).
    public var stageSubject: String { prefixes[0] + ".stage" }

    /// The subject of viewers' hellos, under the current key: the stage's speaker alone subscribes
    /// to it (`Audience.speaker`), for it alone answers them. On the stage's subject every viewer's
    /// join was opened by every stage member: among 10,000 simulated, 960,000 copies of which 31
    /// in 32 were dropped unread, and the cluster's servers fell most of a second behind.
    public var speakerSubject: String { prefixes[0] + ".speaker" }

    /// What this agent subscribes to, under each key in force: the group's subject and its own,
    /// on the stage the stage's, and for the speaker the viewers' hellos.
    public func subscriptions(own: PeerID, onStage: Bool = true, speaks: Bool = false) -> [String] {
        zip(prefixes, peerNames).flatMap { (prefix, names) -> [String] in
            var subjects = [prefix + ".all", Self.peerSubject(own, prefix: prefix, names: names)]
            if onStage { subjects.append(prefix + ".stage") }
            if speaks { subjects.append(prefix + ".speaker") }
            return subjects
        }
    }

    private static func peerSubject(_ peer: PeerID, prefix: String, names: HMAC) -> String {
        let id = (0..<8).map { UInt8(truncatingIfNeeded: peer.rawValue >> UInt64(56 - 8 * $0)) }
        return prefix + ".p." + Hex.encode(Array(names.authenticate(id).prefix(12)))
    }

    /// `datagram` sealed for `subject`, padded, with a nonce of 12 bytes that must never repeat
    /// under one key (random, from the system's generator: the chance of a repeat among 2^32
    /// frames is about 2^-33, RFC 8439 §4).
    public func seal(_ datagram: [UInt8], subject: String, nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == ChaChaPoly.nonceBytes, "a relay nonce is 12 bytes")
        precondition(datagram.count <= Int(UInt16.max), "a datagram of \(datagram.count) bytes")
        var plaintext = [UInt8(datagram.count >> 8), UInt8(datagram.count & 0xFF)] + datagram
        let size = Self.paddedSizes.first { $0 >= plaintext.count } ?? plaintext.count
        plaintext += [UInt8](repeating: 0, count: size - plaintext.count)
        return [Self.version] + nonce
            + ChaChaPoly.seal(plaintext, key: keys[0], nonce: nonce, aad: Self.aad(subject: subject))
    }

    /// The datagram inside a frame received on `subject`, or nil when it is not a frame of this
    /// version sealed under one of the keys in force for that subject, or its length is wrong.
    public func open(_ frame: [UInt8], subject: String) -> [UInt8]? {
        guard frame.count >= Self.overheadBytes, frame[0] == Self.version else { return nil }
        let nonce = Array(frame[1...ChaChaPoly.nonceBytes])
        let sealed = Array(frame[(1 + ChaChaPoly.nonceBytes)...])
        let aad = Self.aad(subject: subject)
        for key in keys {
            guard let plaintext = ChaChaPoly.open(sealed, key: key, nonce: nonce, aad: aad) else { continue }
            guard plaintext.count >= 2 else { return nil }
            let length = Int(plaintext[0]) << 8 | Int(plaintext[1])
            guard length <= plaintext.count - 2 else { return nil }
            return Array(plaintext[2..<(2 + length)])
        }
        return nil
    }

    private static func aad(subject: String) -> [UInt8] { [version] + Array(subject.utf8) }
}

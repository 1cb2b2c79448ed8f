/// Everything about the relay (`--relay`, a NATS cluster) that is not bytes on a socket: which
/// subjects an agent subscribes to, which subject each datagram goes to, sealing it under a fresh
/// nonce, opening what arrives, the sender it claims, and counting what does not open. The shell
/// only connects, subscribes to `subscriptions`, publishes what `PlayerLoop.Step.publish` says and
/// hands every message back to `Instance.onRelayFrame`.
public struct RelayCarriage: Sendable {
    /// The longest frame: the largest padded plaintext, sealed.
    static let frameBytesMax = RelaySeal.overheadBytes - 2 + RelaySeal.paddedSizes[RelaySeal.paddedSizes.count - 1]

    /// How frames are sealed and named, under the keys in force.
    private(set) var seal: RelaySeal
    private let sessionName: String
    private var nonces: NonceSource

    /// `keys` as the key file holds them (a relay carries only a keyed group); `entropy`, 32
    /// bytes from the system's generator, keys the nonces (`NonceSource`).
    init(keys: [[UInt8]], sessionName: String, entropy: [UInt8]) {
        seal = RelaySeal(keys: keys, sessionName: sessionName)
        self.sessionName = sessionName
        nonces = NonceSource(entropy: entropy)
    }

    /// The key file was read again: seal under its current key, open under all of them.
    mutating func rekey(_ keys: [[UInt8]]) { seal = RelaySeal(keys: keys, sessionName: sessionName) }

    /// The group's subject and this agent's own, under each key in force, the stage's for a
    /// stage member, and the viewers' hellos for the speaker.
    func subscriptions(own: PeerID, onStage: Bool, speaks: Bool) -> [String] {
        seal.subscriptions(own: own, onStage: onStage, speaks: speaks)
    }

    /// The frame for a datagram on the wire (`to` nil: the whole group), and its subject. A
    /// datagram to a relay endpoint goes only to that peer's subject; one to the group goes (by
    /// the shell, on the LAN too, and here) to the stage's subject when only the stage needs it
    /// (`MessageType.isStageOnly`: membership, readiness), else to the group's, which the
    /// audience hears too; `Endpoint.relayEveryone` and `relayStage` name those two subjects, and
    /// `relaySpeaker` the speaker's (a viewer's hello).
    mutating func frame(_ datagram: [UInt8], to destination: Endpoint?, type: MessageType)
        -> (subject: String, frame: [UInt8])?
    {
        let subject: String
        switch destination {
        case nil: subject = type.isStageOnly ? seal.stageSubject : seal.groupSubject
        case Endpoint.relayEveryone?: subject = seal.groupSubject
        case Endpoint.relayStage?: subject = seal.stageSubject
        case Endpoint.relaySpeaker?: subject = seal.speakerSubject
        case let destination?:
            guard let peer = destination.relayPeer else { return nil }
            subject = seal.peerSubject(peer)
        }
        return (subject, seal.seal(datagram, subject: subject, nonce: nonces.next()))
    }

    /// What a frame received on `subject` carries: the datagram, the peer its header claims (the
    /// gate checks the claim), and whether it came on a group subject; nil when it does not open
    /// under a key in force, or holds no datagram header.
    func open(_ frame: [UInt8], subject: String) -> (datagram: [UInt8], sender: PeerID, viaGroup: Bool)? {
        // No frame is longer than the largest padded datagram sealed: a longer one is not opened
        // (whatever the shell's own bound on the server's messages).
        guard frame.count <= Self.frameBytesMax, let datagram = seal.open(frame, subject: subject),
            let sender = WireFormat.claimedSender(of: datagram[...]), sender != 0
        else { return nil }
        return (datagram, PeerID(sender), subject.hasSuffix(".all"))
    }
}

/// The 12-byte nonces of relay frames, which must never repeat under one key: ChaCha20's key
/// stream (RFC 8439 §2.3) under 32 bytes of the system's randomness, one block per nonce, block
/// `n` at nonce `n >> 32` and counter `n & 0xffff_ffff`. Distinct agents and restarts draw
/// distinct keys, so their streams are independent: a repeat among 2^32 frames has a chance of
/// about 2^-33, as for random nonces, at the cost of one block per frame and with no call into
/// the system per frame.
struct NonceSource: Sendable {
    private let key: [UInt8]
    private var index: UInt64 = 0

    init(entropy: [UInt8]) {
        precondition(entropy.count == ChaChaPoly.keyBytes, "a nonce source needs 32 bytes of entropy")
        key = entropy
    }

    mutating func next() -> [UInt8] {
        let high = index >> 32
        let nonce = [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * $0)) }
        let block = ChaCha20.block(key: key, nonce: nonce, counter: UInt32(truncatingIfNeeded: index))
        index &+= 1
        return Array(block.prefix(ChaChaPoly.nonceBytes))
    }
}

// MARK: The relay's inputs and outputs

extension Instance {
    /// The subjects a shell with a relay subscribes to (empty without one): the group's and this
    /// agent's own, under each key in force, the stage's on the stage, and the viewers' hellos
    /// while it speaks for the stage. They change with the keys (`onKeysChanged`), and when a
    /// viewer takes a seat or a stage member begins or stops speaking (`Directive.resubscribe`).
    public var relaySubscriptions: [String] {
        relay?.subscriptions(own: identity.id, onStage: !audience.isViewer, speaks: audience.hearsHellos) ?? []
    }

    /// One message from the relay, received on `subject`: opened, and handed to the gate as a
    /// datagram from the relay endpoint of the peer its header claims. A frame that does not
    /// open is counted (`Counters.relayFramesRefused`) and said the first few times.
    public mutating func onRelayFrame(_ frame: [UInt8], subject: String, receivedAt: Timestamp, now: Timestamp)
        -> [Directive]
    {
        guard let relay else { return [] }
        guard let (datagram, sender, viaGroup) = relay.open(frame, subject: subject) else {
            counters.relayFramesRefused += 1
            let count = counters.relayFramesRefused
            guard
                count <= Int64(settings.dropDiagnosticsFirst)
                    || count % Int64(max(1, settings.dropDiagnosticEvery)) == 0
            else {
                return []
            }
            return [
                .diagnose(
                    "relay: a frame on the group's subject did not open under the group key (\(count) so far): another key, or tampering"
                )
            ]
        }
        return onDatagram(
            datagram, from: .relay(sender), receivedAt: receivedAt, now: now, viaGroup: viaGroup, sealed: true)
    }

    /// A datagram on the wire as a relay frame, and its subject (`PlayerLoop`): nil without a
    /// relay, or for a destination the relay does not reach (a LAN endpoint).
    mutating func relayFrame(_ bytes: [UInt8], to destination: Endpoint?, type: MessageType)
        -> (subject: String, frame: [UInt8])?
    {
        relay?.frame(bytes, to: destination, type: type)
    }
}

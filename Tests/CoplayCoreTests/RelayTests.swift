import Testing

@testable import CoplayCore

/// What the core knows of the relay: how frames are sealed and named (`RelaySeal`), and that a
/// peer heard on the LAN stays reached there though its datagrams also come through the relay.
@Suite struct RelayTests {
    private let key = (0..<32).map { UInt8($0) }
    private let nonce = [UInt8](repeating: 7, count: 12)

    @Test func aFrameOpensOnlyUnderItsKeyAndSubject() {
        let seal = RelaySeal(keys: [key], sessionName: "movie night")
        let datagram = Array("a datagram, tag and all".utf8)
        let frame = seal.seal(datagram, subject: seal.groupSubject, nonce: nonce)
        #expect(frame.count == 1 + 12 + 128 + 16, "padded to the first size")
        #expect(frame[0] == RelaySeal.version)
        #expect(!frame.windowContains(Array("datagram".utf8)), "nothing readable on the relay")
        #expect(seal.open(frame, subject: seal.groupSubject) == datagram)
        let peer = PeerID(0xC0FFEE)
        #expect(seal.open(frame, subject: seal.peerSubject(peer)) == nil, "moved to another subject")
        var otherKey = key
        otherKey[0] ^= 1
        #expect(RelaySeal(keys: [otherKey], sessionName: "movie night").open(frame, subject: seal.groupSubject) == nil)
        var tampered = frame
        tampered[tampered.count / 2] ^= 0x20
        #expect(seal.open(tampered, subject: seal.groupSubject) == nil)
        var version = frame
        version[0] = 1  // the unpadded version, or any other
        #expect(seal.open(version, subject: seal.groupSubject) == nil)
        #expect(seal.open(Array(frame.prefix(RelaySeal.overheadBytes)), subject: seal.groupSubject) == nil)
    }

    /// Someone on the same NATS server without the key cannot guess the subjects: they depend on
    /// the key and the session's name, and say neither.
    @Test func subjectsComeFromTheKeyAndTheSession() {
        let seal = RelaySeal(keys: [key], sessionName: "movie night")
        #expect(seal.groupSubject.hasPrefix("coplay.") && seal.groupSubject.hasSuffix(".all"))
        #expect(seal.groupSubject.count == "coplay.".count + 32 + ".all".count)
        #expect(!seal.groupSubject.contains("movie"))
        var otherKey = key
        otherKey[31] ^= 1
        #expect(RelaySeal(keys: [otherKey], sessionName: "movie night").groupSubject != seal.groupSubject)
        #expect(RelaySeal(keys: [key], sessionName: "movie night 2").groupSubject != seal.groupSubject)
        let peer = PeerID(0xABC)
        #expect(seal.peerSubject(peer).hasPrefix(seal.prefixes[0] + ".p."))
        #expect(seal.peerSubject(peer).count == seal.prefixes[0].count + ".p.".count + 24)
        #expect(!seal.peerSubject(peer).contains("abc"), "the id is not in the subject")
        #expect(seal.peerSubject(peer) != seal.peerSubject(PeerID(0xABD)))
        #expect(
            RelaySeal(keys: [key], sessionName: "movie night 2").peerSubject(peer) != seal.peerSubject(peer),
            "an id kept from one session to the next is not followable")
        #expect(seal.subscriptions(own: peer) == [seal.groupSubject, seal.peerSubject(peer), seal.stageSubject])
        #expect(seal.subscriptions(own: peer, onStage: false) == [seal.groupSubject, seal.peerSubject(peer)])
        #expect(
            seal.subscriptions(own: peer, speaks: true)
                == [seal.groupSubject, seal.peerSubject(peer), seal.stageSubject, seal.speakerSubject])
    }

    /// During a key rotation an agent with the new key and the old one below it seals with the
    /// new, subscribes under both, and opens what agents still on the old key send.
    /// Frames come in a few sizes, so that an observer cannot read message types from them.
    @Test func framesArePaddedToAFewSizes_andOpenToTheirDatagram() {
        let seal = RelaySeal(keys: [key], sessionName: "s")
        var sizes: Set<Int> = []
        for length in [0, 1, 60, 126, 127, 200, 254, 255, 400, 1000, 1200] {
            let datagram = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
            let frame = seal.seal(datagram, subject: seal.groupSubject, nonce: nonce)
            sizes.insert(frame.count)
            #expect(seal.open(frame, subject: seal.groupSubject) == datagram, "\(length) bytes")
        }
        #expect(sizes == Set(RelaySeal.paddedSizes.map { $0 + 1 + 12 + 16 }))
    }

    @Test func aRotationOpensTheOldKeysFrames() {
        var newKey = key
        newKey[5] ^= 0xFF
        let old = RelaySeal(keys: [key], sessionName: "s")
        let rotating = RelaySeal(keys: [newKey, key], sessionName: "s")
        #expect(rotating.subscriptions(own: PeerID(1)).contains(old.groupSubject))
        let frame = old.seal([1, 2, 3], subject: old.groupSubject, nonce: nonce)
        #expect(rotating.open(frame, subject: old.groupSubject) == [1, 2, 3])
        #expect(rotating.groupSubject != old.groupSubject)
    }

    @Test func relayEndpointsNameTheirPeerInADiscardOnlyBlock() {
        let endpoint = Endpoint.relay(PeerID(0x1234_5678_9ABC_DEF0))
        #expect(endpoint.isRelay)
        #expect(endpoint.relayPeer == PeerID(0x1234_5678_9ABC_DEF0))
        #expect(endpoint.description == "relay/123456789abcdef0")
        #expect(endpoint.address.bytes.prefix(8) == [1, 0, 0, 0, 0, 0, 0, 0])
        #expect(!Endpoint(address: 0x7F00_0001, port: 4).isRelay)
        #expect(Endpoint(address: IPAddress.parse("100::1")!, port: 4).isRelay)
        #expect(!Endpoint(address: IPAddress.parse("100:0:0:1::1")!, port: 4).isRelay)
    }

    /// A peer heard on the LAN stays served by the LAN while its announcements also arrive
    /// through the relay; when the LAN has been silent for `relayNetworkPreferredFor`, the relay
    /// takes over; when the LAN is heard again, it takes back.
    @Test func aPeerHeardOnTheLANStaysServedByTheLAN() {
        let settings = Settings()
        var membership = Membership(settings: settings)
        var random = SplitMix64(seed: 1)
        membership.start(now: at(0).monotonic, random: &random)
        let carol = Member(id: PeerID(0xCA401), incarnation: Incarnation(3))
        let lan = Endpoint(address: 0x7F00_0003, port: 50_003)
        let relay = Endpoint.relay(carol.id)
        let announcement = Announcement(unicastPort: lan.port, name: "carol")
        func announce(from source: Endpoint, at millis: Double) {
            _ = membership.onAnnouncement(
                announcement, isHello: false, from: carol, source: source, heardAt: at(millis).monotonic)
        }
        announce(from: lan, at: 100)
        announce(from: relay, at: 120)
        #expect(membership.peers[carol.id]?.endpoint == lan)
        announce(from: relay, at: 100 + settings.relay.networkPreferredFor.milliseconds - 1)
        #expect(membership.peers[carol.id]?.endpoint == lan)
        announce(from: relay, at: 100 + settings.relay.networkPreferredFor.milliseconds + 1)
        #expect(membership.peers[carol.id]?.endpoint == Endpoint(address: relay.address, port: lan.port))
        announce(from: lan, at: 3000)
        #expect(membership.peers[carol.id]?.endpoint == lan)
        // The LAN's copy arriving second (a replay to the gate) still counts as heard on the LAN.
        membership.heardOnNetwork(carol, at: lan, heardAt: at(3100).monotonic)
        announce(from: relay, at: 3000 + settings.relay.networkPreferredFor.milliseconds + 50)
        #expect(membership.peers[carol.id]?.endpoint == lan)

        // A peer heard only through the relay is reached there from the start.
        let dave = Member(id: PeerID(0xDA7E), incarnation: Incarnation(3))
        _ = membership.onAnnouncement(
            announcement, isHello: true, from: dave, source: .relay(dave.id), heardAt: at(200).monotonic)
        #expect(membership.peers[dave.id]?.endpoint.relayPeer == dave.id)
    }
}

@Suite struct PathRestoredTests {
    /// When the relay reconnects the next heartbeat goes at once, not at its time: peers that
    /// heard nothing meanwhile hear the agent before they give it up.
    @Test func aRestoredPathBringsTheHeartbeatForward() {
        var membership = Membership(settings: Settings())
        var random = SplitMix64(seed: 3)
        membership.start(now: at(0).monotonic, random: &random)
        _ = membership.tick(now: at(0).monotonic, random: &random)
        _ = membership.tick(now: at(400).monotonic, random: &random)  // the hellos of the burst
        let due = membership.nextWake!
        #expect(due > at(401).monotonic)
        #expect(!membership.tick(now: at(401).monotonic, random: &random).contains(.announce(isHello: false)))
        membership.heartbeatNow(at(401).monotonic)
        #expect(membership.tick(now: at(401).monotonic, random: &random).contains(.announce(isHello: false)))
    }
}

extension Array where Element == UInt8 {
    fileprivate func windowContains(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}

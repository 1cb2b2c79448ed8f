import Testing

@testable import CoplayCore

/// Unicast reach (`--peer`): seeds get a copy of every group datagram until their member is
/// heard over multicast; members learned only by unicast are told of each other in peer lists;
/// a stranger's list is refused, and what a list can point traffic at is bounded and expires.
@Suite struct ReachTests {
    private let seed = Endpoint(address: 0x0A4D_0001, port: 47_800)
    private let bobAtSeed = Endpoint(address: 0x0A4D_0001, port: 47_800)

    private func aliceWithSeed() -> Instance {
        Instance(
            identity: LocalIdentity(id: aliceID, name: "alice", sessionName: "test", unicastPort: 50_001), seed: 7,
            now: at(0), seeds: [seed])
    }

    /// Bob's heartbeat, by unicast from the seed's address (or over the group).
    private func bobHeard(_ alice: inout Instance, at millis: Double, viaGroup: Bool) -> [Directive] {
        alice.onDatagram(
            bytes(.heartbeat(Announcement(unicastPort: seed.port, name: "bob")), from: bob, sequence: UInt32(millis)),
            from: Endpoint(address: seed.address, port: 40_000), receivedAt: at(millis), now: at(millis),
            viaGroup: viaGroup)
    }

    @Test func withoutSeeds_groupDatagramsGoOnlyToTheGroup() {
        var alice = makeInstance()
        let out = alice.start(now: at(0))
        #expect(!out.multicasts.isEmpty && out.unicasts.isEmpty)
    }

    @Test func aSeedGetsEveryGroupDatagram_untilItsMemberIsHeardOverMulticast() {
        var alice = aliceWithSeed()
        let hello = alice.start(now: at(0))
        #expect(hello.multicasts.count == 1)
        #expect(hello.unicasts.map(\.1) == [seed], "the hello also goes to the seed")
        #expect(hello.unicasts.first?.0 == hello.multicasts.first, "the same datagram, one sequence number")

        _ = bobHeard(&alice, at: 10, viaGroup: false)
        #expect(alice.peers[bobID] != nil)
        let pause = alice.onConsoleLine("share u id=film", now: at(20))
        #expect(pause.unicasts.filter { $0.1 == bobAtSeed }.count == pause.multicasts.count, "bob only by unicast")

        _ = bobHeard(&alice, at: 30, viaGroup: true)
        let after = alice.onConsoleLine("pause", now: at(40))
        #expect(!after.multicasts.isEmpty && after.unicasts.isEmpty, "bob is reached by multicast: no copies")
        // Multicast from bob stops: after the window, unicast copies resume.
        let later = alice.onConsoleLine("play-now", now: at(40 + 2_100))
        #expect(later.unicasts.contains { $0.1 == bobAtSeed })
    }

    @Test func membersLearnedByUnicast_areToldOfEachOther() {
        // Alice is the seed of bob and carol, who cannot hear each other's multicast.
        var alice = makeInstance()
        _ = alice.start(now: at(0))
        let carol = Member(id: carolID, incarnation: Incarnation(100))
        let carolEndpoint = Endpoint(address: 0x0A4D_0003, port: 51_000)
        _ = alice.onDatagram(
            bytes(.hello(Announcement(unicastPort: bobEndpoint.port, name: "bob")), from: bob), from: bobEndpoint,
            receivedAt: at(5), now: at(5), viaGroup: false)
        _ = alice.onDatagram(
            bytes(.hello(Announcement(unicastPort: carolEndpoint.port, name: "carol")), from: carol),
            from: carolEndpoint, receivedAt: at(6), now: at(6), viaGroup: false)
        let out = alice.onTick(now: at(200))
        let lists = out.unicasts.compactMap { datagram, to -> (Endpoint, [PeerEntry])? in
            if case .peerList(let entries) = datagram.payload { (to, entries) } else { nil }
        }
        #expect(lists.count == 2)
        #expect(lists.first { $0.0 == bobEndpoint }?.1 == [PeerEntry(member: carol, endpoint: carolEndpoint)])
        #expect(lists.first { $0.0 == carolEndpoint }?.1 == [PeerEntry(member: bob, endpoint: bobEndpoint)])
    }

    @Test func aPeerListNamesEndpointsForAWhile_onlyFromAMember_andBounded() {
        var alice = makeInstance()
        _ = alice.start(now: at(0))
        let strangers = (1...80).map {
            PeerEntry(
                member: Member(id: PeerID(UInt64(0x5000 + $0)), incarnation: Incarnation(1)),
                endpoint: Endpoint(address: 0x0A4D_0100 + UInt32($0), port: 47_800))
        }
        // From a stranger: refused.
        let stranger = Member(id: PeerID(0xE71), incarnation: Incarnation(1))
        _ = alice.onDatagram(
            bytes(.peerList(Array(strangers.prefix(32))), from: stranger), from: bobEndpoint, receivedAt: at(1),
            now: at(1), viaGroup: true)
        #expect(alice.counters.drops[.unknownSender] == 1)
        #expect(alice.onConsoleLine("status", now: at(2)).unicasts.isEmpty)

        // From bob, a member: at most `gossipedEndpointsMax` endpoints, for a limited time.
        _ = alice.onDatagram(
            bytes(bobHello, from: bob), from: bobEndpoint, receivedAt: at(3), now: at(3), viaGroup: true)
        for (index, chunk) in [strangers[0..<32], strangers[32..<64], strangers[64...]].enumerated() {
            _ = alice.onDatagram(
                bytes(.peerList(Array(chunk)), from: bob, sequence: UInt32(10 + index)), from: bobEndpoint,
                receivedAt: at(4), now: at(4), viaGroup: false)
        }
        let out = alice.onConsoleLine("share u id=film", now: at(5))
        let named = Set(out.unicasts.map(\.1)).subtracting([bobEndpoint])
        #expect(named.count == Settings().gossipedEndpointsMax)
        let expired = alice.onConsoleLine("pause", now: at(5 + 10_001))
        #expect(
            Set(expired.unicasts.map(\.1)).isSubset(of: [bobEndpoint]), "named endpoints that never answered expire")
    }

    @Test func peerListEntriesThatAreNotUnicastEndpoints_areMalformed() {
        let entry = PeerEntry(member: bob, endpoint: Endpoint(address: 0xEFFF_4D01, port: 47_700))
        #expect(throws: DecodeError.self) { try WireFormat.decode(bytes(.peerList([entry]), from: bob)) }
        let many = Array(repeating: PeerEntry(member: bob, endpoint: bobEndpoint), count: 32)
        var encoded = bytes(.peerList(many), from: bob)
        encoded[34] = 33  // the count past the limit
        #expect(throws: DecodeError.self) { try WireFormat.decode(encoded) }
    }
}

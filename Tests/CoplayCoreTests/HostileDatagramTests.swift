import Testing

@testable import CoplayCore

/// Each datagram that once crashed or hung an agent, sent to an agent that knows the sender.
@Suite struct HostileDatagramTests {
    private let bobHelloPayload = Payload.hello(Announcement(unicastPort: bobEndpoint.port, name: "bob"))

    private func aliceKnowingBobOnAnItem() -> Instance {
        var alice = makeInstance()
        _ = alice.start(now: at(0))
        _ = alice.onDatagram(
            bytes(bobHelloPayload, from: bob), from: bobEndpoint, receivedAt: at(1), now: at(1), viaGroup: true)
        _ = alice.onCommand(
            .share(Activity(url: "u", itemID: "movie"), durationSeconds: 600, bufferSeconds: 0), now: at(2))
        return alice
    }

    private func command(_ operation: Operation, lamport: UInt64 = 1, dependencies: VectorClock = VectorClock())
        -> Payload
    {
        .command(
            CommandEnvelope(
                dot: Dot(origin: bob, counter: 1), lamport: lamport, dependencies: dependencies,
                command: Command(item: "movie", operation: operation)), isRepair: false)
    }

    @Test func extremeNumbers_areDroppedAsMalformed_andTheAgentGoesOn() {
        var alice = aliceKnowingBobOnAnItem()
        let hostile: [Payload] = [
            command(.playNow(rate: .leastNonzeroMagnitude, position: 1, at: at(3).wall)),
            command(.play(rate: 1, position: 1, requestedAt: WallInstant(unixNanos: .min))),
            command(.pause(position: 1, at: at(3).wall), lamport: .max),
            .probeReply(
                ClockProbeReply(
                    token: 1, originWall: WallInstant(unixNanos: .max), receiveWall: WallInstant(unixNanos: .min),
                    transmitWall: WallInstant(unixNanos: .min))),
        ]
        for payload in hostile {
            _ = alice.onDatagram(
                bytes(payload, from: bob), from: bobEndpoint, receivedAt: at(3), now: at(3), viaGroup: true)
        }
        #expect(alice.counters.drops[.malformedPayload] == Int64(hostile.count))
        _ = alice.onTick(now: at(500))
        #expect(alice.state.isJoined && alice.peers[bobID] != nil, "still running, still knows bob")
    }

    @Test func aHugeNackRange_isAnsweredFromWhatIsStored_inBoundedWork() {
        var alice = aliceKnowingBobOnAnItem()
        for _ in 0..<5 { _ = alice.onCommand(.pause, now: at(3)) }
        let member = alice.member
        let out = alice.onDatagram(
            bytes(.nack([MissingRange(origin: member, from: 1, to: .max)]), from: bob), from: bobEndpoint,
            receivedAt: at(4), now: at(4), viaGroup: true)
        #expect(out.unicasts.count == 6, "the share and 5 pauses: what exists, and no more work than that")
        #expect(out.unicasts.allSatisfy { $0.1 == bobEndpoint }, "to bob's announced endpoint")
        #expect(alice.log.stored(MissingRange(origin: member, from: .max - 1, to: .max), limit: 64).isEmpty)
    }

    @Test func aDependencyGapNear2To32_isDroppedNotPendingForever() {
        var log = CausalLog(pendingMax: 16, storeMax: 64)
        let stranger = Member(id: PeerID(0x5), incarnation: Incarnation(1))
        let gapped = CommandEnvelope(
            dot: Dot(origin: bob, counter: 1), lamport: 1, dependencies: VectorClock([stranger: .max - 1]),
            command: Command(item: "movie", operation: .pause(position: 1, at: at(3).wall)))
        let receipt = log.receive(gapped)
        #expect(receipt.wasUnrepairable && log.pendingCount == 0 && receipt.missing.isEmpty, "nothing to ask for")
        let farAhead = CommandEnvelope(
            dot: Dot(origin: bob, counter: .max), lamport: 1, dependencies: VectorClock(),
            command: Command(item: "movie", operation: .pause(position: 1, at: at(3).wall)))
        #expect(log.receive(farAhead).wasUnrepairable)
        let repairable = CommandEnvelope(
            dot: Dot(origin: bob, counter: 60), lamport: 1, dependencies: VectorClock(),
            command: Command(item: "movie", operation: .pause(position: 1, at: at(3).wall)))
        #expect(!log.receive(repairable).wasUnrepairable && log.pendingCount == 1, "a gap the store covers waits")
    }

    @Test func aNackFromAStranger_getsNoRepair_soSpoofedSourcesCannotUseUsAsAReflector() {
        var alice = aliceKnowingBobOnAnItem()
        for _ in 0..<5 { _ = alice.onCommand(.pause, now: at(3)) }
        let stranger = Member(id: PeerID(0xBAD), incarnation: Incarnation(1))
        let victim = Endpoint(address: 0x0A00_0063, port: 53)
        let out = alice.onDatagram(
            bytes(.nack([MissingRange(origin: alice.member, from: 1, to: 6)]), from: stranger), from: victim,
            receivedAt: at(4), now: at(4), viaGroup: true)
        #expect(out.unicasts.isEmpty)
        #expect(alice.counters.drops[.unknownSender] == 1)
    }

    @Test func consoleRatesBelowTheMinimum_areClearErrors() {
        var alice = aliceKnowingBobOnAnItem()
        for line in ["play-now 0.000000001", "play 5e-324", "rate 0.001"] {
            let out = alice.onConsoleLine(line, now: at(3))
            #expect(out.events.count == 1)
            guard case .commandError(let error)? = out.events.first else {
                Issue.record("\(line) was accepted")
                continue
            }
            #expect(error.message.contains("0.01"), "\(error.message)")
        }
        #expect(
            alice.onConsoleLine("rate 0", now: at(3)).events.allSatisfy {
                if case .commandError = $0 { false } else { true }
            })
    }
}

@Suite struct FakeOriginTests {
    /// Bob (a member) relays commands of 60 invented origins; alice delivers them, yet can still
    /// issue commands: they depend only on origins alice saw as members.
    @Test func inventedOrigins_cannotCrowdAMembersCommandsOutOfADatagram() throws {
        var alice = try aliceKnowingBobsClock()
        var out: [Directive] = []
        _ = alice.onCommand(
            .share(Activity(url: "u", itemID: "movie"), durationSeconds: nil, bufferSeconds: 0), now: at(11))
        for index in 0..<60 {
            let invented = Member(id: PeerID(UInt64(0xF00D_0000 + index)), incarnation: Incarnation(1))
            let envelope = CommandEnvelope(
                dot: Dot(origin: invented, counter: 1), lamport: UInt64(10 + index), dependencies: VectorClock(),
                command: Command(item: "other", operation: .pause(position: 1, at: at(12).wall)))
            _ = alice.onDatagram(
                bytes(.command(envelope, isRepair: true), from: bob, sequence: UInt32(3 + index)), from: bobEndpoint,
                receivedAt: at(12), now: at(12), viaGroup: true)
        }
        #expect(alice.log.delivered.count >= 60, "the invented origins' commands were delivered")
        out = alice.onCommand(.pause, now: at(13))
        #expect(!out.events.contains { if case .commandError = $0 { true } else { false } }, "alice can still issue")
        let pause = try #require(
            out.multicasts.compactMap { if case .command(let envelope, _) = $0.payload { envelope } else { nil } }.first
        )
        #expect(pause.dependencies.count == 0, "it depends on none of the invented origins")
    }
}

/// Snapshots (state transfer) from the hostile LAN: a forged or inconsistent snapshot is refused
/// and counted, and adopts nothing; requests cannot make an agent a reflector or a firehose.
@Suite struct HostileStateTests {

    private func part(
        frontier: VectorClock, winners: [CommandEnvelope], index: UInt8 = 0, count: UInt8 = 1, lamport: UInt64 = 50
    ) -> Payload {
        .state(
            StatePart(
                snapshot: 0xABC, index: index, count: count, lamport: lamport, frontier: frontier, winners: winners))
    }

    private func pause(_ counter: UInt32, lamport: UInt64 = 40) -> CommandEnvelope {
        CommandEnvelope(
            dot: Dot(origin: bob, counter: counter), lamport: lamport, dependencies: VectorClock(),
            command: Command(item: "movie", operation: .pause(position: 12, at: at(9).wall)))
    }

    @Test func aTrueSnapshot_isAdopted() throws {
        var alice = try aliceKnowingBobsClock()
        let out = alice.onDatagram(
            bytes(part(frontier: VectorClock([bob: 100]), winners: [pause(100)]), from: bob, sequence: 3),
            from: bobEndpoint, receivedAt: at(11), now: at(11), viaGroup: true)
        #expect(alice.log.count(of: bob) == 100)
        #expect(alice.items["movie"]?.winner.dot == Dot(origin: bob, counter: 100))
        #expect(
            out.events.contains {
                if case .stateAdopted(let report) = $0 { report.commandsCovered == 100 } else { false }
            })
    }

    @Test func forgedSnapshots_areRefused_andAdoptNothing() throws {
        var alice = try aliceKnowingBobsClock()
        let stranger = Member(id: PeerID(0xBAD), incarnation: Incarnation(1))
        let forgeries: [(Member, Payload, DropReason)] = [
            // An origin's count jumped to 2^32 - 1: every real command of bob would be skipped.
            (bob, part(frontier: VectorClock([bob: .max]), winners: []), .badState),
            // A winner the frontier does not cover.
            (bob, part(frontier: VectorClock([bob: 5]), winners: [pause(6)]), .badState),
            // From no member.
            (stranger, part(frontier: VectorClock([bob: 5]), winners: [pause(5)]), .unknownSender),
        ]
        for (index, (sender, payload, reason)) in forgeries.enumerated() {
            let before = alice.counters.drops[reason] ?? 0
            _ = alice.onDatagram(
                bytes(payload, from: sender, sequence: UInt32(10 + index)), from: bobEndpoint, receivedAt: at(11),
                now: at(11), viaGroup: true)
            #expect(alice.counters.drops[reason] == before + 1, "\(reason)")
        }
        // Two parts that disagree on how many there are.
        _ = alice.onDatagram(
            bytes(part(frontier: VectorClock([bob: 5]), winners: [], index: 0, count: 2), from: bob, sequence: 20),
            from: bobEndpoint, receivedAt: at(12), now: at(12), viaGroup: true)
        _ = alice.onDatagram(
            bytes(part(frontier: VectorClock(), winners: [], index: 1, count: 3), from: bob, sequence: 21),
            from: bobEndpoint, receivedAt: at(12), now: at(12), viaGroup: true)
        #expect(alice.counters.drops[.badState] == 3)
        #expect(alice.log.count(of: bob) == 0, "nothing adopted")
        #expect(alice.items.isEmpty)
        _ = alice.onTick(now: at(500))
        #expect(alice.state.isJoined && alice.peers[bobID] != nil, "still running, still knows bob")
    }

    @Test func stateRequests_areAnsweredOnlyToMembers_withinTheRepairBudget() throws {
        var alice = try aliceKnowingBobsClock()
        _ = alice.onCommand(
            .share(Activity(url: "u", itemID: "movie"), durationSeconds: nil, bufferSeconds: 0), now: at(11))
        let stranger = Member(id: PeerID(0xBAD), incarnation: Incarnation(1))
        let victim = Endpoint(address: 0x0A00_0063, port: 53)
        var out = alice.onDatagram(
            bytes(.stateRequest(StateRequest()), from: stranger), from: victim, receivedAt: at(12), now: at(12),
            viaGroup: true)
        #expect(out.unicasts.isEmpty)
        #expect(alice.counters.drops[.unknownSender] == 1)
        // A member asking 10,000 times in a second gets at most its repair budget's worth.
        var sent = 0
        for index in 0..<10_000 {
            out = alice.onDatagram(
                bytes(.stateRequest(StateRequest()), from: bob, sequence: UInt32(100 + index)), from: bobEndpoint,
                receivedAt: at(13 + Double(index) / 10), now: at(13 + Double(index) / 10), viaGroup: true)
            #expect(out.unicasts.allSatisfy { $0.1 == bobEndpoint })
            sent += out.unicasts.map { WireFormat.encode($0.0).count }.reduce(0, +)
        }
        #expect(sent > 0)
        #expect(sent <= 2 * Settings().repairBytesPerSecondPerPeer, "\(sent) bytes in one second")
    }
}

/// A group larger than a datagram's vector clock: commands still fit, and the digest goes round.
@Suite struct LargeGroupTests {
    @Test func withAHundredMembersWhoIssued_aCommandFits_andTheDigestCoversEveryOriginInTurn() throws {
        var alice = try aliceKnowingBobsClock()
        let members = (1...100).map { Member(id: PeerID(0xC000 + UInt64($0)), incarnation: Incarnation(1)) }
        for (index, member) in members.enumerated() {
            _ = alice.onDatagram(
                bytes(.heartbeat(Announcement(unicastPort: 40_000, name: "m\(index)")), from: member),
                from: Endpoint(address: 0x0A00_0100 + UInt32(index), port: 40_000), receivedAt: at(20), now: at(20),
                viaGroup: true)
        }
        #expect(alice.peers.count == 101)
        // Each member's first command, relayed by bob (whose clock alice knows).
        for (index, member) in members.enumerated() {
            let envelope = CommandEnvelope(
                dot: Dot(origin: member, counter: 1), lamport: UInt64(index + 1), dependencies: VectorClock(),
                command: Command(item: "other", operation: .pause(position: 1, at: at(21).wall)))
            _ = alice.onDatagram(
                bytes(.command(envelope, isRepair: true), from: bob, sequence: UInt32(10 + index)), from: bobEndpoint,
                receivedAt: at(21), now: at(21), viaGroup: true)
        }
        #expect(alice.log.delivered.count == 100)
        func issued(_ out: [Directive]) throws -> CommandEnvelope {
            #expect(!out.events.contains { if case .commandError = $0 { true } else { false } }, "alice can issue")
            return try #require(
                out.multicasts.compactMap { if case .command(let envelope, _) = $0.payload { envelope } else { nil } }
                    .first)
        }
        let share = try issued(
            alice.onCommand(
                .share(Activity(url: "u", itemID: "movie"), durationSeconds: nil, bufferSeconds: 0), now: at(22)))
        let pause = try issued(alice.onCommand(.pause, now: at(23)))
        let again = try issued(alice.onCommand(.pause, now: at(24)))
        // 100 origins to depend on: 47 with the share, the next 47 with the pause, the last 6 next.
        #expect(share.dependencies.count == CausalLog.dependenciesMax)
        #expect(pause.dependencies.count == CausalLog.dependenciesMax)
        #expect(again.dependencies.count == 100 - 2 * CausalLog.dependenciesMax)
        var all = share.dependencies
        all.merge(pause.dependencies)
        all.merge(again.dependencies)
        #expect(all.count == 100, "every origin depended on once")
        // The digest: 101 origins, 48 an announcement, every one of them within three (among 102
        // participants a heartbeat goes every 3.2 s).
        var covered = Set<Member>()
        for tick in 0..<3 {
            for datagram in alice.onTick(now: at(1_000 + Double(tick) * 3_400)).multicasts {
                if case .heartbeat(let announcement) = datagram.payload {
                    #expect(announcement.digest.count == WireFormat.vectorClockEntriesMax)
                    covered.formUnion(announcement.digest.entries.keys)
                }
            }
        }
        #expect(covered.count == 101, "the digests covered \(covered.count) of 101 origins")
    }
}

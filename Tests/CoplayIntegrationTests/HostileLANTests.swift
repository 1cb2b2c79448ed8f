import CoplayCore
import CoplayHarness
import CoplayRuntime
import Foundation
import Testing

/// Attacks from a third host on a `Tools/lan` LAN: alice (host 1) and bob (host 2) are agents;
/// host 3 is the attacker, with a raw UDP socket that hears the group and sends what it likes —
/// forged commands, replays of what it heard, takeovers, NACKs meant to be reflected.
@Suite(.serialized, .onALane) struct HostileLANTests {
    private static let group = "239.255.77.1"
    private static let port: UInt16 = 47_100
    private static let session = SessionID(name: "hostile")

    /// Alice and bob in a group of their own, playing item "film"; the attacker's socket on host 3.
    private struct Scene {
        let alice: AgentProcess
        let bob: AgentProcess
        let attacker: LANSocket
        let aliceMember: Member
        let bobMember: Member

        init(prefix: String, extra: [String]) throws {
            let common = ["--interface", "eth0", "--group", "\(group):\(port)", "--session", "hostile"] + extra
            alice = try AgentProcess(executable: coplay, name: "alice", arguments: common, namespace: "\(prefix)-h1")
            bob = try AgentProcess(executable: coplay, name: "bob", arguments: common, namespace: "\(prefix)-h2")
            attacker = try LANSocket(namespace: "\(prefix)-h3", address: "10.77.0.3", port: port)
            attacker.join(group: group)
            for agent in [alice, bob] {
                _ = try #require(agent.waitForEvent(timeout: .seconds(10)) { $0.name == "peer-joined" })
            }
            aliceMember = try #require(alice.member(of: alice.status()))
            bobMember = try #require(bob.member(of: bob.status()))
            alice.send("share https://example.com/film.mp4 id=film")
            usleep(500_000)
            alice.send("play-now")
            _ = try #require(bob.waitForEvent(timeout: .seconds(5)) { $0.name == "playing" })
        }

        func stop() {
            for agent in [alice, bob] { agent.closeInput() }
            for agent in [alice, bob] { #expect(agent.waitForExit(timeout: .seconds(5)) == 0, "\(agent.name)") }
        }

        func toGroup(_ bytes: [UInt8]) { attacker.send(bytes, to: group, port: port) }

        /// A well-formed pause of "film" claiming to come from `origin` as its command `counter`.
        func forgedPause(from origin: Member, counter: UInt32, lamport: UInt64 = 1_000) -> Datagram {
            let now = WallInstant(unixNanos: Int64(Date().timeIntervalSince1970 * 1e9))
            return Datagram(
                session: session, sender: origin, sequence: 900_000 + counter,
                payload: .command(
                    CommandEnvelope(
                        dot: Dot(origin: origin, counter: counter), lamport: lamport, dependencies: VectorClock(),
                        command: Command(item: "film", operation: .pause(position: 1, at: now))),
                    isRepair: false))
        }
    }

    private func rate(_ agent: AgentProcess) -> Double? { (agent.status()?["rate"] as? NSNumber)?.doubleValue }

    /// With a group key: a forged pause (untagged, or signed with another key), a replay of
    /// alice's own authentic pause heard on the wire, and a takeover of bob's identity (untagged,
    /// and — with the real key, as an insider — at incarnation 2^32 − 1) change nothing, and each
    /// is counted by its reason.
    @Test(.enabled(if: isRoot, "needs root for network namespaces"))
    func withAKey_forgedReplayedAndTakeoverDatagramsFromAnotherHost_changeNothing() throws {
        let keyPath = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-hostile-\(getpid()).key")
            .path
        let text = KeyFile.generate()
        _ = FileManager.default.createFile(atPath: keyPath, contents: Data(text.utf8))
        defer { try? FileManager.default.removeItem(atPath: keyPath) }
        let key = try GroupKeys.parse(keyFile: text).get()
        try withLAN(hosts: 3) { prefix in
            let scene = try Scene(prefix: prefix, extra: ["--key-file", keyPath])
            defer { scene.stop() }
            let (alice, bob) = (scene.alice, scene.bob)

            // Alice pauses; the attacker records what it hears, then alice plays again.
            _ = scene.attacker.received(within: 0.3)
            let mark = bob.allEvents.count
            alice.send("pause")
            let heard = scene.attacker.received(within: 0.6)
            _ = try #require(bob.waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "paused" })
            let authenticPause = try #require(
                heard.first { bytes in
                    guard let datagram = try? WireFormat.decode(bytes),
                        case .command(let envelope, _) = datagram.payload, case .pause = envelope.command.operation
                    else { return false }
                    return datagram.sender == scene.aliceMember && !datagram.authTag.isEmpty
                }, "the attacker heard alice's signed pause on the wire")
            alice.send("play-now")
            _ = try #require(bob.waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "playing" })
            usleep(300_000)

            // 1. The replay: alice's authentic pause, sent again to the group.
            scene.toGroup(authenticPause)
            // 2. Forged pauses in alice's name: untagged, and signed with another key.
            let forged = scene.forgedPause(from: scene.aliceMember, counter: 500)
            scene.toGroup(WireFormat.encode(forged))
            let otherKey = GroupKeys(keys: [[UInt8](repeating: 7, count: 32)], session: Self.session)
            scene.toGroup(WireFormat.encode(forged, signedWith: otherKey))
            // 3. Takeovers of bob: a newer incarnation untagged, and incarnation 2^32 − 1 signed
            //    with the real key (what an insider, or a bug, could send).
            for (incarnation, keys) in [
                (scene.bobMember.incarnation.rawValue + 1, nil),
                (UInt32.max, GroupKeys(keys: key, session: Self.session)),
            ] as [(UInt32, GroupKeys?)] {
                // Stamped now, as an insider's agent would: fresh, so that the incarnation is what
                // is judged.
                let takeover = Datagram(
                    session: Self.session,
                    sender: Member(id: scene.bobMember.id, incarnation: Incarnation(incarnation)),
                    sequence: 1, payload: .hello(Announcement(unicastPort: 9, name: "takeover")),
                    sentAt: keys == nil ? nil : WallInstant(unixNanos: Int64(Date().timeIntervalSince1970 * 1e9)))
                scene.toGroup(keys.map { WireFormat.encode(takeover, signedWith: $0) } ?? WireFormat.encode(takeover))
            }
            usleep(800_000)

            #expect(bob.counter("drops", "replayed") >= 1, "the replayed pause")
            #expect(bob.counter("drops", "missingTag") >= 1, "the untagged forged pause")
            #expect(bob.counter("drops", "badTag") >= 1, "the pause signed with another key")
            #expect(alice.counter("drops", "missingTag") >= 2, "the untagged pause and the untagged takeover")
            #expect(alice.counter("drops", "implausibleIncarnation") == 1, "the insider's takeover")
            for agent in [alice, bob] {
                #expect(rate(agent) == 1, "\(agent.name) still plays: no forged or replayed pause took effect")
            }
            let bobAsAliceSeesHim = try #require(alice.peers()?.first)
            #expect(
                (bobAsAliceSeesHim["incarnation"] as? NSNumber)?.uint32Value == scene.bobMember.incarnation.rawValue,
                "bob keeps his identity")
            #expect(alice.peers()?.count == 1 && bob.peers()?.count == 1, "nobody new in the group")
        }
    }

    /// Freshness: the attacker records a whole evening of a keyed group from the wire (hellos,
    /// heartbeats, commands, and the `end` that closed it), and replays it all into the group's
    /// next meeting (same key, same session) and again to a late joiner. Before send times, the
    /// recorded `end` ended the new session and the recorded hellos admitted yesterday's agents as
    /// ghosts, whom coordinated starts then waited for. Now each datagram is refused as stale and
    /// counted; the new session goes on, with its own members only, and starts at once.
    @Test(.enabled(if: isRoot, "needs root for network namespaces"))
    func withAKey_aRecordingOfOneSession_replayedIntoTheNext_changesNothing() throws {
        let keyPath = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-fresh-\(getpid()).key")
            .path
        _ = FileManager.default.createFile(atPath: keyPath, contents: Data(KeyFile.generate().utf8))
        defer { try? FileManager.default.removeItem(atPath: keyPath) }
        try withLAN(hosts: 3) { prefix in
            // The first evening, recorded from host 3.
            var recording: [[UInt8]] = []
            do {
                let scene = try Scene(prefix: prefix, extra: ["--key-file", keyPath])
                recording += scene.attacker.received(within: 1.2)
                scene.alice.send("pause")
                scene.alice.send("end movie-over")
                recording += scene.attacker.received(within: 0.8)
                #expect(
                    scene.bob.waitForEvent(timeout: .seconds(3)) {
                        $0.name == "session" && $0["state"] as? String == "invalidated"
                    }
                        != nil, "the end, live, ends the evening: the recording holds a real end")
                scene.stop()
            }
            let ends = recording.filter { (try? WireFormat.decode($0))?.payload.type == .end }.count
            #expect(ends >= 1 && recording.count >= 10, "recorded \(recording.count) datagrams, \(ends) ends")
            let recordedAt = Date()

            // The next meeting, once the recording is older than the window before a clock is
            // measured (5 s; yesterday's would be a day old).
            usleep(UInt32(max(0, 5.5 - Date().timeIntervalSince(recordedAt)) * 1e6) + 500_000)
            let scene = try Scene(prefix: prefix, extra: ["--key-file", keyPath])
            defer { scene.stop() }
            let (alice, bob) = (scene.alice, scene.bob)
            let mark = bob.allEvents.count
            for bytes in recording { scene.toGroup(bytes) }
            usleep(800_000)
            for agent in [alice, bob] {
                #expect(agent.status()?["state"] as? String == "joined", "\(agent.name): the recorded end ends nothing")
                #expect(agent.peers()?.count == 1, "\(agent.name): no ghost of the first evening")
                #expect(agent.counter("drops", "stale") >= recording.count / 2, "\(agent.name) counts the replay")
            }
            #expect(bob.allEvents[mark...].allSatisfy { $0.name != "peer-joined" }, "nobody joined from the recording")
            // A coordinated start waits for nobody: a pause and a play, and bob plays at once.
            alice.send("pause")
            _ = try #require(bob.waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "paused" })
            let pressed = Date()
            alice.send("play")
            _ = try #require(bob.waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "playing" })
            let wait = Date().timeIntervalSince(pressed)
            #expect(wait < 1, "the start waited for no ghost")
            print(
                "freshness: \(recording.count) recorded datagrams replayed, 0 ghosts, play to bob playing \(Int(wait * 1000)) ms"
            )

            // A late joiner, who has measured nobody's clock, hears the recording as it starts.
            let carol = try AgentProcess(
                executable: coplay, name: "carol",
                arguments: [
                    "--interface", "eth0", "--group", "\(Self.group):\(Self.port)", "--session", "hostile",
                    "--key-file", keyPath,
                ], namespace: "\(prefix)-h3")
            for bytes in recording { scene.toGroup(bytes) }
            _ = carol.waitForEvent(timeout: .seconds(5)) { $0.name == "peer-joined" }
            usleep(1_000_000)
            #expect(carol.peers()?.count == 2, "carol sees alice and bob, and no ghost")
            #expect(carol.status()?["state"] as? String == "joined")
            carol.closeInput()
            #expect(carol.waitForExit(timeout: .seconds(5)) == 0)
        }
    }

    /// Without a key: forged commands with extreme values (a rate of 5e-324, an instant at
    /// Int64.min, a Lamport clock of 2^64 − 1) and a NACK over 2^32 counters are dropped and
    /// counted, and both agents go on — while a well-formed forged pause in alice's name *does*
    /// pause bob: without a key, anyone on the LAN can drive playback (README, "A group key").
    @Test(.enabled(if: isRoot, "needs root for network namespaces"))
    func withoutAKey_extremeForgeriesAreDropped_butAWellFormedForgeryDrivesPlayback() throws {
        try withLAN(hosts: 3) { prefix in
            let scene = try Scene(prefix: prefix, extra: [])
            defer { scene.stop() }
            let (alice, bob) = (scene.alice, scene.bob)
            let origin = scene.aliceMember
            func command(_ operation: CoplayCore.Operation, counter: UInt32, lamport: UInt64 = 1_000) -> [UInt8] {
                WireFormat.encode(
                    Datagram(
                        session: Self.session, sender: origin, sequence: 800_000 + counter,
                        payload: .command(
                            CommandEnvelope(
                                dot: Dot(origin: origin, counter: counter), lamport: lamport,
                                dependencies: VectorClock(), command: Command(item: "film", operation: operation)),
                            isRepair: false)))
            }
            let now = WallInstant(unixNanos: Int64(Date().timeIntervalSince1970 * 1e9))
            let malformedBefore = bob.counter("drops", "malformedPayload")
            scene.toGroup(command(.playNow(rate: .leastNonzeroMagnitude, position: 1, at: now), counter: 400))
            scene.toGroup(command(.play(rate: 1, position: 1, requestedAt: WallInstant(unixNanos: .min)), counter: 401))
            scene.toGroup(command(.pause(position: 1, at: now), counter: 402, lamport: .max))
            scene.toGroup(
                WireFormat.encode(
                    Datagram(
                        session: Self.session, sender: scene.bobMember, sequence: 800_010,
                        payload: .nack([MissingRange(origin: origin, from: 1, to: .max)]))))
            usleep(800_000)
            #expect(bob.counter("drops", "malformedPayload") == malformedBefore + 3, "the three extreme commands")
            for agent in [alice, bob] {
                #expect(agent.isRunning && rate(agent) == 1, "\(agent.name) runs on, still playing")
            }

            // The threat model, shown: the same well-formed forged pause a keyed group refuses.
            let mark = bob.allEvents.count
            // Only alice has issued commands, so her next counter is one past what bob delivered.
            let delivered = bob.counter("commandsDelivered")
            scene.toGroup(WireFormat.encode(scene.forgedPause(from: origin, counter: UInt32(delivered + 1))))
            #expect(
                bob.waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "paused" } != nil,
                "without a key a forged pause drives playback")
        }
    }

    /// NACK amplification: the attacker sends alice a small NACK asking for her whole history,
    /// hoping the repair comes back to it (a reflector) or in bulk. A stranger's NACK is dropped;
    /// one claiming to be bob is answered only at bob's announced endpoint, never the attacker's.
    @Test(.enabled(if: isRoot, "needs root for network namespaces"))
    func aNackFromAStrangerOrASpoofedMember_reflectsNothingToTheAttacker() throws {
        try withLAN(hosts: 3) { prefix in
            let scene = try Scene(prefix: prefix, extra: [])
            defer { scene.stop() }
            let (alice, bob) = (scene.alice, scene.bob)
            for second in 1...40 { alice.send("seek \(second)") }
            usleep(1_500_000)
            #expect(bob.counter("commandsDelivered") >= 42, "a history of 42 of alice's commands, delivered")
            let alicePort = try #require(
                (bob.peers()?.first?["address"] as? String)?.split(separator: ":").last.flatMap { UInt16($0) })
            // The attacker's own unicast socket: anything reflected would arrive here.
            let attacker = try LANSocket(namespace: "\(prefix)-h3", address: "10.77.0.3")
            let everything = Payload.nack([MissingRange(origin: scene.aliceMember, from: 1, to: 42)])

            // 1. A stranger asks alice for her whole history.
            let strangerDrops = alice.counter("drops", "unknownSender")
            let stranger = Member(id: PeerID(0xA77ACC), incarnation: Incarnation(1))
            attacker.send(
                WireFormat.encode(Datagram(session: Self.session, sender: stranger, sequence: 1, payload: everything)),
                to: "10.77.0.1", port: alicePort)
            #expect(attacker.received(within: 0.7).isEmpty, "nothing is reflected to a stranger")
            #expect(alice.counter("drops", "unknownSender") == strangerDrops + 1, "the stranger's nack is dropped")

            // 2. A nack for more than all of it, claiming to be bob: answered at bob's announced
            //    endpoint, not here. Alice has compacted what bob has delivered, so she answers with
            //    her state (more than 64 commands asked for), which bob adopts.
            let answersBefore = bob.counter("duplicateCommands") + bob.counter("statesAdopted")
            let more = Payload.nack([MissingRange(origin: scene.aliceMember, from: 1, to: 100)])
            attacker.send(
                WireFormat.encode(
                    Datagram(session: Self.session, sender: scene.bobMember, sequence: 1_000_000, payload: more)),
                to: "10.77.0.1", port: alicePort)
            #expect(attacker.received(within: 0.7).isEmpty, "nothing is reflected to the spoofer")
            usleep(300_000)
            #expect(
                bob.counter("duplicateCommands") + bob.counter("statesAdopted") > answersBefore,
                "the answer went to bob")
        }
    }
}

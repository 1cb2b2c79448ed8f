import CoplayCore
import CoplayHarness
import CoplayRuntime
import Foundation
import Testing

/// Real agents on loopback with group keys: the same key makes a group; another key, or none,
/// is not let in — and says why in the drop counters.
@Suite(.serialized) struct GroupKeyAgentTests {
    @Test func agentsWithTheSameKey_formAGroup_anotherKeyAndForgedDatagramsAreRefused() throws {
        let port = privatePort(3)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-keys-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ours = directory.appendingPathComponent("ours.key").path
        let theirs = directory.appendingPathComponent("theirs.key").path
        FileManager.default.createFile(atPath: ours, contents: Data(KeyFile.generate().utf8))
        FileManager.default.createFile(atPath: theirs, contents: Data(KeyFile.generate().utf8))
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(port)", "--session", "keyed-it"]
        let alice = try AgentProcess(executable: coplay, name: "alice", arguments: common + ["--key-file", ours])
        let bob = try AgentProcess(executable: coplay, name: "bob", arguments: common + ["--key-file", ours])
        let mallory = try AgentProcess(executable: coplay, name: "mallory", arguments: common + ["--key-file", theirs])
        let bobID = try #require(bob.waitForEvent(timeout: .seconds(10)) { $0.name == "session" }?["peer"] as? String)
        #expect(
            alice.waitForEvent(timeout: .seconds(5)) { $0.name == "peer-joined" && $0.peer("id") as? String == bobID }
                != nil, "alice and bob share a key: a group")
        // A forged, untagged hello straight onto the group port.
        let forged = WireFormat.encode(
            Datagram(
                session: SessionID(name: "keyed-it"), sender: Member(id: PeerID(0xBAD), incarnation: Incarnation(1)),
                sequence: 1, payload: .hello(Announcement(unicastPort: 9, name: "forger"))))
        GroupSender(port: UInt16(port)!).send(forged)
        usleep(1_000_000)
        #expect(alice.peers()?.count == 1, "only bob: mallory and the forger are not let in")
        #expect(mallory.peers()?.count == 0)
        let drops = try #require((alice.status()?["counters"] as? [String: Any])?["drops"] as? [String: Any])
        #expect(((drops["badTag"] as? NSNumber)?.intValue ?? 0) > 0, "mallory's datagrams: another key")
        #expect(((drops["missingTag"] as? NSNumber)?.intValue ?? 0) >= 1, "the forged hello")
        // A key can be rotated without stopping: alice rereads her file on SIGHUP.
        alice.signal(SIGHUP)
        usleep(300_000)
        #expect(alice.diagnostics.contains { $0.contains("key file reread, 1 key in force") })
        #expect(alice.status()?["state"] as? String == "joined")
        for agent in [alice, bob, mallory] { agent.closeInput() }
        for agent in [alice, bob, mallory] { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
    }

    /// Attacks from a socket on the LAN against a keyed agent: a forged pause (signed with the
    /// wrong key), a replay of an authentic datagram, and an incarnation takeover. Each is
    /// refused and counted; the agent's state does not move.
    @Test func keyedAgent_refusesForgedReplayedAndTakeoverDatagrams() throws {
        let port = privatePort(4)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-attack-\(getpid()).key").path
        let text = KeyFile.generate()
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let key = try GroupKeys.parse(keyFile: text).get()
        let session = SessionID(name: "attack-it")
        let alice = try AgentProcess(
            executable: coplay, name: "alice",
            arguments: [
                "--interface", "lo", "--group", "239.255.77.1:\(port)", "--session", "attack-it", "--key-file", path,
            ])
        _ = try #require(alice.waitForEvent(timeout: .seconds(10)) { $0.name == "session" })
        alice.send("share https://example.com/a.mp4 id=a")
        alice.send("play-now")
        _ = try #require(alice.waitForEvent(timeout: .seconds(5)) { $0.name == "playing" })
        let sender = GroupSender(port: UInt16(port)!)
        let intruder = Member(
            id: PeerID(0xE71),
            incarnation: Incarnation.initial(at: WallInstant(unixNanos: Int64(Date().timeIntervalSince1970 * 1e9))))
        let pause = Payload.command(
            CommandEnvelope(
                dot: Dot(origin: intruder, counter: 1), lamport: 99, dependencies: VectorClock(),
                command: Command(
                    item: "a", operation: .pause(position: 0, at: WallInstant(unixNanos: 1_780_000_000_000_000_000)))),
            isRepair: false)
        // 1. A forged pause: the right shape, a wrong key.
        sender.send(
            WireFormat.encode(
                Datagram(session: session, sender: intruder, sequence: 1, payload: pause),
                signedWith: GroupKeys(keys: [[UInt8](repeating: 7, count: 32)], session: session)))
        // 2. A replay: an authentic datagram (made with the real key), sent twice.
        let authentic = WireFormat.encode(
            Datagram(
                session: session, sender: intruder, sequence: 5,
                payload: .heartbeat(Announcement(unicastPort: 9, name: "intruder"))),
            signedWith: GroupKeys(keys: key, session: session))
        sender.send(authentic)
        sender.send(authentic)
        // 3. A takeover: an incarnation of 2^32 - 1, authentic.
        sender.send(
            WireFormat.encode(
                Datagram(
                    session: session, sender: Member(id: PeerID(0xE71), incarnation: Incarnation(.max)), sequence: 1,
                    payload: .heartbeat(Announcement(unicastPort: 9, name: "takeover"))),
                signedWith: GroupKeys(keys: key, session: session)))
        usleep(500_000)
        let status = try #require(alice.status())
        let drops = try #require((status["counters"] as? [String: Any])?["drops"] as? [String: Any])
        #expect((drops["badTag"] as? NSNumber)?.intValue == 1, "the forged pause")
        #expect((drops["replayed"] as? NSNumber)?.intValue == 1, "the second copy")
        #expect((drops["implausibleIncarnation"] as? NSNumber)?.intValue == 1, "the takeover")
        #expect((status["rate"] as? NSNumber)?.doubleValue == 1, "still playing: the forged pause did nothing")
        alice.closeInput()
        #expect(alice.waitForExit(timeout: .seconds(5)) == 0)
    }
}

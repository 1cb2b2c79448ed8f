import CoplayCore
import CoplayHarness
import CoplayRuntime
import Foundation
import Testing

/// Real agents on loopback with group keys: the same key makes a group; another key, or none,
/// is not let in — and says why in the drop counters.
@Suite(.serialized, .onALane) struct GroupKeyAgentTests {
    @Test func agentsWithTheSameKey_formAGroup_anotherKeyAndForgedDatagramsAreRefused() throws {
        let port = privatePort(3)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-keys-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ours = directory.appendingPathComponent("ours.key").path
        let theirs = directory.appendingPathComponent("theirs.key").path
        _ = FileManager.default.createFile(atPath: ours, contents: Data(KeyFile.generate().utf8))
        _ = FileManager.default.createFile(atPath: theirs, contents: Data(KeyFile.generate().utf8))
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
        try GroupSender(port: UInt16(port)!).send(forged)
        usleep(1_000_000)
        #expect(alice.peers()?.count == 1, "only bob: mallory and the forger are not let in")
        #expect(mallory.peers()?.count == 0)
        let drops = try #require((alice.status()?["counters"] as? [String: Any])?["drops"] as? [String: Any])
        #expect(((drops["badTag"] as? NSNumber)?.intValue ?? 0) > 0, "mallory's datagrams: another key")
        #expect(((drops["missingTag"] as? NSNumber)?.intValue ?? 0) >= 1, "the forged hello")
        // A key can be rotated without stopping: alice rereads her file on SIGHUP.
        alice.signal(SIGHUP)
        #expect(alice.waitForDiagnostic(timeout: .seconds(3)) { $0.contains("key file reread, 1 key in force") })
        #expect(alice.status()?["state"] as? String == "joined")
        for agent in [alice, bob, mallory] { agent.closeInput() }
        for agent in [alice, bob, mallory] { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
    }
}

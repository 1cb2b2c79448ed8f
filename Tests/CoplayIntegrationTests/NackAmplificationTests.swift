import CoplayCore
import CoplayHarness
import Foundation
import Testing

/// NACK amplification against real agents: an attacker on the LAN sends a small NACK asking a
/// member to repair its whole history, hoping the repair is sent to it (a reflector) or in
/// bulk. A stranger's NACK is dropped; one that claims to be a member is answered only at that
/// member's announced endpoint, within the member's repair budget, never at the attacker.
@Suite(.serialized) struct NackAmplificationTests {
    /// A UDP socket of the attacker's own on loopback.
    final class Attacker {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)

        init() {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            var wait = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(descriptor) }

        func send(_ bytes: [UInt8], toPort port: UInt16) {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            _ = bytes.withUnsafeBytes { raw in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }

        /// Bytes that arrive within `seconds`.
        func bytesReceived(within seconds: Double) -> Int {
            var total = 0
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 2048)
            while Date() < deadline {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count > 0 { total += count }
            }
            return total
        }
    }

    private func member(of event: AgentEvent?) -> Member? {
        guard let id = (event?["peer"] as? String).flatMap({ PeerID(hex: $0) }),
            let incarnation = (event?["incarnation"] as? NSNumber)?.uint32Value
        else { return nil }
        return Member(id: id, incarnation: Incarnation(incarnation))
    }

    private func counter(_ agent: AgentProcess, _ path: String...) -> Int {
        var value: Any? = agent.status()?["counters"]
        for key in path { value = (value as? [String: Any])?[key] }
        return (value as? NSNumber)?.intValue ?? 0
    }

    @Test func aNackFromAStrangerOrASpoofedMember_reflectsNothingToTheAttacker() throws {
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(8))", "--session", "nack-it"]
        let alice = try AgentProcess(executable: coplay, name: "alice", arguments: common)
        let bob = try AgentProcess(executable: coplay, name: "bob", arguments: common)
        #expect(alice.waitForEvent(timeout: .seconds(10)) { $0.name == "peer-joined" } != nil)
        // A history of 41 of alice's commands, delivered to bob.
        alice.send("share https://example.com/film.mp4 id=film")
        for second in 1...40 { alice.send("seek \(second)") }
        usleep(1_500_000)
        #expect(counter(bob, "commandsDelivered") >= 41)
        let aliceMember = try #require(member(of: alice.status()))
        let bobMember = try #require(member(of: bob.status()))
        let alicePort = try #require(
            (bob.peers()?.first?["address"] as? String)?.split(separator: ":").last.flatMap { UInt16($0) })
        let session = SessionID(name: "nack-it")
        let everything = Payload.nack([MissingRange(origin: aliceMember, from: 1, to: 41)])
        let attacker = Attacker()

        // 1. A stranger asks alice for her whole history.
        let strangerDrops = counter(alice, "drops", "unknownSender")
        let nack = WireFormat.encode(
            Datagram(
                session: session, sender: Member(id: PeerID(0xA77ACC), incarnation: Incarnation(1)), sequence: 1,
                payload: everything))
        attacker.send(nack, toPort: alicePort)
        #expect(attacker.bytesReceived(within: 0.7) == 0, "nothing is reflected to a stranger")
        #expect(counter(alice, "drops", "unknownSender") == strangerDrops + 1, "the stranger's nack is dropped")

        // 2. The same nack claiming to be bob: repaired at bob's announced endpoint, not here.
        let duplicatesBefore = counter(bob, "duplicateCommands")
        let spoofed = WireFormat.encode(
            Datagram(session: session, sender: bobMember, sequence: 1_000_000, payload: everything))
        attacker.send(spoofed, toPort: alicePort)
        #expect(attacker.bytesReceived(within: 0.7) == 0, "nothing is reflected to the spoofer")
        usleep(300_000)
        #expect(
            counter(bob, "duplicateCommands") > duplicatesBefore,
            "the repair went to bob, who already had the commands")

        for agent in [alice, bob] { agent.closeInput() }
        for agent in [alice, bob] { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
    }
}

import CoplayHarness
import Foundation
import Testing

/// An agent stopped (SIGSTOP) for 4 s and let go (SIGCONT) reports no `peer-left` for any of its
/// peers: their silence was its own. The others may see it go and come back.
@Suite(.serialized) struct StallTests {
    @Test func aStoppedAgent_wakesWithoutBlamingItsPeers() throws {
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(11))", "--session", "stall-it"]
        let agents = try ["a", "b", "c"].map { try AgentProcess(executable: coplay, name: $0, arguments: common) }
        for agent in agents {
            var seen = 0
            let both = agent.waitForEvent(timeout: .seconds(10)) { event in
                if event.name == "peer-joined" { seen += 1 }
                return seen == 2
            }
            #expect(both != nil, "\(agent.name) did not see both others")
        }
        let sleeper = agents[0]
        let left = sleeper.stall(seconds: 4, settle: 2)
        #expect(left.isEmpty, "the woken agent blamed its peers: \(left.map(\.line))")
        #expect(sleeper.peers()?.count == 2)
        for agent in agents[1...] {
            #expect(agent.peers()?.contains { $0["name"] as? String == "a" } == true, "\(agent.name) has a back")
        }
        for agent in agents { agent.closeInput() }
        for agent in agents { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
    }
}

import CoplayCore
import CoplayHarness
import Foundation
import Testing

/// An agent stopped (SIGSTOP) for 4 s and let go (SIGCONT) reports no `peer-left` for any of its
/// peers: their silence was its own. The others may see it go and come back.
@Suite(.serialized, .onALane) struct StallTests {
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

    /// An agent wakes to more strangers' datagrams than a turn lets through for strangers — as
    /// when a crowd starts together, and every newcomer is a stranger. A hello behind them is set
    /// aside and handled once the socket is empty, not dropped: dropped, the crowd's answers to a
    /// newcomer's hello left it without those peers until their next heartbeats.
    @Test func anAgentWakingToACrowdOfStrangers_stillAdmitsTheHelloBehindThem() throws {
        let port = privatePort(13)
        let session = "crowd-it"
        let agent = try AgentProcess(
            executable: coplay, name: "a",
            arguments: ["--interface", "lo", "--group", "239.255.77.1:\(port)", "--session", session])
        #expect(agent.waitForEvent(timeout: .seconds(10)) { $0.name == "session" } != nil)
        let sender = try GroupSender(port: UInt16(port)!)
        func datagram(from id: UInt64, _ payload: Payload) -> [UInt8] {
            WireFormat.encode(
                Datagram(
                    session: SessionID(name: session), sender: Member(id: PeerID(id), incarnation: Incarnation(1)),
                    sequence: 1, payload: payload))
        }
        agent.signal(SIGSTOP)
        // 200 invented members' clock probes (past the strangers' share of a turn, 122), then a
        // newcomer's hello, all waiting for the agent when it wakes.
        for index in 0..<200 {
            sender.send(
                datagram(
                    from: 0xC000 + UInt64(index), .probe(ClockProbe(token: 1, originWall: WallInstant(unixNanos: 1)))))
        }
        sender.send(datagram(from: 0xBEEF, .hello(Announcement(unicastPort: 9, name: "newcomer"))))
        usleep(200_000)
        agent.signal(SIGCONT)
        let joined = agent.waitForEvent(timeout: .seconds(2)) {
            $0.name == "peer-joined" && $0.peer("name") as? String == "newcomer"
        }
        #expect(joined != nil, "the hello behind 200 strangers was dropped")
        // The strangers' probes past the share of a turn are dropped unread (with perhaps an echo
        // of the agent's own last heartbeat, which counts as a stranger's): 78 if one turn reads
        // them all, fewer if the turn's time (`receiveTurnDurationMax`) ran out first and the
        // next turn gave strangers a share again — none at all if it ran out before the share
        // was spent, as on CI's machine, where this debug build took over 1.6 ms an admitted
        // stranger. Never more than the share leaves. (That the share is enforced at all is
        // `HostileLANTests.datagramFlood_isCountedAndLosesNoCommand`'s to show.)
        let unread = agent.counter("receiveQueueDrops")
        #expect((0...200 - 122 + 2).contains(unread), "\(unread) dropped unread")
        #expect(agent.counter("kernelDrops") == 0)
        agent.closeInput()
        #expect(agent.waitForExit(timeout: .seconds(5)) == 0)
    }
}

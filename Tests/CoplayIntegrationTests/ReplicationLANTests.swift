import CoplayHarness
import Foundation
import Testing

/// Replication with real agents on a `Tools/lan` LAN, every host dropping a tenth of the UDP it
/// receives (`nft`): two agents build a history of 5,000 commands (a burst from both), a third
/// joins late and must stand on the group's state; then all three issue a burst of 3,000 and
/// must end on the same commands and the same state.
@Suite(.serialized, .onALane) struct ReplicationLANTests {
    /// Commands an agent has delivered one by one or that an adopted snapshot stood for.
    static func commandsHeld(_ agent: AgentProcess) -> Int? {
        guard let counters = agent.status(timeout: .seconds(10))?["counters"] as? [String: Any] else { return nil }
        return ["commandsDelivered", "commandsCoveredByState"].map { (counters[$0] as? NSNumber)?.intValue ?? 0 }
            .reduce(0, +)
    }

    /// Waits until every agent holds `count` commands; the last counts seen.
    static func waitUntilAllHold(_ count: Int, _ agents: [AgentProcess], within seconds: Int) -> [Int?] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var held: [Int?] = []
        repeat {
            held = agents.map(commandsHeld)
            if held.allSatisfy({ $0 == count }) { break }
            usleep(250_000)
        } while ContinuousClock.now < deadline
        return held
    }

    @Test(.enabled(if: isRoot && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft"), "needs root and nft"))
    func aLateJoinAfter5000Commands_andABurstOf3000_underATenthLoss() throws {
        try withLAN(hosts: 3) { prefix in
            try dropUDP(percent: 10, onHosts: 1...3, of: prefix)
            let common = ["--interface", "eth0", "--session", "replication-it"]
            func agent(_ name: String, host: Int) throws -> AgentProcess {
                try AgentProcess(executable: coplay, name: name, arguments: common, namespace: "\(prefix)-h\(host)")
            }
            let residents = [try agent("alice", host: 1), try agent("bob", host: 2)]
            defer { for agent in residents { agent.closeInput() } }
            for agent in residents {
                try #require(agent.waitForEvent(timeout: .seconds(8)) { $0.name == "clock-synced" } != nil)
            }
            residents[0].send("share https://example.com/long.mp4 id=long duration=100000")
            usleep(300_000)
            // The history: 5,000 commands, 2,500 from each as fast as they take them.
            for index in 0..<5_000 {
                residents[index % 2].send(index % 4 < 2 ? "play-now" : "pause")
            }
            residents[0].send("pause")
            let built = Self.waitUntilAllHold(5_002, residents, within: 90)
            #expect(built == [5_002, 5_002], "the residents hold \(built) of 5,002 commands")
            let groupPosition = (residents[0].status()?["position"] as? NSNumber)?.doubleValue

            let carol = try agent("carol", host: 3)
            defer { carol.closeInput() }
            let joined = try #require(
                carol.waitForEvent(timeout: .seconds(5)) {
                    $0.name == "session" && $0["state"] as? String == "joined"
                })
            let adopted = carol.waitForEvent(timeout: .seconds(10)) { $0.name == "state-adopted" }
            #expect(adopted != nil, "carol adopted no snapshot: \(carol.diagnostics.suffix(3))")
            var onState: Int64?
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, onState == nil {
                if let status = carol.status(), status["item"] as? String == "long",
                    (status["rate"] as? NSNumber)?.doubleValue == 0,
                    let position = (status["position"] as? NSNumber)?.doubleValue, let groupPosition,
                    abs(position - groupPosition) < 0.001
                {
                    onState = (status["sampledAtUnixNanos"] as? NSNumber)?.int64Value
                }
                usleep(50_000)
            }
            let caughtUp = try #require(onState, "carol never stood on the group's state")
            print(
                "late join after 5,002 commands under 10% loss: on the group's state \((caughtUp - joined.atUnixNanos) / 1_000_000) ms after joining"
            )
            #expect(Self.commandsHeld(carol) == 5_002)

            // The burst: 1,000 from each of the three at once.
            let everyone = residents + [carol]
            for index in 0..<1_000 {
                for (number, agent) in everyone.enumerated() {
                    agent.send(
                        (index + number) % 3 == 0 ? "seek \(index % 300)" : (index % 2 == 0 ? "pause" : "play-now"))
                }
            }
            for agent in everyone { agent.send("pause") }
            // Seeks while playing add a start each; the count that matters is that all agree.
            var held: [Int?] = []
            let burstDeadline = ContinuousClock.now + .seconds(90)
            repeat {
                usleep(500_000)
                held = everyone.map(Self.commandsHeld)
            } while ContinuousClock.now < burstDeadline && (Set(held).count != 1 || held[0] == nil)
            #expect(Set(held).count == 1 && (held[0] ?? 0) >= 8_005, "after the burst the agents hold \(held)")
            usleep(500_000)
            let states = everyone.map { $0.status() }
            let positions = states.map { ($0?["position"] as? NSNumber)?.doubleValue ?? -1 }
            #expect(states.allSatisfy { ($0?["rate"] as? NSNumber)?.doubleValue == 0 }, "all paused")
            #expect(positions.allSatisfy { abs($0 - positions[0]) < 0.001 }, "one position: \(positions)")
            let (_, counters) = try Locations.run(
                "/usr/sbin/ip",
                ["netns", "exec", "\(prefix)-h3", "nft", "list", "counter", "inet", "coplayloss", "dropped"])
            #expect(counters.contains("packets") && !counters.contains("packets 0 "), "the loss was real: \(counters)")
        }
    }
}

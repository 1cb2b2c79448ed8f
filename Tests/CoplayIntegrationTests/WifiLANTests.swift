import CoplayHarness
import Foundation
import Testing

/// Three real agents (simulated players) on a `Tools/lan` LAN whose hub models one Wi-Fi access
/// point with a DTIM period of 3: group frames wait up to 307 ms for the beacon and each station
/// misses a tenth of them. Each agent must find its multicast slow and ask for unicast copies, a
/// pause must reach the others without waiting for a beacon, and no live peer may be declared
/// gone.
@Suite(.serialized, .onALane) struct WifiLANTests {
    @Test(
        .enabled(if: isRoot && Locations.onPath("ethtool") != nil, "needs root and ethtool"),
        .timeLimit(.minutes(2)))
    func onTheAir_aPauseDoesNotWaitForTheBeacon_andNoPeerIsDeclaredGone() throws {
        try withLAN(hosts: 3, link: "wifi", options: ["--dtim", "3", "--seed", "7"]) { prefix in
            let common = ["--interface", "eth0", "--session", "wifi-it"]
            let agents = try ["alice", "bob", "carol"].enumerated().map { host, name in
                try AgentProcess(executable: coplay, name: name, arguments: common, namespace: "\(prefix)-h\(host + 1)")
            }
            defer { for agent in agents { agent.closeInput() } }
            for agent in agents {
                try #require(agent.waitForEvent(timeout: .seconds(15)) { $0.name == "clock-synced" } != nil)
            }
            agents[0].send("share https://example.com/air.mp4 id=air duration=100000")
            usleep(1_000_000)
            agents[0].send("play")
            // Until every agent has found its multicast slow, and its peers know.
            let deadline = ContinuousClock.now + .seconds(40)
            var copies: [Bool] = []
            repeat {
                usleep(1_000_000)
                copies = agents.flatMap { agent in
                    (agent.peers() ?? []).map { ($0["unicastCopies"] as? Bool) ?? false }
                }
            } while ContinuousClock.now < deadline && !(copies.count == 6 && copies.allSatisfy { $0 })
            #expect(copies.count == 6 && copies.allSatisfy { $0 }, "peers asking for unicast copies: \(copies)")

            var delays: [Double] = []
            for round in 0..<10 {
                let marks = agents.map { $0.allEvents.count }
                agents[0].send("pause")
                guard
                    let pressed = agents[0].waitForEvent(
                        from: marks[0], timeout: .seconds(3), where: { $0.name == "paused" })
                else { continue }
                for (index, agent) in agents.enumerated().dropFirst() {
                    let paused = agent.waitForEvent(from: marks[index], timeout: .seconds(3)) { $0.name == "paused" }
                    delays.append(paused.map { Double($0.atUnixNanos - pressed.atUnixNanos) / 1e6 } ?? 3_000)
                }
                agents[0].send("play")
                // Rounds a fixed time apart would press at one phase of the beacon every time.
                usleep(1_200_000 + UInt32(round * 137_000 % 400_000))
            }
            delays.sort()
            print(
                "wifi hub (DTIM period 3), pause to each other agent paused (ms): \(delays.map { Int($0.rounded()) })")
            // By unicast two air hops are a few ms; a retry holds a frame 20-120 ms, and the frames
            // queued behind it, so a held uplink delays both copies of one pause. In 22 runs of six
            // rounds, 0 to 5 of 12 took 40 ms or more (1.27 on average, 11%). By multicast alone the
            // beacon adds 0-307 ms: with the copies turned off, 6 of 20 were under 40 ms.
            #expect(delays.count == 20 && delays.count { $0 < 40 } >= 12, "pause delays (ms): \(delays)")
            #expect(delays.allSatisfy { $0 < 1_000 }, "every pause arrived: \(delays)")
            let departures = agents.flatMap { $0.allEvents.filter { $0.name == "peer-left" } }
            #expect(departures.isEmpty, "a live peer was declared gone: \(departures.count)")
        }
    }
}

import CoplayHarness
import Foundation
import Testing

/// Three real agents (simulated players) on a `Tools/lan` LAN whose hub models one Wi-Fi access
/// point with a DTIM period of 3: group frames wait up to 307 ms for the beacon and each station
/// misses a tenth of them. Each agent must find its multicast slow and ask for unicast copies, a
/// pause must reach the others without waiting for a beacon, and no live peer may be declared
/// gone. Its commands go marked (DSCP EF), so that the hub's WMM model puts them in the voice
/// queue, and nothing else does.
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

            // What the presser's host sends, counted by its DSCP (nft, in its namespace).
            let rules = """
                table inet coplaycos {
                  counter expedited { }
                  counter routine { }
                  chain output {
                    type filter hook output priority 0; policy accept;
                    ip dscp ef udp dport != 0 counter name expedited
                    ip dscp != ef udp dport != 0 counter name routine
                  }
                }
                """
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-cos-\(prefix).nft")
            try rules.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let host1 = ["netns", "exec", "\(prefix)-h1", "nft"]
            let (status, output) = try Locations.run("/usr/sbin/ip", host1 + ["-f", file.path])
            try #require(status == 0, "nft: \(output)")
            func packets(_ counter: String) throws -> Int {
                let (_, listed) = try Locations.run(
                    "/usr/sbin/ip", host1 + ["list", "counter", "inet", "coplaycos", counter])
                let words = listed.split(whereSeparator: \.isWhitespace)
                return words.firstIndex(of: "packets").flatMap { Int(words[$0 + 1]) } ?? -1
            }

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
            // queued behind it in its access category, so a held uplink delays both copies of one
            // pause. Before the commands went expedited, routine frames held ahead of a pause made
            // 11% of pauses take 40 ms or more (22 runs of six rounds); now only the pause's own
            // retries do (2% a hop: about 4% of deliveries). By multicast alone the beacon adds
            // 0-307 ms: with the copies turned off, 6 of 20 were under 40 ms.
            #expect(delays.count == 20 && delays.count { $0 < 40 } >= 16, "pause delays (ms): \(delays)")
            #expect(delays.allSatisfy { $0 < 1_000 }, "every pause arrived: \(delays)")
            // 20 commands (each pause and play: a copy to each peer and the group's, then its
            // copies) went expedited, and the heartbeats and probes did not.
            let (expedited, routine) = (try packets("expedited"), try packets("routine"))
            #expect(expedited >= 20 * 3 && routine > 0, "datagrams marked EF: \(expedited), unmarked: \(routine)")
            let departures = agents.flatMap { $0.allEvents.filter { $0.name == "peer-left" } }
            #expect(departures.isEmpty, "a live peer was declared gone: \(departures.count)")
        }
    }
}

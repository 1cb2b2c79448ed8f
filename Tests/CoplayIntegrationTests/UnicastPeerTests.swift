import CoplayHarness
import Foundation
import Testing

/// Beyond one multicast segment: three hosts whose multicast `nft` drops both ways (a Wi-Fi
/// network that filters it, a VPN). Host 1 listens on a fixed `--port`; hosts 2 and 3 know only
/// host 1 (`--peer`). Through host 1's peer lists, 2 and 3 find each other, and a pause from one
/// reaches both others.
@Suite(.serialized) struct UnicastPeerTests {
    @Test(.enabled(if: isRoot && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft"), "needs root and nft"))
    func withMulticastDropped_agentsGivenOneSeedFormAWholeGroup() throws {
        try withLAN(hosts: 3) { prefix in
            let rules = """
                table ip nomulticast {
                  counter dropped { }
                  chain input {
                    type filter hook input priority 0; policy accept;
                    ip daddr 224.0.0.0/4 counter name dropped drop
                  }
                  chain output {
                    type filter hook output priority 0; policy accept;
                    ip daddr 224.0.0.0/4 counter name dropped drop
                  }
                }
                """
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-nomc-\(getpid()).nft")
            try rules.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            for host in 1...3 {
                let (status, output) = try Locations.run(
                    "/usr/sbin/ip", ["netns", "exec", "\(prefix)-h\(host)", "nft", "-f", file.path])
                #expect(status == 0, "nft: \(output)")
            }
            let common = ["--interface", "eth0", "--session", "unicast-it"]
            let seed = try AgentProcess(
                executable: coplay, name: "seed", arguments: common + ["--port", "47800"], namespace: "\(prefix)-h1")
            usleep(300_000)
            let others = try (2...3).map { host in
                try AgentProcess(
                    executable: coplay, name: "host\(host)", arguments: common + ["--peer", "10.77.0.1:47800"],
                    namespace: "\(prefix)-h\(host)")
            }
            let agents = [seed] + others
            for agent in agents {
                var names: Set<String> = []
                let whole = agent.waitForEvent(timeout: .seconds(8)) { event in
                    if event.name == "peer-joined", let name = event.peer("name") as? String { names.insert(name) }
                    return names.count == 2
                }
                #expect(whole != nil, "\(agent.name) saw only \(names)")
            }
            #expect(
                (others[0].peers() ?? []).contains { ($0["address"] as? String)?.hasPrefix("10.77.0.3:") == true },
                "host 2 reaches host 3 directly, learned from the seed's peer list")

            let marks = agents.map { $0.allEvents.count }
            others[1].send("share https://example.com/wall.mp4 id=wall")
            usleep(500_000)
            others[1].send("play-now")
            usleep(500_000)
            others[0].send("pause")
            for (index, agent) in agents.enumerated() {
                let paused = agent.waitForEvent(from: marks[index], timeout: .seconds(5)) { $0.name == "paused" }
                #expect(paused != nil, "\(agent.name) did not pause")
            }
            let (_, counter) = try Locations.run(
                "/usr/sbin/ip",
                ["netns", "exec", "\(prefix)-h2", "nft", "list", "counter", "ip", "nomulticast", "dropped"])
            let words = counter.split(whereSeparator: \.isWhitespace)
            let dropped = words.firstIndex(of: "packets").flatMap { Int(words[$0 + 1]) } ?? 0
            #expect(dropped > 0, "multicast really was dropped: \(counter)")
            for agent in agents { agent.closeInput() }
            for agent in agents { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
        }
    }
}

import CoplayHarness
import Foundation
import Testing

/// Beyond one multicast segment, and IPv6. Three hosts on a `Tools/lan` LAN. With multicast
/// dropped both ways by `nft` (a Wi-Fi network that filters it, a VPN), host 1 listens on a
/// fixed `--port` and hosts 2 and 3 know only host 1 (`--peer`): through host 1's peer lists they
/// find each other, and a pause from one reaches both others. Over IPv6 the same, and a group
/// on an IPv6 multicast address with multicast working.
@Suite(.serialized, .onALane) struct UnicastPeerTests {
    enum Network: String, CaseIterable, CustomTestStringConvertible {
        case ipv4WithoutMulticast, ipv6WithoutMulticast, ipv6Multicast
        var testDescription: String { rawValue }
        var isIPv6: Bool { self != .ipv4WithoutMulticast }
        var dropsMulticast: Bool { self != .ipv6Multicast }
    }

    @Test(
        .enabled(if: isRoot && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft"), "needs root and nft"),
        arguments: Network.allCases)
    func threeAgentsFormAWholeGroup(on network: Network) throws {
        try withLAN(hosts: 3) { prefix in
            // Only the group's own multicast is dropped: IPv6 neighbour discovery (ff02::) must work.
            let match = network.isIPv6 ? "ip6 daddr ff12::/16" : "ip daddr 224.0.0.0/4"
            let rules = """
                table inet nomulticast {
                  counter dropped { }
                  chain input {
                    type filter hook input priority 0; policy accept;
                    \(match) counter name dropped drop
                  }
                  chain output {
                    type filter hook output priority 0; policy accept;
                    \(match) counter name dropped drop
                  }
                }
                """
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-nomc-\(getpid()).nft")
            try rules.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            if network.dropsMulticast {
                for host in 1...3 {
                    let (status, output) = try Locations.run(
                        "/usr/sbin/ip", ["netns", "exec", "\(prefix)-h\(host)", "nft", "-f", file.path])
                    #expect(status == 0, "nft: \(output)")
                }
            }
            var common = ["--interface", "eth0", "--session", "unicast-it"]
            if network.isIPv6 { common += ["--group", "[ff12::7c:1]:47700"] }
            let seedAddress = network.isIPv6 ? "[fd77::1]:47800" : "10.77.0.1:47800"
            let seed = try AgentProcess(
                executable: coplay, name: "seed", arguments: common + ["--port", "47800"], namespace: "\(prefix)-h1")
            usleep(300_000)
            let others = try (2...3).map { host in
                try AgentProcess(
                    executable: coplay, name: "host\(host)",
                    arguments: common + (network.dropsMulticast ? ["--peer", seedAddress] : []),
                    namespace: "\(prefix)-h\(host)")
            }
            let agents = [seed] + others
            for agent in agents {
                var names: Set<String> = []
                let whole = agent.waitForEvent(timeout: .seconds(8)) { event in
                    if event.name == "peer-joined", let name = event.peer("name") as? String { names.insert(name) }
                    return names.count == 2
                }
                #expect(whole != nil, "\(agent.name) saw only \(names): \(agent.diagnostics.suffix(3))")
            }
            let addresses = (others[0].peers() ?? []).compactMap { $0["address"] as? String }
            #expect(
                addresses.allSatisfy { $0.hasPrefix(network.isIPv6 ? "[f" : "10.77.0.") }, "\(addresses)")

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
            if network.dropsMulticast {
                let (_, counter) = try Locations.run(
                    "/usr/sbin/ip",
                    ["netns", "exec", "\(prefix)-h2", "nft", "list", "counter", "inet", "nomulticast", "dropped"])
                let words = counter.split(whereSeparator: \.isWhitespace)
                let dropped = words.firstIndex(of: "packets").flatMap { Int(words[$0 + 1]) } ?? 0
                #expect(dropped > 0, "multicast really was dropped: \(counter)")
            }
            for agent in agents { agent.closeInput() }
            for agent in agents { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
        }
    }
}

import Foundation
import Glibc

extension Benchmarks {
    /// A long session: 3 agents on loopback; alice, bob and carol issue commands in turn (a
    /// pause, play-now or seek, and every tenth a reliable message to everyone) at `perSecond`
    /// commands a second for `seconds`. Every tenth of the session it prints each agent's resident
    /// memory; at the end, whether they agree (commands delivered or stood for by a snapshot, and
    /// the item's position). Memory must stay flat: nothing grows with the session's length.
    static func longSession(_ options: Options, common: [String], perSecond: Int) throws {
        let seconds = options.seconds
        print(
            "long session: 3 agents, \(perSecond) command\(perSecond == 1 ? "" : "s") a second for \(seconds) s (loopback)"
        )
        let agents = try ["alice", "bob", "carol"].map { try start(options, name: $0, common) }
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(3)) }
        }
        for agent in agents { _ = try joined(agent) }
        guard
            agents[0].waitForEvent(
                timeout: .seconds(10), where: { event in event.name == "clock-synced" }) != nil
        else { throw BenchError(description: "the agents did not find each other") }
        usleep(1_000_000)
        agents[0].send("share https://example.com/long.mp4 id=long duration=100000")
        usleep(500_000)
        let began = ContinuousClock.now
        let total = seconds * perSecond
        var samples: [(elapsed: Double, issued: Int, rss: [Double])] = []
        func sample(_ issued: Int) {
            let elapsed = ContinuousClock.now - began
            let rss = agents.map { Double(residentKilobytes($0.pid)) / 1024 }
            samples.append((Double(elapsed.components.seconds), issued, rss))
            print(
                String(format: "  %6.0f s  %7d commands  RSS ", Double(elapsed.components.seconds), issued)
                    + rss.map { String(format: "%.1f", $0) }.joined(separator: " / ") + " MiB")
        }
        sample(0)
        for index in 0..<total {
            let due = began + .nanoseconds(Int64(index) * 1_000_000_000 / Int64(perSecond))
            let wait = due - ContinuousClock.now
            if wait > .zero {
                usleep(UInt32(wait.components.seconds * 1_000_000 + wait.components.attoseconds / 1_000_000_000_000))
            }
            let agent = agents[index % 3]
            switch index % 10 {
            case 9: agent.send("msg note \(index) " + String(repeating: "x", count: 200))
            case 3, 7: agent.send("seek \(index % 500)")
            default: agent.send(index % 2 == 0 ? "play-now" : "pause")
            }
            if (index + 1) % max(1, total / 10) == 0 { sample(index + 1) }
        }
        agents[0].send("pause")
        usleep(2_000_000)
        let statuses = agents.map { $0.status(timeout: .seconds(10)) }
        let counts = statuses.map { status -> Int in
            let counters = status?["counters"] as? [String: Any]
            return ["commandsDelivered", "commandsCoveredByState"].map { (counters?[$0] as? NSNumber)?.intValue ?? 0 }
                .reduce(0, +)
        }
        let positions = statuses.map { ($0?["position"] as? NSNumber)?.doubleValue ?? -1 }
        print("  at the end: commands delivered or stood for \(counts), positions \(positions)")
        if let first = samples.dropFirst().first, let last = samples.last {
            print(
                "  RSS from the first tenth to the end: "
                    + zip(first.rss, last.rss).map { String(format: "%.1f → %.1f MiB (×%.2f)", $0, $1, $1 / $0) }
                    .joined(separator: ", "))
        }
        guard Set(counts).count == 1, positions.allSatisfy({ abs($0 - positions[0]) < 0.01 }) else {
            throw BenchError(description: "the agents did not agree at the end")
        }
    }
}

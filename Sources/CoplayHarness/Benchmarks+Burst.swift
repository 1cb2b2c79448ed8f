import Foundation
import Glibc

extension Benchmarks {
    /// A burst: 3 agents on loopback share an item, then `total` commands are written to them at
    /// once (a third each, pauses and play-nows, ending with a pause), as fast as their inputs
    /// take them. Measured: how long after the last command was written every agent holds the
    /// same commands (delivered one by one or stood for by a snapshot) and the same paused
    /// position. Bounded: 60 s.
    static func burst(_ options: Options, common: [String], total: Int) throws {
        print("burst: \(total) commands at once from 3 agents (loopback)")
        let agents = try ["alice", "bob", "carol"].map { try start(options, name: $0, common) }
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(3)) }
        }
        for agent in agents { _ = try joined(agent) }
        for agent in agents {
            guard agent.waitForEvent(timeout: .seconds(10), where: { $0.name == "clock-synced" }) != nil else {
                throw BenchError(description: "\(agent.name) synced no clock")
            }
        }
        usleep(1_000_000)
        agents[0].send("share https://example.com/burst.mp4 id=burst duration=100000")
        usleep(500_000)
        let began = ContinuousClock.now
        for index in 0..<total {
            agents[index % 3].send(index % 2 == 0 ? "play-now" : "pause")
        }
        agents[0].send("pause")
        let written = ContinuousClock.now
        func held(_ agent: AgentProcess) -> (count: Int, position: Double)? {
            guard let status = agent.status(timeout: .seconds(10)),
                let counters = status["counters"] as? [String: Any],
                let position = (status["position"] as? NSNumber)?.doubleValue
            else { return nil }
            let count = ["commandsDelivered", "commandsCoveredByState"].map {
                (counters[$0] as? NSNumber)?.intValue ?? 0
            }.reduce(0, +)
            return (count, position)
        }
        var converged: Duration?
        var last: [(count: Int, position: Double)?] = []
        while ContinuousClock.now - written < .seconds(60) {
            last = agents.map(held)
            let counts = Set(last.map { $0?.count ?? -1 })
            if counts.count == 1, let count = counts.first, count >= total + 2,
                last.allSatisfy({ abs(($0?.position ?? -1) - (last[0]?.position ?? -2)) < 0.001 })
            {
                converged = ContinuousClock.now - written
                break
            }
            usleep(20_000)
        }
        let statuses = agents.map { $0.status(timeout: .seconds(10))?["counters"] as? [String: Any] ?? [:] }
        let adopted = statuses.map { ($0["statesAdopted"] as? NSNumber)?.intValue ?? 0 }
        let queueDrops = statuses.map { ($0["receiveQueueDrops"] as? NSNumber)?.intValue ?? 0 }
        print(
            String(
                format: "  written in %.2f s; ",
                Double((written - began).components.attoseconds) / 1e18
                    + Double((written - began).components.seconds))
                + (converged.map {
                    String(
                        format: "all three on the same %d commands and position %.2f s after the last was written",
                        last.first??.count ?? 0,
                        Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18)
                } ?? "NOT converged within 60 s: \(last.map { $0.map { "\($0.count) at \($0.position)" } ?? "-" })")
        )
        print("  snapshots adopted \(adopted), receive-queue drops \(queueDrops)")
        if converged == nil { throw BenchError(description: "the burst did not converge") }
    }
}

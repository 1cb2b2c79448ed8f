import Foundation
import Glibc

extension Benchmarks {
    /// Three honest agents in a network namespace of this run's own, flooded with `rate`
    /// datagrams a second (junk and hellos of invented peers, from `coplay-bench flood-sender`
    /// inside the namespace) for `seconds`; meanwhile one agent pauses and resumes every 0.5 s.
    /// Prints how long each honest pause took to reach the others, their resident memory against
    /// idle, and what the counters saw.
    public static func flood(_ options: Options, rate: Int) throws {
        guard getuid() == 0 else { throw BenchError(description: "flood needs root for its network namespace") }
        let namespace = "cpflood\(getpid())"
        try Locations.run("/usr/sbin/ip", ["netns", "add", namespace])
        defer { _ = try? Locations.run("/usr/sbin/ip", ["netns", "del", namespace]) }
        try Locations.run("/usr/sbin/ip", ["netns", "exec", namespace, "ip", "link", "set", "lo", "up"])
        let port = 47_700
        let session = "flood-bench"
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(port)", "--session", session]
        let agents = try ["a", "b", "c"].map {
            try AgentProcess(executable: options.executable, name: $0, arguments: common, namespace: namespace)
        }
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
        }
        for agent in agents {
            guard
                agent.waitForEvent(
                    timeout: .seconds(10), where: { $0.name == "peer-joined" && $0.peer("name") as? String != nil })
                    != nil
            else { throw BenchError(description: "the agents did not form a group") }
        }
        usleep(1_500_000)
        agents[0].send("share u id=film")
        agents[0].send("play-now")
        usleep(1_000_000)
        func residentKiB(_ agent: AgentProcess) -> Int { Benchmarks.residentKiB(agent.pid) }
        let idle = agents.map(residentKiB)
        print(
            "flood: 3 agents in namespace \(namespace), \(rate) datagrams/s for \(options.seconds) s (half junk, half hellos of invented peers)"
        )
        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        let benchPath =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        sender.arguments = [
            "netns", "exec", namespace, benchPath, "flood-sender", String(port), String(rate), String(options.seconds),
            session,
        ]
        let senderOutput = Pipe()
        sender.standardOutput = senderOutput
        try sender.run()
        usleep(500_000)
        var delays: [Double] = []
        var lost = 0
        var peak = idle
        let deadline = ContinuousClock.now + .seconds(max(1, options.seconds - 1))
        var pausing = true
        while ContinuousClock.now < deadline {
            let marks = agents.map { $0.allEvents.count }
            agents[0].send(pausing ? "pause" : "play-now")
            let name = pausing ? "paused" : "playing"
            if pausing,
                let origin = agents[0].waitForEvent(from: marks[0], timeout: .seconds(2), where: { $0.name == name })
            {
                for index in 1..<agents.count {
                    if let seen = agents[index].waitForEvent(
                        from: marks[index], timeout: .seconds(2), where: { $0.name == name })
                    {
                        delays.append(Double(seen.atUnixNanos - origin.atUnixNanos) / 1e6)
                    } else {
                        lost += 1
                    }
                }
            }
            for (index, agent) in agents.enumerated() { peak[index] = max(peak[index], residentKiB(agent)) }
            pausing.toggle()
            usleep(250_000)
        }
        sender.waitUntilExit()
        let sent = String(decoding: senderOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        print("  \(sent.trimmingCharacters(in: .whitespacesAndNewlines))")
        print(
            "  honest pause → each other agent paused: \(Distribution(delays).summary(unit: "ms")); not arrived within 2 s: \(lost)"
        )
        for (index, agent) in agents.enumerated() {
            let counters = agent.status()?["counters"] as? [String: Any] ?? [:]
            let drops = counters["drops"] as? [String: Any] ?? [:]
            print(
                "  \(agent.name): resident \(idle[index]) KiB idle, \(peak[index]) KiB at most under the flood (×\(String(format: "%.2f", Double(peak[index]) / Double(max(idle[index], 1))))); "
                    + "received \(counters["datagramsReceived"] ?? 0), dropped \(counters["dropped"] ?? 0) (\(drops.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))), "
                    + "receive-queue drops \(counters["receiveQueueDrops"] ?? 0), kernel drops \(counters["kernelDrops"] ?? 0), peers \(agent.peers()?.count ?? -1)"
            )
        }
        // The targets that are not a matter of speed: a failure, for CI.
        let grown = zip(peak, idle).contains { Double($0) > 2 * Double(max($1, 1)) }
        if lost > 0 || delays.isEmpty || grown {
            throw BenchError(
                description: "flood: \(lost) honest pauses lost, \(delays.count) arrived; memory past 2× idle: \(grown)"
            )
        }
    }
}

import Foundation
import Glibc
import Synchronization

extension Benchmarks {
    /// One group size's figures.
    struct ScaleRow {
        var agents: Int
        /// From the start of the first process to the last agent listing all the others; nil if
        /// some agent never did within the wait (then `seenLeast` is the fewest it listed).
        var allSeeAll: Double?
        /// The same, from the moment the last agent joined (starting 64 processes one after the
        /// other through `ip netns exec` takes a while of its own).
        var allSeeAllAfterLastJoined: Double?
        var seenLeast: Int
        /// Which agent saw all the others last, and the peer it saw last.
        var lastToSeeAll = ""
        /// peer-joined → clock-synced, every agent and peer.
        var firstOffset = Distribution([])
        /// The size of that first offset, in µs: its error, since on one host's loopback every
        /// agent reads the same clock.
        var firstOffsetError = Distribution([])
        var pause = Distribution([])
        var pausesLost = 0
        /// % of one core for the whole group, idle and while pausing.
        var idleCPU = 0.0
        var busyCPU = 0.0
        var receivedPerAgent = Distribution([])
        /// Bytes a second each agent sent in the idle window.
        var sentBytesPerAgent = Distribution([])
        var residentMiB = Distribution([])
        /// Per agent, from its start to 1 s after all saw all: the datagrams of each type it
        /// built and received (from `status`), in the protocol's order of types.
        var formationBuilt: [(type: String, perAgent: Distribution)] = []
        var formationReceived: [(type: String, perAgent: Distribution)] = []
        /// Datagrams dropped unread by the whole group meanwhile: strangers past their share of a
        /// turn, and the kernel's (a full receive buffer).
        var formationDrops = (receiveQueue: 0, kernel: 0)
        /// The whole group's CPU from the first start to then, in seconds of one core, and how
        /// long that was.
        var formationCPUSeconds = 0.0
        var formationSeconds = 0.0
        /// This harness's own CPU meanwhile (starting the processes, reading their events), in
        /// seconds: it runs on the same cores as the group it measures.
        var harnessCPUSeconds = 0.0
        /// The floor in the same idle window: a process joined to the group that only waits in
        /// `poll` and reads each datagram (`coplay-bench bare-receiver`): datagrams a second and
        /// CPU per datagram in µs.
        var bareReceiver: (perSecond: Double, micros: Double)?
    }

    /// N agents started at once in one network namespace of this run's own, for N in `sizes`:
    /// how long until all see all, the first clock offset to each peer, pause propagation,
    /// the group's CPU idle and busy, datagrams received per agent, resident memory. Every wait
    /// is bounded, so a group that never forms is reported, not waited for.
    static func scale(_ options: Options, sizes: [Int]) throws {
        guard getuid() == 0 else { throw BenchError(description: "scale needs root for its network namespace") }
        let namespace = "cpscale\(getpid())"
        try Locations.run("/usr/sbin/ip", ["netns", "add", namespace])
        defer { _ = try? Locations.run("/usr/sbin/ip", ["netns", "del", namespace]) }
        try Locations.run("/usr/sbin/ip", ["netns", "exec", namespace, "ip", "link", "set", "lo", "up"])
        print(
            "scale: N agents started at once in namespace \(namespace) (one host, loopback), \(options.seconds) s idle from \(options.settleSeconds) s after the group formed"
        )
        var rows: [ScaleRow] = []
        for (index, count) in sizes.enumerated() {
            let row = try scaleRow(count, port: 47_800 + index, namespace: namespace, options: options)
            rows.append(row)
            printScaleRow(row)
        }
        try writePlot(
            "scale-cost.svg", options,
            SVGPlot.lines(
                title: "Cost against the number of agents (one 2-core machine)", xLabel: "agents in the group",
                yLabel: "log scale",
                series: [
                    SVGPlot.Series(
                        name: "idle CPU, whole group (% of a core)",
                        points: rows.map { (Double($0.agents), $0.idleCPU) }),
                    SVGPlot.Series(
                        name: "datagrams received per agent per second",
                        points: rows.map { (Double($0.agents), $0.receivedPerAgent.percentile(0.5)) }),
                    SVGPlot.Series(
                        name: "all see all (ms; missing: never)",
                        points: rows.compactMap { row in row.allSeeAll.map { (Double(row.agents), $0) } }),
                ], logY: true))
    }

    private static func printScaleRow(_ row: ScaleRow) {
        func ms(_ value: Double) -> String { value.isFinite ? String(format: "%.1f ms", value) : "-" }
        let seeAll = row.allSeeAll.map { ms($0) } ?? "never (an agent saw only \(row.seenLeast) of \(row.agents - 1))"
        print("  N=\(row.agents)")
        print(
            "    all see all: \(seeAll)"
                + (row.allSeeAllAfterLastJoined.map {
                    " after the first agent started, \(ms($0)) after the last one joined"
                }
                    ?? ""))
        print("    the last to see all: \(row.lastToSeeAll)")
        print("    first clock offset after join: \(row.firstOffset.summary(unit: "ms", decimals: 1))")
        print(
            "    its error (one host: every agent reads the same clock): \(row.firstOffsetError.summary(unit: "µs", decimals: 1))"
        )
        func census(_ counts: [(type: String, perAgent: Distribution)]) -> String {
            let total = counts.map { $0.perAgent.percentile(0.5) }.reduce(0, +)
            return String(format: "%.0f", total) + " ("
                + counts.map { "\($0.type) " + String(format: "%.0f", $0.perAgent.percentile(0.5)) }.joined(
                    separator: ", ") + ")"
        }
        print(
            "    formation, per agent until 1 s after all saw all (p50 of each type): built \(census(row.formationBuilt)); received \(census(row.formationReceived)); the group's CPU: "
                + String(format: "%.2f s in %.2f s", row.formationCPUSeconds, row.formationSeconds)
                + String(format: " (this harness's own: %.2f s)", row.harnessCPUSeconds)
                + "; dropped unread by the group: \(row.formationDrops.receiveQueue) (receive queue), \(row.formationDrops.kernel) (kernel)"
        )
        print(
            "    pause → each other agent paused: \(row.pause.summary(unit: "ms", decimals: 2)); not arrived within 5 s: \(row.pausesLost)"
        )
        print(
            "    CPU, whole group: idle \(String(format: "%.1f", row.idleCPU))% of a core, while pausing \(String(format: "%.1f", row.busyCPU))%"
        )
        print("    datagrams received per agent: \(row.receivedPerAgent.summary(unit: "/s", decimals: 0))")
        print("    bytes sent per agent: \(row.sentBytesPerAgent.summary(unit: "B/s", decimals: 0))")
        // Idle, every agent's CPU goes to what it receives (it sends a few datagrams a second).
        let received = row.receivedPerAgent.sorted.reduce(0, +)
        if received > 0 {
            print(
                "    whole-agent CPU per received datagram, idle: \(String(format: "%.0f", row.idleCPU / 100 / received * 1e6)) µs"
            )
        }
        if let bare = row.bareReceiver {
            print(
                "    the floor, a bare receiver in the group (poll and recvmsg, nothing else): \(String(format: "%.0f", bare.perSecond)) datagrams/s, \(String(format: "%.0f", bare.micros)) µs of CPU per datagram"
            )
        }
        print("    resident memory per agent: \(row.residentMiB.summary(unit: "MiB", decimals: 1))")
    }

    /// The multicast address `scale`'s groups use (a port each), which its bare receiver joins too.
    static let scaleGroupAddress = "239.255.77.1"

    private static func scaleRow(_ count: Int, port: Int, namespace: String, options: Options) throws -> ScaleRow {
        let common = ["--interface", "lo", "--group", "\(scaleGroupAddress):\(port)", "--session", "scale-\(count)"]
        // Started at once: from a few threads, since starting one process (its pipes and reader
        // threads) takes the harness several milliseconds, and 64 in turn took a second.
        let started = Int64(Date().timeIntervalSince1970 * 1e9)
        let harnessCPUAtStart = ownCPUSeconds()
        let slots = Mutex<[Result<AgentProcess, any Error>?]>(Array(repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: count) { index in
            let agent = Result {
                try AgentProcess(
                    executable: options.executable, name: "s\(index)", arguments: common, namespace: namespace)
            }
            slots.withLock { $0[index] = agent }
        }
        let agents = try slots.withLock { $0 }.map { try $0!.get() }
        print(
            "    \(count) processes started in \(String(format: "%.0f", millis(started, Int64(Date().timeIntervalSince1970 * 1e9)))) ms"
        )
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents where agent.waitForExit(timeout: .seconds(3)) == nil { agent.signal(SIGKILL) }
        }
        var row = ScaleRow(agents: count, seenLeast: count - 1)
        // All see all: each agent's own peer-joined events, distinct names, within 20 s.
        var latest: Int64 = 0
        var formed = true
        let formationDeadline = ContinuousClock.now + .seconds(20)
        func remaining(_ deadline: ContinuousClock.Instant) -> Duration { max(.zero, deadline - ContinuousClock.now) }
        for agent in agents {
            var names: Set<String> = []
            let whole = agent.waitForEvent(timeout: remaining(formationDeadline)) { event in
                if event.name == "peer-joined", let name = event.peer("name") as? String { names.insert(name) }
                return names.count >= count - 1
            }
            if let whole, whole.atUnixNanos > latest {
                latest = whole.atUnixNanos
                func joinedAt(_ agent: AgentProcess?) -> Int64? {
                    agent?.allEvents.first { $0.name == "session" }?.atUnixNanos
                }
                let peer = whole.peer("name") as? String ?? "?"
                let peerJoined = joinedAt(agents.first { $0.name == peer })
                row.lastToSeeAll =
                    "\(agent.name), \(String(format: "%.0f", millis(joinedAt(agent) ?? latest, latest))) ms after it joined; the last peer it saw, \(peer), had joined "
                    + (peerJoined.map { String(format: "%.0f ms before", millis($0, latest)) } ?? "?")
            }
            if whole == nil { formed = false }
            row.seenLeast = min(row.seenLeast, names.count)
        }
        row.allSeeAll = formed ? millis(started, latest) : nil
        let lastJoined = agents.compactMap { agent in
            agent.waitForEvent(timeout: .seconds(1)) { $0.name == "session" && $0["state"] as? String == "joined" }?
                .atUnixNanos
        }.max()
        if formed, let lastJoined { row.allSeeAllAfterLastJoined = millis(lastJoined, latest) }
        // What the formation was made of: each agent's datagrams by type, 1 s after all saw all.
        usleep(1_000_000)
        row.formationCPUSeconds =
            Double(agents.map { cpuTicks($0.pid) }.reduce(0, +)) / Double(sysconf(Int32(_SC_CLK_TCK)))
        row.formationSeconds = Date().timeIntervalSince1970 - Double(started) / 1e9
        row.harnessCPUSeconds = ownCPUSeconds() - harnessCPUAtStart
        let formation = agents.map { $0.status(timeout: .seconds(3))?["counters"] as? [String: Any] }
        func byType(_ key: String) -> [(type: String, perAgent: Distribution)] {
            let counts = formation.map { ($0?[key] as? [String: Any]) ?? [:] }
            let types = Array(Set(counts.flatMap(\.keys)))
            // The wire's names in the protocol's order (the harness does not link the core).
            let order = [
                "hello", "heartbeat", "leave", "probe", "probe-reply", "peer-list", "command", "nack", "ready",
            ]
            return types.sorted { (order.firstIndex(of: $0) ?? 99, $0) < (order.firstIndex(of: $1) ?? 99, $1) }.map {
                type in
                (type, Distribution(counts.map { Double(($0[type] as? NSNumber)?.intValue ?? 0) }))
            }
        }
        func total(_ key: String) -> Int { formation.map { ($0?[key] as? NSNumber)?.intValue ?? 0 }.reduce(0, +) }
        row.formationDrops = (total("receiveQueueDrops"), total("kernelDrops"))
        row.formationBuilt = byType("builtByType")
        row.formationReceived = byType("receivedByType")
        // Past the announce bursts and joining heartbeats (`--settle`, counted from all seeing all).
        sleep(UInt32(max(0, options.settleSeconds - 1)))

        // Idle: CPU, datagrams received and bytes sent over `seconds`.
        func counters(_ agent: AgentProcess) -> (received: Int64, sentBytes: Int64) {
            let counters = agent.status(timeout: .seconds(3))?["counters"] as? [String: Any]
            func value(_ key: String) -> Int64 { (counters?[key] as? NSNumber)?.int64Value ?? 0 }
            return (value("datagramsReceived"), value("bytesSent"))
        }
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let bare = Process()
        bare.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        bare.arguments = [
            "netns", "exec", namespace,
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0],
            "bare-receiver", scaleGroupAddress, String(port), String(options.seconds),
        ]
        let bareOutput = Pipe()
        bare.standardOutput = bareOutput
        try bare.run()
        let idleCounters = agents.map(counters)
        let ticks = agents.map { cpuTicks($0.pid) }
        let idleFrom = Date()
        sleep(UInt32(options.seconds))
        let idleSeconds = Date().timeIntervalSince(idleFrom)
        row.idleCPU =
            Double(zip(agents.map { cpuTicks($0.pid) }, ticks).map { $0 - $1 }.reduce(0, +)) / ticksPerSecond
            / idleSeconds * 100
        let idleEnd = agents.map(counters)
        row.receivedPerAgent = Distribution(
            zip(idleEnd, idleCounters).map { Double($0.received - $1.received) / idleSeconds })
        row.sentBytesPerAgent = Distribution(
            zip(idleEnd, idleCounters).map { Double($0.sentBytes - $1.sentBytes) / idleSeconds })
        row.residentMiB = Distribution(agents.map { Double(residentKiB($0.pid)) / 1024 })
        // It stops by itself at the end of the same window.
        bare.waitUntilExit()
        let bareWords = String(decoding: bareOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        if bareWords.count == 3, bareWords[0] == "bare-receiver", let datagrams = Double(bareWords[1]),
            let nanos = Double(bareWords[2]), datagrams > 0
        {
            row.bareReceiver = (datagrams / Double(options.seconds), nanos / datagrams / 1_000)
        }

        // First offset (read now: the last ones come after the group formed): per agent, each
        // peer's clock-synced after its peer-joined.
        var firstOffsets: [Double] = []
        var firstErrors: [Double] = []
        for agent in agents {
            var joinedAt: [String: Int64] = [:]
            for event in agent.allEvents {
                guard let id = event.peer("id") as? String else { continue }
                if event.name == "peer-joined", joinedAt[id] == nil { joinedAt[id] = event.atUnixNanos }
                if event.name == "clock-synced", let joined = joinedAt.removeValue(forKey: id) {
                    firstOffsets.append(millis(joined, event.atUnixNanos))
                    if let offset = event.peer("offsetNanos") as? NSNumber {
                        firstErrors.append(abs(offset.doubleValue) / 1_000)
                    }
                }
            }
        }
        row.firstOffset = Distribution(firstOffsets)
        row.firstOffsetError = Distribution(firstErrors)

        // Busy: an item, then five pauses from different agents, each resumed.
        agents[0].send("share https://example.com/scale.mp4 id=scale")
        usleep(1_000_000)
        let busyTicks = agents.map { cpuTicks($0.pid) }
        let busyFrom = Date()
        var delays: [Double] = []
        for round in 0..<5 {
            let originator = agents[(round * 7) % count]
            originator.send("play-now")
            usleep(700_000)
            let marks = agents.map { $0.allEvents.count }
            originator.send("pause")
            guard
                let applied = originator.waitForEvent(
                    from: marks[(round * 7) % count], timeout: .seconds(5), where: { $0.name == "paused" })
            else {
                row.pausesLost += count - 1
                continue
            }
            let roundDeadline = ContinuousClock.now + .seconds(5)
            for (index, agent) in agents.enumerated() where agent !== originator {
                if let paused = agent.waitForEvent(
                    from: marks[index], timeout: remaining(roundDeadline), where: { $0.name == "paused" })
                {
                    delays.append(millis(applied.atUnixNanos, paused.atUnixNanos))
                } else {
                    row.pausesLost += 1
                }
            }
        }
        let busySeconds = Date().timeIntervalSince(busyFrom)
        row.busyCPU =
            Double(zip(agents.map { cpuTicks($0.pid) }, busyTicks).map { $0 - $1 }.reduce(0, +)) / ticksPerSecond
            / busySeconds * 100
        row.pause = Distribution(delays)
        return row
    }

    static func residentKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

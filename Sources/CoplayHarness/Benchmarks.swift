import Foundation
import Glibc

/// `coplay bench …`: real agent processes on loopback, measured from their own event times.
/// Figures only: nothing here passes or fails, and every run is bounded in rounds and time.
public enum Benchmarks {
    public struct Options: Sendable {
        public var kind: String
        public var rounds: Int
        public var agents: Int
        public var seconds: Int
        public var executable: String
        /// Datagrams a second of the `flood` benchmark.
        public var rate = 20_000
        /// Where `sync` and `players` write their figures as SVG plots (`--svg DIR`), if anywhere.
        public var svgDirectory: String?
        /// `wifi`: coplay alone, without Syncplay beside it (`--coplay-only`).
        public var coplayOnly = false
        /// Group sizes of the `scale` benchmark (`--sizes`).
        public var scaleSizes = [8, 16, 32, 64]
        /// Seconds the `scale` benchmark waits after the group formed before its idle window
        /// (`--settle`): the joining heartbeats of the first 5 s are over by 8; the clock
        /// warm-ups of a large group last longer (about 20 s among 32, 80 s among 64).
        public var settleSeconds = 8
        /// History lengths of the `latejoin` benchmark (`--histories`).
        public var histories = [10, 1_000, 100_000]
        /// Commands a second of the `session` benchmark (`--per-second`).
        public var commandsPerSecond = 1
        /// Commands of the `burst` benchmark (`--commands`).
        public var burstCommands = 5_000
        /// `players`: the players measured beside mpv (`--player vlc`); none is the mpv pair.
        public var players: [String] = []
        /// `players --player`: the figures also as one JSON object, alone on standard output (the
        /// report goes to standard error).
        public var json = false
        public init(kind: String, rounds: Int, agents: Int, seconds: Int, executable: String) {
            self.kind = kind
            self.rounds = rounds
            self.agents = agents
            self.seconds = seconds
            self.executable = executable
        }
    }

    public static func run(_ options: Options) -> Int32 {
        // A session and port of this run's own, on loopback only.
        let port = 40_000 + Int(getpid() % 20_000)
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(port)", "--session", "bench-\(getpid())"]
        // With --json, standard output carries the one object; the report goes to standard error.
        let jsonOutput = options.json ? dup(1) : nil
        if options.json { dup2(2, 1) }
        print(
            "coplay-bench \(options.kind): loopback, group 239.255.77.1:\(port), \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        do {
            switch options.kind {
            case "membership": try membership(options, common: common)
            case "clock": try clock(options, common: common)
            case "overhead": try overhead(options, common: common)
            case "sync": try sync(options, common: common)
            case "players" where options.players.isEmpty: try players(options, common: common)
            case "players": try playersBeside(options, common: common, jsonOutput: jsonOutput)
            case "flood": try flood(options, rate: options.rate)
            case "scale": try scale(options, sizes: options.scaleSizes)
            case "latejoin": try lateJoin(options, common: common, histories: options.histories)
            case "session": try longSession(options, common: common, perSecond: options.commandsPerSecond)
            case "burst": try burst(options, common: common, total: options.burstCommands)
            case "plots":
                try sync(options, common: common)
                try players(options, common: common)
                try lateJoin(options, common: common, histories: options.histories)
                try scale(options, sizes: options.scaleSizes)
            default:
                try membership(options, common: common)
                try clock(options, common: common)
                try overhead(options, common: common)
                try sync(options, common: common)
            }
        } catch {
            print("bench failed: \(error)")
            return 1
        }
        return 0
    }

    struct BenchError: Error, CustomStringConvertible {
        var description: String
    }

    static func start(_ options: Options, name: String, _ arguments: [String]) throws -> AgentProcess {
        try AgentProcess(executable: options.executable, name: name, arguments: arguments)
    }

    static func joined(_ agent: AgentProcess) throws -> AgentEvent {
        guard
            let event = agent.waitForEvent(
                timeout: .seconds(5), where: { $0.name == "session" && $0["state"] as? String == "joined" })
        else {
            throw BenchError(description: "\(agent.name) did not join: \(agent.diagnostics.suffix(3))")
        }
        return event
    }

    /// Waits until `observer` has printed an event about peer `id` that `matches`.
    static func peerEvent(
        _ observer: AgentProcess, _ name: String, id: String, from: Int = 0, timeout: Duration = .seconds(5),
        matches: (AgentEvent) -> Bool = { _ in true }
    ) throws -> AgentEvent {
        guard
            let event = observer.waitForEvent(
                from: from, timeout: timeout,
                where: { $0.name == name && $0.peer("id") as? String == id && matches($0) })
        else {
            throw BenchError(description: "\(observer.name) never printed \(name) for \(id)")
        }
        return event
    }

    static func millis(_ from: Int64, _ to: Int64) -> Double { Double(to - from) / 1e6 }

    /// Discovery, graceful leave and crash detection against `agents` resident agents.
    static func membership(_ options: Options, common: [String]) throws {
        let residents = try (0..<options.agents).map { try start(options, name: "resident\($0)", common) }
        for resident in residents { _ = try joined(resident) }
        var discovery: [Double] = []
        var leave: [Double] = []
        var crash: [Double] = []
        for round in 0..<options.rounds {
            let marks = residents.map { $0.allEvents.count }
            let newcomer = try start(options, name: "newcomer\(round)", common)
            let join = try joined(newcomer)
            let id = join["peer"] as? String ?? ""
            for (index, resident) in residents.enumerated() {
                discovery.append(
                    millis(
                        join.atUnixNanos, try peerEvent(resident, "peer-joined", id: id, from: marks[index]).atUnixNanos
                    ))
            }
            let leaveMarks = residents.map { $0.allEvents.count }
            newcomer.send("leave")
            guard
                let left = newcomer.waitForEvent(
                    timeout: .seconds(2), where: { $0.name == "session" && $0["state"] as? String == "invalidated" })
            else {
                throw BenchError(description: "\(newcomer.name) did not leave")
            }
            for (index, resident) in residents.enumerated() {
                leave.append(
                    millis(
                        left.atUnixNanos,
                        try peerEvent(resident, "peer-left", id: id, from: leaveMarks[index]).atUnixNanos))
            }
            newcomer.closeInput()
            _ = newcomer.waitForExit(timeout: .seconds(2))

            let victimMarks = residents.map { $0.allEvents.count }
            let victim = try start(options, name: "victim\(round)", common)
            let victimID = try joined(victim)["peer"] as? String ?? ""
            for (index, resident) in residents.enumerated() {
                _ = try peerEvent(resident, "peer-joined", id: victimID, from: victimMarks[index])
            }
            usleep(300_000)
            let killedAt = Int64(Date().timeIntervalSince1970 * 1e9)
            victim.signal(SIGKILL)
            for (index, resident) in residents.enumerated() {
                let gone = try peerEvent(
                    resident, "peer-left", id: victimID, from: victimMarks[index], timeout: .seconds(5))
                crash.append(millis(killedAt, gone.atUnixNanos))
            }
            _ = victim.waitForExit(timeout: .seconds(2))
        }
        for resident in residents { resident.closeInput() }
        for resident in residents { _ = resident.waitForExit(timeout: .seconds(2)) }
        print(
            "membership (\(options.agents) resident agents, \(options.rounds) rounds; from the event lines' atUnixNanos):"
        )
        print(
            "  discovery (newcomer joined -> each resident's peer-joined): \(Distribution(discovery).summary(unit: "ms"))"
        )
        print(
            "  graceful leave (leaver's session invalidated -> peer-left): \(Distribution(leave).summary(unit: "ms"))")
        print(
            "  crash detection (SIGKILL -> peer-left reason=timeout):     \(Distribution(crash).summary(unit: "ms", decimals: 1))"
        )
    }

    /// Offset-estimate error with clocks skewed across ±500 ms, and time to the first good estimate.
    static func clock(_ options: Options, common: [String]) throws {
        let count = options.agents
        let skews: [Int64] = (0..<count).map { count == 1 ? 0 : Int64(-500 + 1000 * $0 / (count - 1)) }
        let agents = try (0..<count).map {
            try start(options, name: "clock\($0)", common + ["--clock-skew-ms", String(skews[$0])])
        }
        var idToSkew: [String: Int64] = [:]
        for (index, agent) in agents.enumerated() {
            idToSkew[try joined(agent)["peer"] as? String ?? ""] = skews[index]
        }
        var firstEstimateMillis: [Double] = []
        var firstErrors: [Double] = []
        for (index, agent) in agents.enumerated() {
            for (id, skew) in idToSkew where skew != skews[index] || idToSkew.count < count {
                guard let joinedPeer = try? peerEvent(agent, "peer-joined", id: id),
                    let synced = try? peerEvent(agent, "clock-synced", id: id)
                else { continue }
                firstEstimateMillis.append(millis(joinedPeer.atUnixNanos, synced.atUnixNanos))
                if let offset = (synced.peer("offsetNanos") as? NSNumber)?.int64Value {
                    firstErrors.append(Double(abs(offset - (skew - skews[index]) * 1_000_000)) / 1000)
                }
            }
        }
        var errors: [Double] = []
        let deadline = Date().addingTimeInterval(Double(options.seconds))
        while Date() < deadline {
            for (index, agent) in agents.enumerated() {
                for peer in agent.peers() ?? [] {
                    guard let id = peer["id"] as? String, let skew = idToSkew[id],
                        let offset = (peer["offsetNanos"] as? NSNumber)?.int64Value,
                        peer["clockSynced"] as? Bool == true
                    else { continue }
                    errors.append(Double(abs(offset - (skew - skews[index]) * 1_000_000)) / 1000)
                }
            }
            usleep(250_000)
        }
        for agent in agents { agent.closeInput() }
        for agent in agents { _ = agent.waitForExit(timeout: .seconds(2)) }
        print(
            "clock offsets (\(count) agents skewed \(skews.map { "\($0)" }.joined(separator: "/")) ms, polled every 250 ms for \(options.seconds) s):"
        )
        print(
            "  estimate error |estimate - true skew difference|: \(Distribution(errors).summary(unit: "µs", decimals: 1))"
        )
        print(
            "  first good estimate after discovery:              \(Distribution(firstEstimateMillis).summary(unit: "ms", decimals: 1))"
        )
        print(
            "  error of that first estimate:                     \(Distribution(firstErrors).summary(unit: "µs", decimals: 1))"
        )
    }

    /// Bytes sent, CPU and memory of idle agents.
    static func overhead(_ options: Options, common: [String]) throws {
        let agents = try (0..<options.agents).map { try start(options, name: "idle\($0)", common) }
        for agent in agents { _ = try joined(agent) }
        sleep(8)  // past the announce burst and the clock warm-up (8 burst + 10 samples 0.5 s apart)
        func sample() -> [(bytes: Int64, datagrams: Int64, cpuTicks: Int64)] {
            agents.map { agent in
                let counters = agent.status()?["counters"] as? [String: Any]
                return (
                    (counters?["bytesSent"] as? NSNumber)?.int64Value ?? 0,
                    (counters?["datagramsSent"] as? NSNumber)?.int64Value ?? 0,
                    cpuTicks(agent.pid)
                )
            }
        }
        let before = sample()
        let started = Date()
        sleep(UInt32(options.seconds))
        let after = sample()
        let elapsed = Date().timeIntervalSince(started)
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        var wire: [Double] = []
        var cpu: [Double] = []
        for (first, last) in zip(before, after) {
            let payload = Double(last.bytes - first.bytes)
            let datagrams = Double(last.datagrams - first.datagrams)
            wire.append((payload + 28 * datagrams) / elapsed)  // + IPv4 and UDP headers
            cpu.append(Double(last.cpuTicks - first.cpuTicks) / ticksPerSecond / elapsed * 100)
        }
        let rss = agents.map { Double(residentKilobytes($0.pid)) / 1024 }
        for agent in agents { agent.closeInput() }
        for agent in agents { _ = agent.waitForExit(timeout: .seconds(2)) }
        print("idle overhead (\(options.agents) agents, \(options.seconds) s, after 8 s of clock warm-up):")
        print(
            "  sent per agent (payload + 28 B IPv4/UDP header per datagram): \(Distribution(wire).summary(unit: "B/s", decimals: 0))"
        )
        print("  CPU per agent:  \(Distribution(cpu).summary(unit: "% of a core", decimals: 2))")
        print("  RSS per agent:  \(Distribution(rss).summary(unit: "MiB", decimals: 1))")
    }

    /// Sync error after coordinated starts, and how fast a pause reaches every agent.
    static func sync(_ options: Options, common: [String]) throws {
        let count = options.agents
        let skews: [Int64] = (0..<count).map { count == 1 ? 0 : Int64(-500 + 1000 * $0 / (count - 1)) }
        let agents = try (0..<count).map {
            try start(options, name: "sync\($0)", common + ["--clock-skew-ms", String(skews[$0])])
        }
        for agent in agents { _ = try joined(agent) }
        for agent in agents {
            var synced = 0
            // (The predicate sees each event once, under the agent's lock: it must not call back into the agent.)
            let done = agent.waitForEvent(timeout: .seconds(10)) { event in
                if event.name == "clock-synced" { synced += 1 }
                return synced >= count - 1
            }
            guard done != nil else { throw BenchError(description: "\(agent.name) did not sync with everyone") }
        }
        agents[0].send("share https://example.com/bench.mp4 id=bench")
        for agent in agents {
            guard agent.waitForEvent(timeout: .seconds(5), where: { $0.name == "item-changed" }) != nil else {
                throw BenchError(description: "\(agent.name) never loaded the shared item")
            }
        }
        var spreads: [Double] = []
        var pairwise: [Double] = []
        var propagation: [Double] = []
        var allApplied: [Double] = []
        for round in 0..<options.rounds {
            let marks = agents.map { $0.allEvents.count }
            agents[round % count].send("play")
            for (index, agent) in agents.enumerated() {
                guard
                    agent.waitForEvent(from: marks[index], timeout: .seconds(6), where: { $0.name == "playing" }) != nil
                else {
                    throw BenchError(description: "\(agent.name) did not start in round \(round)")
                }
            }
            usleep(300_000)
            // Positions from each agent's own status, extrapolated to one true instant.
            var samples: [(position: Double, rate: Double, at: Int64)] = []
            for agent in agents {
                guard let status = agent.status(), let position = (status["position"] as? NSNumber)?.doubleValue,
                    let rate = (status["rate"] as? NSNumber)?.doubleValue,
                    let at = (status["sampledAtUnixNanos"] as? NSNumber)?.int64Value
                else { throw BenchError(description: "\(agent.name) gave no status") }
                samples.append((position, rate, at))
            }
            let instant = samples.map(\.at).max() ?? 0
            let positions = samples.map { $0.position + $0.rate * Double(instant - $0.at) / 1e9 }
            spreads.append(((positions.max() ?? 0) - (positions.min() ?? 0)) * 1000)
            for first in positions.indices {
                for second in positions.indices where second > first {
                    pairwise.append(abs(positions[first] - positions[second]) * 1000)
                }
            }

            let pauseMarks = agents.map { $0.allEvents.count }
            let originator = agents[(round + 1) % count]
            originator.send("pause")
            guard
                let applied = originator.waitForEvent(
                    from: pauseMarks[(round + 1) % count], timeout: .seconds(3), where: { $0.name == "paused" })
            else {
                throw BenchError(description: "\(originator.name) did not pause")
            }
            var latest = applied.atUnixNanos
            for (index, agent) in agents.enumerated() where agent !== originator {
                guard
                    let paused = agent.waitForEvent(
                        from: pauseMarks[index], timeout: .seconds(3), where: { $0.name == "paused" })
                else {
                    throw BenchError(description: "\(agent.name) never paused in round \(round)")
                }
                propagation.append(millis(applied.atUnixNanos, paused.atUnixNanos))
                latest = max(latest, paused.atUnixNanos)
            }
            allApplied.append(millis(applied.atUnixNanos, latest))
        }
        for agent in agents { agent.closeInput() }
        for agent in agents { _ = agent.waitForExit(timeout: .seconds(2)) }
        print(
            "coordinated playback (\(count) agents skewed \(skews.map { "\($0)" }.joined(separator: "/")) ms, \(options.rounds) rounds):"
        )
        print(
            "  sync error 300 ms after each start, largest difference between any two agents: \(Distribution(spreads).summary(unit: "ms"))"
        )
        print(
            "  sync error, every pair of agents:                                          \(Distribution(pairwise).summary(unit: "ms"))"
        )
        print(
            "  pause propagation (originator applies it -> each other agent applies it):    \(Distribution(propagation).summary(unit: "ms"))"
        )
        print(
            "  pause applied on all \(count) agents:                                          \(Distribution(allApplied).summary(unit: "ms"))"
        )
        try writePlot(
            "pause-propagation.svg", options,
            SVGPlot.distribution(
                title: "Pause propagation among \(count) agents (loopback)",
                xLabel: "ms from the originator applying a pause to another agent applying it",
                samples: [("coplay, \(count) agents", propagation)], logX: true))
    }

    /// Writes one plot into `--svg DIR`, if given, and says where.
    static func writePlot(_ name: String, _ options: Options, _ svg: String) throws {
        guard let directory = options.svgDirectory else { return }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
        try svg.write(toFile: path, atomically: true, encoding: .utf8)
        print("  plot: \(path)")
    }

    static func cpuTicks(_ pid: Int32) -> Int64 {
        // utime and stime: fields 14 and 15 of the whole line.
        guard let fields = ProcessTable.stat(of: pid)?.fields, fields.count > 13,
            let user = Int64(fields[11]), let system = Int64(fields[12])
        else { return 0 }
        return user + system
    }

    /// This process's CPU so far, user and system, in seconds.
    public static func ownCPUSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    static func residentKilobytes(_ pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
}

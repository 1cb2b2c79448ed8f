import Foundation
import Glibc

extension Benchmarks {
    /// `coplay-bench relay`: two homes joined only by a NATS cluster. A `Tools/lan` LAN of two
    /// hosts on the `wan` model (two sites, 20 ms one way with jitter and 0.5% loss; multicast
    /// stays within a site), a nats-server at each site clustered over the wan, each site's agent
    /// connected to its own server with the group key. Prints:
    /// - how long after an agent starts the other site's agent is seen, both ways;
    /// - the relay traffic of an idle agent, written and read;
    /// - with a headless mpv at each site: offsets between the players, pause and unpause set in
    ///   one mpv → the other site's following;
    /// - fail-over: the server the second site's agent uses is killed while the first site
    ///   issues commands; time until it is connected again, and commands lost.
    public static func relay(_ options: Options, trials: Int, bench: String) throws {
        guard getuid() == 0 else { throw BenchError(description: "relay makes network namespaces: run it as root") }
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        guard
            let server = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { throw BenchError(description: "nats-server is not installed (apt-get install nats-server)") }
        guard Locations.onPath("ethtool") != nil else {
            throw BenchError(description: "the hub needs ethtool (apt-get install ethtool)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-relay-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = directory.appendingPathComponent("pattern.mkv").path
        let seconds = max(options.seconds, 5)
        try MpvClient.makeTestMedia(at: media, seconds: 60 + seconds + trials * 6 + 60)
        let key = directory.appendingPathComponent("group.key").path
        let (status, generated) = try Locations.run(options.executable, ["keygen"])
        guard status == 0 else { throw BenchError(description: "coplay keygen failed: \(generated)") }
        try generated.write(toFile: key, atomically: true, encoding: .utf8)
        print(
            "relay: two sites on the test LAN's wan model (20 ms one way, jitter, 0.5% loss; no multicast between"
                + " them), a nats-server at each, clustered, token auth; \(trials) trials")
        try onLAN(hosts: 2, link: "wan", dtim: 1, bench: bench) { prefix in
            let cluster = SiteServers(server: server, prefix: prefix, directory: directory)
            defer { cluster.stop() }
            try cluster.start(0)
            try cluster.start(1)
            usleep(1_500_000)  // the route across the wan
            func agent(_ site: Int, name: String, mpv socket: String? = nil) throws -> AgentProcess {
                var arguments = [
                    "--interface", "eth0", "--session", "relay-\(getpid())", "--key-file", key, "--relay",
                    cluster.url(site),
                ]
                if let socket {
                    arguments += [
                        "--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null", "--mpv-socket", socket,
                    ]
                }
                return try AgentProcess(
                    executable: options.executable, name: name, arguments: arguments,
                    namespace: "\(prefix)-h\(site + 1)")
            }

            // Seen after start, and idle traffic (simulated players).
            let resident = try agent(0, name: "home-a")
            defer {
                resident.closeInput()
                _ = resident.waitForExit(timeout: .seconds(5))
            }
            usleep(1_000_000)
            var seen: [Double] = []
            var idle: (written: Double, read: Double) = (0, 0)
            for trial in 0..<trials {
                let mark = resident.allEvents.count
                let started = MpvClient.unixNanos()
                let visitor = try agent(1, name: "home-b")
                let sawA = visitor.waitForEvent(timeout: .seconds(5)) { $0.name == "peer-joined" }
                let sawB = resident.waitForEvent(from: mark, timeout: .seconds(5)) { $0.name == "peer-joined" }
                if let sawA, let sawB {
                    seen.append(Double(max(sawA.atUnixNanos, sawB.atUnixNanos) - started) / 1e6)
                } else {
                    print("    trial \(trial): the sites did not see each other within 5 s")
                }
                if trial == trials - 1 {
                    usleep(8_000_000)  // the clocks' warm-up over
                    let before = [resident, visitor].compactMap { relayCounters($0) }
                    usleep(10_000_000)
                    let after = [resident, visitor].compactMap { relayCounters($0) }
                    if before.count == 2, after.count == 2 {
                        idle.written = Double(zip(before, after).map { $1.written - $0.written }.max()!) / 10
                        idle.read = Double(zip(before, after).map { $1.read - $0.read }.max()!) / 10
                    }
                }
                visitor.closeInput()
                _ = visitor.waitForExit(timeout: .seconds(5))
                usleep(300_000)
            }
            print("  the other site seen after an agent starts (both ways): \(Distribution(seen).summary(unit: "ms"))")
            print(
                "  idle relay traffic per agent (2 agents): \(Int(idle.written)) B/s written, \(Int(idle.read)) B/s read"
            )

            // Real players at both sites.
            var agents: [AgentProcess] = []
            var players: [MpvClient] = []
            defer {
                for agent in agents { agent.closeInput() }
                for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
            }
            resident.closeInput()
            _ = resident.waitForExit(timeout: .seconds(5))
            for site in 0...1 {
                let socket = directory.appendingPathComponent("mpv-\(site).sock").path
                agents.append(try agent(site, name: "mpv-\(site == 0 ? "a" : "b")", mpv: socket))
                players.append(try MpvClient(path: socket))
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, (agents[0].peers()?.count ?? 0) < 1 { usleep(250_000) }
            agents[0].send("share \(media) id=pattern")
            usleep(2_000_000)
            agents[0].send("play")
            usleep(12_000_000)
            let figures = try measureAir(players, seconds: seconds, trials: trials)
            print("  mpv at each site, coplay through the relay:")
            print("    offset |a-b|:   \(figures.offsets.summary(unit: "ms"))")
            print("    pause → other site: \(figures.pause.summary(unit: "ms"))")
            print("    unpause → other site playing: \(figures.unpause.summary(unit: "ms"))")
            print("    commands lost (a player that never followed): \(figures.lost) of \(figures.trials)")

            // Fail-over: kill the server site B's agent uses; site A issues commands meanwhile.
            var failovers: [Double] = []
            var lost = 0
            for trial in 0..<trials {
                guard let before = relayStatus(agents[1]), let name = before.server,
                    let site = cluster.site(of: name)
                else {
                    print("    fail-over trial \(trial): site B's agent is not connected")
                    continue
                }
                let killed = MpvClient.unixNanos()
                cluster.kill(site)
                agents[0].send("seek \(20 + trial)")
                agents[0].send("pause")
                var moved: Double?
                let until = ContinuousClock.now + .seconds(5)
                while ContinuousClock.now < until {
                    if let now = relayStatus(agents[1]), now.connected, now.reconnections > before.reconnections {
                        moved = Double(MpvClient.unixNanos() - killed) / 1e6
                        break
                    }
                    usleep(20_000)
                }
                if let moved {
                    failovers.append(moved)
                } else {
                    print("    fail-over trial \(trial): not reconnected in 5 s")
                }
                var agreed = false
                let settle = ContinuousClock.now + .seconds(5)
                while ContinuousClock.now < settle {
                    let delivered = agents.compactMap { counter($0, "commandsDelivered") }
                    if delivered.count == 2, delivered[0] == delivered[1] {
                        agreed = true
                        break
                    }
                    usleep(100_000)
                }
                if !agreed { lost += 1 }
                agents[0].send("play")
                try cluster.start(site)
                usleep(2_000_000)  // the route again, before the next kill
            }
            print(
                "  fail-over after the connected server is killed: \(Distribution(failovers).summary(unit: "ms")); trials"
                    + " whose commands did not reach both: \(lost) of \(trials)")
            let departures = agents.map { $0.allEvents.count { $0.name == "peer-left" } }.reduce(0, +)
            print("  peer-left events among the mpv agents: \(departures)")
        }
    }

    private static func relayStatus(_ agent: AgentProcess) -> (
        server: String?, connected: Bool, reconnections: Int
    )? {
        guard let relay = agent.status(timeout: .seconds(1))?["relay"] as? [String: Any] else { return nil }
        return (
            relay["server"] as? String, relay["connected"] as? Bool ?? false,
            (relay["reconnections"] as? NSNumber)?.intValue ?? 0
        )
    }

    private static func relayCounters(_ agent: AgentProcess) -> (written: Int, read: Int)? {
        guard let relay = agent.status()?["relay"] as? [String: Any],
            let written = (relay["bytesWritten"] as? NSNumber)?.intValue,
            let read = (relay["bytesRead"] as? NSNumber)?.intValue
        else { return nil }
        return (written, read)
    }

    private static func counter(_ agent: AgentProcess, _ name: String) -> Int? {
        ((agent.status(timeout: .seconds(1))?["counters"] as? [String: Any])?[name] as? NSNumber)?.intValue
    }

    /// A nats-server at each site of a two-host `wan` LAN (host 1 and host 2), clustered.
    private final class SiteServers {
        let server: String
        let prefix: String
        let directory: URL
        let token = "bench-\(getpid())"
        private var processes: [Int: Process] = [:]

        init(server: String, prefix: String, directory: URL) {
            self.server = server
            self.prefix = prefix
            self.directory = directory
        }

        func address(_ site: Int) -> String { "10.77.0.\(site + 1)" }
        func url(_ site: Int) -> String { "nats://\(token)@\(address(site)):4222" }
        func site(of name: String) -> Int? { (0...1).first { name == "\(address($0)):4222" } }

        func start(_ site: Int) throws {
            let other = address(1 - site)
            let home = directory.appendingPathComponent("nats-\(site)")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            processes[site] = try spawnInNamespace(
                "\(prefix)-h\(site + 1)",
                [
                    server, "-a", address(site), "-p", "4222", "--auth", token, "--cluster_name", "coplay-bench",
                    "--cluster", "nats://\(address(site)):6222", "--routes", "nats://\(other):6222",
                ], home: home.path)
        }

        func kill(_ site: Int) {
            guard let process = processes.removeValue(forKey: site) else { return }
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        func stop() { for site in Array(processes.keys) { kill(site) } }
    }
}

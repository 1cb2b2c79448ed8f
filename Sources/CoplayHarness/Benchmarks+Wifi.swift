import Foundation
import Glibc
import Synchronization

extension Benchmarks {
    /// What one group of players measured on one link.
    struct AirFigures {
        var system: String
        var link: String
        var hosts: Int
        /// |player 1 − player k| for every other player, sampled.
        var offsets = Distribution([])
        /// How well each offset reading itself was timed (half its two round trips).
        var offsetUncertainties = Distribution([])
        /// Pause (unpause) set in player 1 → each other player paused (playing), ms.
        var pause = Distribution([])
        var unpause = Distribution([])
        /// Trials in which some player never followed (within 3 s).
        var lost = 0
        var trials = 0
        /// `peer-left` events while every agent was alive (coplay only).
        var falseDepartures: Int?
        /// When each pause was set in player 1, and when each other player followed (debugging).
        var pausePresses: [(pressed: Int64, followed: [Int64])] = []
    }

    /// `coplay-bench wifi`: `hosts` hosts of a `Tools/lan` LAN behind its forwarding hub, for each
    /// link model, one headless mpv on every host; coplay agents drive them, then (when Debian's
    /// Syncplay is installed) Syncplay's server on host 1 and its clients on the others. Prints
    /// offsets between the players, pause and unpause set in one mpv → the others following,
    /// false departures and lost commands, and writes wifi-pause.svg with --svg.
    public static func wifi(
        _ options: Options, hostCounts: [Int], links: [String], dtim: Int, trials: Int, bench: String
    ) throws {
        guard getuid() == 0 else { throw BenchError(description: "wifi makes network namespaces: run it as root") }
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        guard Locations.onPath("ethtool") != nil else {
            throw BenchError(description: "the hub needs ethtool (apt-get install ethtool)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-wifi-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = directory.appendingPathComponent("pattern.mkv").path
        let seconds = max(options.seconds, 5)
        try MpvClient.makeTestMedia(at: media, seconds: 40 + seconds + trials * 4 + 60)
        let syncplay =
            !options.coplayOnly && Locations.onPath("syncplay") != nil && Locations.onPath("syncplay-server") != nil
        print(
            "wifi: \(hostCounts.map(String.init).joined(separator: " and ")) hosts behind the test LAN's hub"
                + " (\(links.joined(separator: ", ")); wifi with DTIM period \(dtim)), one mpv (vo=null, ao=null) on"
                + " each; \(trials) trials each")
        if !syncplay, !options.coplayOnly {
            print("  (Syncplay not measured: it needs Debian's syncplay and syncplay-server)")
        }
        var all: [AirFigures] = []
        for link in links {
            for hosts in hostCounts {
                all.append(
                    try onLAN(hosts: hosts, link: link, dtim: dtim, bench: bench) { prefix in
                        try airCoplay(
                            options, prefix: prefix, hosts: hosts, link: link, media: media, directory: directory,
                            seconds: seconds, trials: trials)
                    })
                report(all.last!)
                if syncplay {
                    all.append(
                        try onLAN(hosts: hosts, link: link, dtim: dtim, bench: bench) { prefix in
                            try airSyncplay(
                                prefix: prefix, hosts: hosts, link: link, media: media, directory: directory,
                                seconds: seconds, trials: trials)
                        })
                    report(all.last!)
                }
            }
        }
        try writePlot(
            "wifi-pause.svg", options,
            SVGPlot.distribution(
                title: "Pause set in one mpv → the others paused, behind the test LAN's hub", xLabel: "ms (log)",
                samples: all.map { ("\($0.system), \($0.link), \($0.hosts) hosts", $0.pause.sorted) }, logX: true))
    }

    private static func report(_ figures: AirFigures) {
        print("  \(figures.system), \(figures.link), \(figures.hosts) hosts:")
        print("    offset |1-k|:   \(figures.offsets.summary(unit: "ms"))")
        print("      (each reading timed to within: \(figures.offsetUncertainties.summary(unit: "ms")))")
        print("    pause → others: \(figures.pause.summary(unit: "ms"))")
        print("      tail: \(figures.pause.tail(above: 20, unit: "ms"))")
        print("    unpause → others playing: \(figures.unpause.summary(unit: "ms"))")
        let departures = figures.falseDepartures.map { ", false departures \($0)" } ?? ""
        print("    commands lost (a player that never followed): \(figures.lost) of \(figures.trials)\(departures)")
    }

    /// A `Tools/lan` LAN on a hub with `link` (nil: on a bridge), for the duration of `body`.
    static func onLAN<T>(hosts: Int, link: String?, dtim: Int, bench: String, _ body: (String) throws -> T)
        throws -> T
    {
        let prefix = "cpw\(getpid() % 10_000)"
        // Tools/lan of the checkout this benchmark was built in: up from its build folder.
        var folder = URL(fileURLWithPath: bench).deletingLastPathComponent()
        while folder.path != "/", !FileManager.default.isExecutableFile(atPath: folder.path + "/Tools/lan") {
            folder.deleteLastPathComponent()
        }
        let lan = folder.path + "/Tools/lan"
        guard FileManager.default.isExecutableFile(atPath: lan) else {
            throw BenchError(description: "no Tools/lan above \(bench)")
        }
        let environment = ["LAN_PREFIX": prefix, "COPLAY_BENCH": bench, "LAN_HUB_SECONDS": "1800"]
        let shape = link.map { ["--link", $0, "--dtim", String(dtim)] } ?? []
        let (status, output) = try Locations.run(lan, ["up", String(hosts)] + shape, environment: environment)
        guard status == 0 else { throw BenchError(description: "Tools/lan up failed: \(output)") }
        defer {
            if let (_, down) = try? Locations.run(lan, ["down"], environment: environment) {
                for line in down.split(separator: "\n") where line.hasPrefix("hub:") { print("    \(line)") }
            }
        }
        return try body(prefix)
    }

    private static func airCoplay(
        _ options: Options, prefix: String, hosts: Int, link: String, media: String, directory: URL, seconds: Int,
        trials: Int
    ) throws -> AirFigures {
        var agents: [AgentProcess] = []
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
        }
        var players: [MpvClient] = []
        for host in 1...hosts {
            let socket = directory.appendingPathComponent("coplay-\(link)-\(hosts)-\(host).sock").path
            agents.append(
                try AgentProcess(
                    executable: options.executable, name: "h\(host)",
                    arguments: [
                        "--interface", "eth0", "--session", "air-\(getpid())", "--player", "mpv", "--mpv-option",
                        "vo=null", "--mpv-option", "ao=null", "--mpv-socket", socket,
                    ], namespace: "\(prefix)-h\(host)"))
            players.append(try MpvClient(path: socket))
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline, (agents[0].peers()?.count ?? 0) < hosts - 1 { usleep(250_000) }
        agents[0].send("share \(media) id=pattern")
        usleep(2_000_000)
        agents[0].send("play")
        // The clocks' warm-up, and on the air each agent's verdict on its multicast path.
        usleep(12_000_000)
        var figures = try measureAir(players, seconds: seconds, trials: trials)
        (figures.system, figures.link, figures.hosts) = ("coplay", link, hosts)
        figures.falseDepartures = agents.map { $0.allEvents.count { $0.name == "peer-left" } }.reduce(0, +)
        if ProcessInfo.processInfo.environment["COPLAY_BENCH_DEBUG"] != nil {
            // The hosts share one clock: every offset an agent estimates is its error.
            for (index, agent) in agents.enumerated() {
                let estimates = (agent.peers() ?? []).map { peer in
                    let offset = (peer["offsetNanos"] as? NSNumber)?.doubleValue ?? .nan
                    let error = (peer["offsetErrorNanos"] as? NSNumber)?.doubleValue ?? .nan
                    let delay = (peer["delayNanos"] as? NSNumber)?.doubleValue ?? .nan
                    return String(format: "%+.3f±%.3f (delay %.3f)", offset / 1e6, error / 1e6, delay / 1e6)
                }
                print("    h\(index + 1)'s clock estimates, ms: \(estimates.joined(separator: ", "))")
            }
            for (pressed, followed) in figures.pausePresses {
                let events = agents.map { agent in
                    agent.allEvents.first { $0.name == "paused" && $0.atUnixNanos > pressed }.map {
                        String(format: "%.2f", Double($0.atUnixNanos - pressed) / 1e6)
                    } ?? "-"
                }
                print(
                    "    pause: agents' paused events \(events), players paused \(followed.map { String(format: "%.2f", Double($0 - pressed) / 1e6) })"
                )
            }
        }
        return figures
    }

    private static func airSyncplay(
        prefix: String, hosts: Int, link: String, media: String, directory: URL, seconds: Int, trials: Int
    ) throws -> AirFigures {
        func spawn(_ host: Int, _ arguments: [String], home: URL) throws -> Process {
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            return try spawnInNamespace("\(prefix)-h\(host)", arguments, home: home.path)
        }
        var processes: [Process] = []
        var players: [MpvClient] = []
        defer {
            // Syncplay's clients do not end on SIGTERM, and their mpv outlives them.
            for player in players { player.command(["quit"]) }
            for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            for process in processes { process.waitUntilExit() }
        }
        let port = "18999"
        processes.append(
            try spawn(
                1, ["syncplay-server", "--port", port, "--disable-ready", "--disable-chat"],
                home: directory.appendingPathComponent("sp-server-\(link)-\(hosts)")))
        usleep(1_500_000)
        for host in 2...hosts {
            let socket = directory.appendingPathComponent("syncplay-\(link)-\(hosts)-\(host).sock").path
            processes.append(
                try spawn(
                    host,
                    [
                        "syncplay", "--no-gui", "--no-store", "-a", "10.77.0.1:\(port)", "-n", "h\(host)", "-r",
                        "air", "--player-path", Locations.onPath("mpv")!, media, "--", "--input-ipc-server=\(socket)",
                        "--vo=null", "--ao=null",
                    ], home: directory.appendingPathComponent("sp-\(link)-\(hosts)-\(host)")))
            players.append(try MpvClient(path: socket, timeout: .seconds(20)))
        }
        usleep(4_000_000)
        guard processes.allSatisfy(\.isRunning) else { throw BenchError(description: "a Syncplay process exited") }
        players[0].set("pause", false)
        usleep(8_000_000)
        var figures = try measureAir(players, seconds: seconds, trials: trials)
        (figures.system, figures.link, figures.hosts) = ("Syncplay", link, hosts)
        return figures
    }

    /// Offsets for `seconds`, then `trials` pauses and unpauses set in the first player.
    static func measureAir(_ players: [MpvClient], seconds: Int, trials: Int) throws -> AirFigures {
        var figures = AirFigures(system: "", link: "", hosts: players.count)
        let debug = ProcessInfo.processInfo.environment["COPLAY_BENCH_DEBUG"] != nil
        let first = players[0]
        var offsets: [Double] = []
        var uncertainties: [Double] = []
        for _ in 0..<(seconds * 5) {
            for other in players.dropFirst() {
                // The best of five readings (`audioOffset`): 8 mpv, 8 agents and the hub share
                // this machine's two cores, and a reading taken alone was off by up to half a
                // delayed reply's round trip.
                guard let reading = first.audioOffset(of: other, attempts: 5) else { continue }
                offsets.append(abs(reading.offset) * 1000)
                uncertainties.append(reading.uncertainty * 1000)
            }
            usleep(200_000)
        }
        figures.offsets = Distribution(offsets)
        figures.offsetUncertainties = Distribution(uncertainties)
        let observers = try players.dropFirst().map { player in
            let observer = try MpvClient(path: player.path)
            observer.command(["observe_property", 1, "pause"])
            return observer
        }
        var (pauses, unpauses): ([Double], [Double]) = ([], [])
        for trial in 0..<trials {
            for (state, into) in [(true, 0), (false, 1)] {
                // Each observer waits on a thread of its own, and stamps its player's change when
                // it is read: read one after another, every change but the first was stamped when
                // the one before it had been read (among 8 hosts, all seven within 0.1 ms of the
                // last).
                let stamps = Stamps()
                let waiting = DispatchGroup()
                for (index, observer) in observers.enumerated() {
                    let stale = observer.drainPending()
                    if debug, !stale.isEmpty { print("    observer \(index + 2) had before the press: \(stale)") }
                }
                for (index, observer) in observers.enumerated() {
                    waiting.enter()
                    Thread {
                        if let changed = observer.waitForChange(of: "pause", to: state, timeout: .seconds(3)) {
                            stamps.values.withLock { $0[index] = changed }
                        }
                        waiting.leave()
                    }.start()
                }
                usleep(20_000)  // every observer blocked in its read
                let pressed = MpvClient.unixNanos()
                first.set("pause", state)
                waiting.wait()
                var lost = false
                var followed: [Int64] = []
                defer { if into == 0 { figures.pausePresses.append((pressed, followed)) } }
                for index in observers.indices {
                    guard let changed = stamps.values.withLock({ $0[index] }) else {
                        lost = true
                        continue
                    }
                    followed.append(changed)
                    if into == 0 {
                        pauses.append(Double(changed - pressed) / 1e6)
                    } else {
                        unpauses.append(Double(changed - pressed) / 1e6)
                    }
                }
                if lost { figures.lost += 1 }
                // Presses a fixed time apart would meet the beacon at one phase every time.
                usleep(900_000 + UInt32((trial * 2 + into) * 137_000 % 400_000))
            }
        }
        figures.trials = trials * 2
        figures.pause = Distribution(pauses)
        figures.unpause = Distribution(unpauses)
        return figures
    }
}

/// What each observer thread saw, by observer.
private final class Stamps: Sendable {
    let values = Mutex<[Int: Int64]>([:])
}

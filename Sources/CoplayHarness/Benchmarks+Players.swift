import Foundation
import Glibc

extension Benchmarks {
    /// Two mpv players kept in sync by something (coplay, or Syncplay for comparison), read and
    /// disturbed through separate IPC clients on their sockets.
    struct PlayerPair {
        var name: String
        var a: MpvClient
        var b: MpvClient
        /// Starts playback again after a pause.
        var resume: () -> Void
        /// Its own count of corrections, when it reports one.
        var corrections: () -> String?
    }

    struct PlayerFigures {
        var steady = Distribution([])
        /// |A-B| in ms against seconds since the steady measurement began.
        var steadySeries: [(x: Double, y: Double)] = []
        var pause = Distribution([])
        /// Unpause set in mpv A → mpv B playing (press-to-playing).
        var unpause = Distribution([])
        var disturbance = Distribution([])
        var recovery = Distribution([])
        var recovered = 0
        var disturbances = 0
    }

    /// Two agents on loopback, each driving its own headless mpv; then, if Syncplay is installed,
    /// the same measurements on two Syncplay clients and their server, in a private network
    /// namespace. Prints the steady offset between the players, the propagation of a pause
    /// pressed in mpv A to mpv B, and the time back in sync after mpv B is stopped for 200 ms.
    static func players(_ options: Options, common: [String]) throws {
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = directory.appendingPathComponent("pattern.mkv").path
        let seconds = max(options.seconds, 10)
        try MpvClient.makeTestMedia(at: media, seconds: seconds + 30 + options.rounds * 3 + 60)
        print("players: two mpv (vo=null, ao=null); audio-pts read over each one's IPC socket by a separate client")

        let coplay = try withCoplay(options, common: common, media: media, directory: directory) {
            try measure($0, seconds: seconds, rounds: options.rounds)
        }
        var syncplay: PlayerFigures?
        if Locations.onPath("syncplay") != nil, Locations.onPath("syncplay-server") != nil, getuid() == 0 {
            syncplay = try withSyncplay(media: media, directory: directory) {
                try measure($0, seconds: seconds, rounds: options.rounds)
            }
        } else {
            print(
                "  (Syncplay not measured: it needs Debian's syncplay and syncplay-server, and root for its namespace)")
        }
        report(coplay, syncplay)
        let pairs = [("coplay", coplay)] + (syncplay.map { [("Syncplay", $0)] } ?? [])
        try writePlot(
            "sync-error.svg", options,
            SVGPlot.lines(
                title: "Two mpv players in sync: |A − B| over time (loopback)", xLabel: "seconds",
                yLabel: "|A − B| audio position, ms (log)",
                series: pairs.map { SVGPlot.Series(name: $0.0, points: $0.1.steadySeries) }, logY: true))
        try writePlot(
            "players-pause.svg", options,
            SVGPlot.distribution(
                title: "Pause pressed in mpv A → mpv B paused", xLabel: "ms (log)",
                samples: pairs.map { ($0.0, $0.1.pause.sorted) }, logX: true))
    }

    private static func report(_ coplay: PlayerFigures, _ syncplay: PlayerFigures?) {
        func line(_ what: String, _ ours: Distribution, _ theirs: Distribution?, unit: String, ratio: Bool = true) {
            print("  \(what)")
            print("    coplay:   \(ours.summary(unit: unit))")
            guard let theirs else { return }
            print("    Syncplay: \(theirs.summary(unit: unit))")
            let times = theirs.percentile(0.5) / ours.percentile(0.5)
            if ratio, times.isFinite { print("    Syncplay / coplay at p50: \(String(format: "%.0f", times))×") }
        }
        line("steady offset |A-B|, 10 samples a second", coplay.steady, syncplay?.steady, unit: "ms")
        line("pause set in mpv A → mpv B reports pause=true", coplay.pause, syncplay?.pause, unit: "ms")
        line(
            "unpause set in mpv A → mpv B reports pause=false (press-to-playing)", coplay.unpause, syncplay?.unpause,
            unit: "ms")
        line(
            "mpv B stopped (SIGSTOP) for 200 ms: largest |A-B| in the 30 s after", coplay.disturbance,
            syncplay?.disturbance, unit: "ms", ratio: false)
        for (name, figures) in [("coplay", coplay)] + (syncplay.map { [("Syncplay", $0)] } ?? []) {
            print(
                "  \(name): back within 2 ms (staying 0.5 s) in \(figures.recovered) of \(figures.disturbances) disturbances"
                    + (figures.recovered > 0 ? ": \(figures.recovery.summary(unit: "s"))" : " (30 s each)"))
        }
    }

    /// Two coplay agents on loopback, each starting its own mpv.
    private static func withCoplay<T>(
        _ options: Options, common: [String], media: String, directory: URL, _ body: (PlayerPair) throws -> T
    ) throws -> T {
        let headless = ["--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null"]
        var agents: [AgentProcess] = []
        var clients: [MpvClient] = []
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
        }
        for name in ["a", "b"] {
            let socket = directory.appendingPathComponent("coplay-\(name).sock").path
            agents.append(try start(options, name: name, common + headless + ["--mpv-socket", socket]))
            clients.append(try MpvClient(path: socket))
        }
        guard agents[0].waitForEvent(timeout: .seconds(10), where: { $0.name == "peer-joined" }) != nil else {
            throw BenchError(description: "the agents did not see each other")
        }
        agents[0].send("share \(media) id=pattern")
        usleep(1_500_000)
        agents[0].send("play")
        let pair = PlayerPair(
            name: "coplay", a: clients[0], b: clients[1], resume: { agents[0].send("play") },
            corrections: {
                guard let counters = agents[1].status()?["counters"] as? [String: Any] else { return nil }
                return
                    "\(counters["playerSamples"] ?? 0) samples, \(counters["rateNudges"] ?? 0) rate nudges, \(counters["seekCorrections"] ?? 0) seek corrections"
            })
        return try body(pair)
    }

    /// Syncplay's server and two `syncplay --no-gui` clients, each starting its own mpv, all in a
    /// network namespace of this run's own (its server listens on every address of its host:
    /// there, that is only the namespace's loopback).
    private static func withSyncplay<T>(media: String, directory: URL, _ body: (PlayerPair) throws -> T) throws -> T {
        let namespace = "cpbench\(getpid())"
        try makeNamespace(namespace)
        defer { removeNamespace(namespace) }
        func spawn(_ arguments: [String], home: String) throws -> Process {
            try spawnInNamespace(namespace, arguments, home: home)
        }
        var processes: [Process] = []
        var clients: [MpvClient] = []
        defer {
            // Syncplay's clients do not end on SIGTERM, and their mpv outlives them: quit the
            // players, then kill what is left.
            for client in clients { client.command(["quit"]) }
            for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            for process in processes { process.waitUntilExit() }
        }
        let port = syncplayPort
        let serverHome = directory.appendingPathComponent("syncplay-server")
        try FileManager.default.createDirectory(at: serverHome, withIntermediateDirectories: true)
        processes.append(try startSyncplayServer(in: namespace, home: serverHome.path))
        for name in ["a", "b"] {
            let home = directory.appendingPathComponent("syncplay-home-\(name)")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let socket = directory.appendingPathComponent("syncplay-\(name).sock").path
            processes.append(
                try spawn(
                    [
                        "syncplay", "--no-gui", "--no-store", "-a", "127.0.0.1:\(port)", "-n", name, "-r", "bench",
                        "--player-path", Locations.onPath("mpv")!, media, "--", "--input-ipc-server=\(socket)",
                        "--vo=null", "--ao=null",
                    ], home: home.path))
            clients.append(try MpvClient(path: socket, timeout: .seconds(20)))
        }
        usleep(4_000_000)  // both clients in the room with the file
        guard processes.allSatisfy(\.isRunning) else { throw BenchError(description: "a Syncplay process exited") }
        clients[0].set("pause", false)
        let pair = PlayerPair(
            name: "Syncplay", a: clients[0], b: clients[1], resume: { clients[0].set("pause", false) },
            corrections: { nil })
        return try body(pair)
    }

    /// A network namespace of this run's own, its loopback up (`removeNamespace` deletes it).
    static func makeNamespace(_ name: String) throws {
        try Locations.run("/usr/sbin/ip", ["netns", "add", name])
        try Locations.run("/usr/sbin/ip", ["netns", "exec", name, "ip", "link", "set", "lo", "up"])
    }

    static func removeNamespace(_ name: String) { _ = try? Locations.run("/usr/sbin/ip", ["netns", "del", name]) }

    /// Where Syncplay's server listens, inside the namespace.
    static let syncplayPort = "18999"

    /// Syncplay's server in `namespace` (HOME and its log at `home`), running; killed and said if it
    /// exited at start.
    static func startSyncplayServer(in namespace: String, home: String) throws -> Process {
        let server = try spawnInNamespace(
            namespace, ["syncplay-server", "--port", syncplayPort, "--disable-ready", "--disable-chat"], home: home)
        usleep(1_500_000)
        guard server.isRunning else {
            let log = (try? String(contentsOfFile: home + "/output.log", encoding: .utf8)) ?? ""
            throw BenchError(description: "syncplay-server exited: \(log.suffix(400))")
        }
        return server
    }

    /// A process (Syncplay's server or a client) run inside network namespace `namespace`, with
    /// HOME at `home` (and `environment`), its output in `home`/output.log.
    static func spawnInNamespace(
        _ namespace: String, _ arguments: [String], home: String, environment: [String: String] = [:]
    ) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", namespace] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment.merging(["HOME": home]) { $1 }) {
            $1
        }
        process.standardInput = FileHandle.nullDevice
        let log = home + "/output.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        return process
    }

    /// The three measurements, on any pair.
    private static func measure(_ pair: PlayerPair, seconds: Int, rounds: Int) throws -> PlayerFigures {
        let (mpvA, mpvB) = (pair.a, pair.b)
        usleep(5_000_000)  // settled: coplay's first start bias is steered away
        /// mpv A's audio position minus mpv B's, one reading (`MpvClient.audioOffset`).
        func offset() -> Double? { mpvA.audioOffset(of: mpvB)?.offset }
        var figures = PlayerFigures()
        var steady: [Double] = []
        let began = ContinuousClock.now
        for _ in 0..<(seconds * 10) {
            if let offset = offset() {
                steady.append(abs(offset) * 1000)
                let elapsed = (ContinuousClock.now - began).components
                figures.steadySeries.append(
                    (Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18, abs(offset) * 1000))
            }
            usleep(100_000)
        }
        figures.steady = Distribution(steady)

        // Pause set in mpv A over its IPC (as the space bar) → mpv B reports pause=true.
        let observer = try MpvClient(path: mpvB.path)
        observer.command(["observe_property", 1, "pause"])
        var propagation: [Double] = []
        var starts: [Double] = []
        for round in 0..<rounds {
            observer.drainPending()
            let pressed = MpvClient.unixNanos()
            mpvA.set("pause", true)
            if let paused = observer.waitForChange(of: "pause", to: true, timeout: .seconds(3)) {
                propagation.append(Double(paused - pressed) / 1e6)
            }
            usleep(700_000)
            // Unpause set in mpv A the same way → mpv B playing: a coordinated start for coplay.
            observer.drainPending()
            let unpressed = MpvClient.unixNanos()
            mpvA.set("pause", false)
            if let playing = observer.waitForChange(of: "pause", to: false, timeout: .seconds(3)) {
                starts.append(Double(playing - unpressed) / 1e6)
            } else {
                pair.resume()
                _ = observer.waitForChange(of: "pause", to: false, timeout: .seconds(3))
            }
            usleep(1_200_000 + UInt32(round * 137_000 % 400_000))
        }
        figures.pause = Distribution(propagation)
        figures.unpause = Distribution(starts)

        // mpv B stopped (SIGSTOP) for 200 ms, then let go.
        usleep(4_000_000)
        guard let pid = (mpvB.property("pid") as? NSNumber)?.int32Value else {
            throw BenchError(description: "mpv did not say its pid")
        }
        var recoveries: [Double] = []
        var worst: [Double] = []
        figures.disturbances = max(1, rounds / 4)
        for _ in 0..<figures.disturbances {
            kill(pid, SIGSTOP)
            usleep(200_000)
            kill(pid, SIGCONT)
            let start = ContinuousClock.now
            var largest = 0.0
            var inSyncSince: ContinuousClock.Instant?
            while ContinuousClock.now - start < .seconds(30) {
                guard let value = offset() else { continue }
                largest = max(largest, abs(value))
                if abs(value) < 0.002 {
                    if inSyncSince == nil { inSyncSince = ContinuousClock.now }
                    if ContinuousClock.now - inSyncSince! >= .milliseconds(500) { break }
                } else {
                    inSyncSince = nil
                }
                usleep(20_000)
            }
            if let inSyncSince, ContinuousClock.now - inSyncSince >= .milliseconds(500) {
                let elapsed = (inSyncSince - start).components
                recoveries.append(Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
            }
            worst.append(largest * 1000)
            usleep(3_000_000)
        }
        figures.disturbance = Distribution(worst)
        figures.recovery = Distribution(recoveries)
        figures.recovered = recoveries.count
        if let corrections = pair.corrections() { print("  \(pair.name) agent b: \(corrections)") }
        return figures
    }
}

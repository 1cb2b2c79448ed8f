import Foundation
import Glibc

extension Benchmarks {
    /// Two agents on loopback, each driving its own headless mpv; separate IPC clients read the
    /// players. Prints the steady offset between them, the propagation of a pause pressed in
    /// mpv A to mpv B, and the time back in sync after a 200 ms disturbance of mpv B.
    static func players(_ options: Options, common: [String]) throws {
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = directory.appendingPathComponent("pattern.mkv").path
        let seconds = max(options.seconds, 10)
        try MpvClient.makeTestMedia(at: media, seconds: seconds + 30 + options.rounds * 3 + 60)
        let headless = ["--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null"]
        var agents: [AgentProcess] = []
        var clients: [MpvClient] = []
        for name in ["a", "b"] {
            let socket = directory.appendingPathComponent("\(name).sock").path
            agents.append(try start(options, name: name, common + headless + ["--mpv-socket", socket]))
            clients.append(try MpvClient(path: socket))
        }
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
        }
        let (mpvA, mpvB) = (clients[0], clients[1])
        guard agents[0].waitForEvent(timeout: .seconds(10), where: { $0.name == "peer-joined" }) != nil else {
            throw BenchError(description: "the agents did not see each other")
        }
        agents[0].send("share \(media) id=pattern")
        usleep(1_500_000)
        agents[0].send("play")
        usleep(5_000_000)  // the first start's bias is learned and steered away

        /// mpv A's audio position minus mpv B's, B's reading taken back to the middle of A's request.
        func offset() -> Double? {
            let first = mpvA.command(["get_property", "audio-pts"])
            let second = mpvB.command(["get_property", "audio-pts"])
            guard let a = (first.data as? NSNumber)?.doubleValue, let b = (second.data as? NSNumber)?.doubleValue
            else { return nil }
            let speed = mpvB.number("speed") ?? 1
            return a - (b - speed * Double(second.atUnixNanos - first.atUnixNanos) / 1e9)
        }

        print("players: two mpv (vo=null, ao=null) under coplay; audio-pts read over each one's IPC socket")
        var steady: [Double] = []
        let samplesWanted = seconds * 10
        for _ in 0..<samplesWanted {
            if let offset = offset() { steady.append(abs(offset) * 1000) }
            usleep(100_000)
        }
        print("  steady offset |A-B| over \(seconds) s: \(Distribution(steady).summary(unit: "ms"))")

        // Pause pressed in mpv A (over its IPC, as the space bar) → mpv B reports pause=true.
        let observer = try MpvClient(path: directory.appendingPathComponent("b.sock").path)
        observer.command(["observe_property", 1, "pause"])
        var propagation: [Double] = []
        for _ in 0..<options.rounds {
            let pressed = MpvClient.unixNanos()
            mpvA.set("pause", true)
            if let paused = observer.waitForChange(of: "pause", to: true, timeout: .seconds(3)) {
                propagation.append(Double(paused - pressed) / 1e6)
            }
            usleep(300_000)
            agents[0].send("play")
            _ = observer.waitForChange(of: "pause", to: false, timeout: .seconds(3))
            usleep(1_500_000)
        }
        print("  pause in mpv A → mpv B paused: \(Distribution(propagation).summary(unit: "ms"))")

        // A 200 ms disturbance: mpv B is stopped (SIGSTOP) for 200 ms, then let go; its agent
        // sees it behind and steers it back with rate nudges.
        usleep(4_000_000)
        var recoveries: [Double] = []
        var worst: [Double] = []
        let mpvPID = try mpvProcessID(socket: directory.appendingPathComponent("b.sock").path)
        for _ in 0..<max(1, options.rounds / 4) {
            kill(mpvPID, SIGSTOP)
            usleep(200_000)
            kill(mpvPID, SIGCONT)
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
            if let inSyncSince {
                recoveries.append(
                    Double((inSyncSince - start).components.attoseconds) / 1e18
                        + Double((inSyncSince - start).components.seconds))
            }
            worst.append(largest * 1000)
            usleep(3_000_000)
        }
        print("  200 ms disturbance (SIGSTOP of mpv B): largest offset \(Distribution(worst).summary(unit: "ms"))")
        print("  back within 2 ms (and staying 0.5 s): \(Distribution(recoveries).summary(unit: "s"))")
        if let status = agents[1].status(), let counters = status["counters"] as? [String: Any] {
            print(
                "  agent b: \(counters["playerSamples"] ?? 0) samples, \(counters["rateNudges"] ?? 0) rate nudges, \(counters["seekCorrections"] ?? 0) seek corrections"
            )
        }
    }

    /// The pid of the mpv serving `socket` (its `pid` property).
    private static func mpvProcessID(socket: String) throws -> pid_t {
        guard let pid = (try MpvClient(path: socket).property("pid") as? NSNumber)?.int32Value else {
            throw BenchError(description: "mpv did not say its pid")
        }
        return pid
    }
}

import Foundation
import Glibc

extension Benchmarks {
    /// One run of `coplay-bench hiccup`: what the agents did that nobody asked for.
    public struct HiccupFigures: Sendable {
        /// Group commands an agent issued of its own (its events of a command whose originator is
        /// itself), other than the one `play` typed: each event's line.
        public var unasked: [String] = []
        /// The SIGSTOPs of the two mpv, and how long they were stopped in all (s).
        public var stops = 0
        public var stoppedSeconds = 0.0
        /// Each mpv's speed once the stops ended and the players had 10 s to settle.
        public var speeds: [Double] = []
        /// Each mpv's `pause` then.
        public var paused: [Bool] = []
        /// |A - B| over 3 s then (ms).
        public var offsets = Distribution([])
    }

    /// The reproduction of a hiccuping player: two agents on the loopback of a network namespace
    /// of this run's own, each with a headless mpv; a clip of H.264 and AAC shared and `play` typed
    /// once; two busy loops on the machine's two cores; each mpv stopped (SIGSTOP) for 50-600 ms at
    /// random every 0.5-2 s for `seconds` (a busy television box, a laptop's scheduler, a slow
    /// disk). Nothing else is typed, so every group command either agent issues after the `play`
    /// is one nobody typed: the follower's own pause, unpause, nudge or catch-up taken for the
    /// person's. `runs` times; prints each run's figures and exits 1 if any run had one.
    public static func hiccup(executable: String, runs: Int, seconds: Int) throws {
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        guard getuid() == 0 else { throw BenchError(description: "hiccup needs root for its network namespace") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-bench-hiccup-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let clip = directory.appendingPathComponent("clip.mkv").path
        try MpvClient.makeTestMedia(at: clip, seconds: max(120, seconds + 40))
        print(
            "hiccup: two agents with headless mpv on a namespace's loopback, \(seconds) s of play with two busy loops"
                + " and each mpv stopped (SIGSTOP) 50-600 ms every 0.5-2 s; nothing typed after one play")
        var failed = 0
        for run in 1...runs {
            let figures = try hiccupRun(executable: executable, clip: clip, directory: directory, seconds: seconds)
            if !figures.unasked.isEmpty { failed += 1 }
            let speeds = figures.speeds.map { String(format: "%.4f", $0) }.joined(separator: ", ")
            print(
                "  run \(run): \(figures.unasked.count) commands nobody typed; \(figures.stops) stops"
                    + " (\(String(format: "%.1f", figures.stoppedSeconds)) s in all); then mpv speeds \(speeds),"
                    + " paused \(figures.paused), |A-B| \(figures.offsets.summary(unit: "ms"))")
            for line in figures.unasked.prefix(5) { print("    \(line)") }
        }
        print("hiccup: \(runs - failed) of \(runs) runs without a command nobody typed")
        if failed > 0 { throw BenchError(description: "\(failed) of \(runs) runs issued a command nobody typed") }
    }

    private static func hiccupRun(executable: String, clip: String, directory: URL, seconds: Int) throws
        -> HiccupFigures
    {
        let namespace = "cphic\(getpid())"
        try Locations.run("/usr/sbin/ip", ["netns", "add", namespace])
        defer { _ = try? Locations.run("/usr/sbin/ip", ["netns", "del", namespace]) }
        try Locations.run("/usr/sbin/ip", ["netns", "exec", namespace, "ip", "link", "set", "lo", "up"])
        var agents: [AgentProcess] = []
        var players: [MpvClient] = []
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents where agent.waitForExit(timeout: .seconds(5)) == nil { agent.signal(SIGKILL) }
        }
        for name in ["alice", "bob"] {
            let socket = directory.appendingPathComponent("\(name).sock").path
            agents.append(
                try AgentProcess(
                    executable: executable, name: name,
                    arguments: [
                        "--interface", "lo", "--session", "hiccup-\(getpid())", "--player", "mpv", "--mpv-option",
                        "vo=null", "--mpv-option", "ao=null", "--mpv-socket", socket,
                    ], namespace: namespace))
            players.append(try MpvClient(path: socket))
        }
        let (alice, bob) = (agents[0], agents[1])
        guard alice.waitForEvent(timeout: .seconds(15), where: { $0.name == "clock-synced" }) != nil else {
            throw BenchError(description: "the agents did not find each other: \(alice.diagnostics.suffix(3))")
        }
        alice.send("share \(clip) id=clip")
        usleep(1_500_000)
        let mark = alice.allEvents.count
        alice.send("play")
        func isLocalCommand(_ event: AgentEvent) -> Bool {
            event["command"] != nil && (event["originator"] as? [String: Any])?["local"] as? Bool == true
        }
        guard
            let typed = alice.waitForEvent(from: mark, timeout: .seconds(10), where: isLocalCommand),
            let typedCommand = typed["command"] as? String
        else { throw BenchError(description: "alice's play was not seen: \(alice.diagnostics.suffix(3))") }
        usleep(3_000_000)  // both playing

        let pids = try players.map { player -> Int32 in
            guard let pid = (player.property("pid") as? NSNumber)?.int32Value else {
                throw BenchError(description: "mpv did not say its pid")
            }
            return pid
        }
        // Two busy loops, ended by `timeout` even if this program is not there to end them.
        let loops = try (0..<2).map { _ -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            process.arguments = [String(seconds + 5), "sh", "-c", "while :; do :; done"]
            try process.run()
            return process
        }
        defer {
            for loop in loops where loop.isRunning { loop.terminate() }
        }
        let stopping = Stopping(pids: pids, until: ContinuousClock.now + .seconds(seconds))
        stopping.run()
        var figures = HiccupFigures()
        (figures.stops, figures.stoppedSeconds) = stopping.totals

        for loop in loops where loop.isRunning { loop.terminate() }
        usleep(10_000_000)  // settled: a catch-up at 5% closes 0.5 s in 10 s
        figures.speeds = players.map { $0.number("speed") ?? .nan }
        figures.paused = players.map { ($0.property("pause") as? Bool) ?? false }
        figures.offsets = Distribution(offsets(players[0], players[1], seconds: 3))
        var seen = Set<String>()
        for (agent, from) in [(alice, mark), (bob, 0)] {
            for event in agent.allEvents.dropFirst(from) where isLocalCommand(event) {
                guard let command = event["command"] as? String, command != typedCommand,
                    seen.insert(agent.name + command).inserted
                else { continue }
                figures.unasked.append("\(agent.name): \(event.line)")
            }
        }
        return figures
    }

    /// Stops each process (SIGSTOP) for 50-600 ms at random every 0.5-2 s, until `until`, each
    /// on a thread of its own; every process is let go (SIGCONT) at the end, whatever happens.
    private final class Stopping: @unchecked Sendable {
        let pids: [Int32]
        let until: ContinuousClock.Instant
        private let lock = NSLock()
        private var stops = 0
        private var stopped = 0.0

        init(pids: [Int32], until: ContinuousClock.Instant) {
            self.pids = pids
            self.until = until
        }

        var totals: (Int, Double) { lock.withLock { (stops, stopped) } }

        func run() {
            let group = DispatchGroup()
            for pid in pids {
                group.enter()
                Thread.detachNewThread { [self] in
                    defer { group.leave() }
                    var random = SystemRandomNumberGenerator()
                    while ContinuousClock.now < until {
                        usleep(UInt32.random(in: 500_000...2_000_000, using: &random))
                        guard ContinuousClock.now < until else { break }
                        let pause = UInt32.random(in: 50_000...600_000, using: &random)
                        kill(pid, SIGSTOP)
                        usleep(pause)
                        kill(pid, SIGCONT)
                        lock.withLock {
                            stops += 1
                            stopped += Double(pause) / 1e6
                        }
                    }
                    kill(pid, SIGCONT)
                }
            }
            group.wait()
        }
    }
}

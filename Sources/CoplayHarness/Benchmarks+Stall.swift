import Foundation
import Glibc

extension Benchmarks {
    /// One participant starved by a real network: what it and the others did.
    public struct StallFigures: Sendable {
        /// mpv paused for its cache → the starved agent's `stallRecovery` suspension began (ms).
        public var stallSeen: Double?
        /// mpv's cache refilled (it no longer pauses for it) → the two players within 5 ms of each
        /// other, staying so for 0.5 s (s).
        public var backInSync: Double?
        /// |A - B| in the 5 s after that, 10 readings a second (ms).
        public var offsetsAfter = Distribution([])
        /// |A - B| before the throttle (ms).
        public var offsetsBefore = Distribution([])
        /// How long mpv waited for its cache (s).
        public var starvedSeconds: Double?
        /// The steady participant's player paused at any time from the throttle on.
        public var steadyPaused = false
        /// Group commands the steady participant received from the starved one, from the throttle on
        /// (a `paused`, `waiting`, `time-jumped` or `playing` it did not issue).
        public var foreignCommands = 0
        /// Both suspension events came, in order.
        public var suspended = false
        public var resumed = false
        /// The starved agent's account of the stall: its suspension-ended event's fields.
        public var diagnostics: [String] = []
        /// After the refill: |A - B| (ms since the refill: ms, the first 60 readings) and the
        /// starved agent's events (ms since the refill), for a rejoin that took long.
        public var afterRefill = ""
    }

    /// The throttle did not starve mpv within 30 s: the scene a stall test needs never came (seen
    /// once in some 25 runs of `stall --live`), which says nothing of how a stall is handled.
    public struct StallNeverCame: Error, CustomStringConvertible {
        /// What the throttled mpv was doing instead.
        public var state: String
        public var description: String { "mpv on the throttled host never paused for its cache (\(state))" }
    }

    /// Hosts 2 and 3 of a `Tools/lan` LAN (`prefix`) each run an agent with a headless mpv that
    /// plays media served over HTTP by host 1 (`coplay web`, which takes byte ranges as any media
    /// server does: without them mpv cannot seek in the stream). Both mpv read ahead 2 s
    /// (`cache-secs`), and host 3 receives, host 1 sends, with small TCP buffers, so that a
    /// throttle bites within a second rather than after megabytes already on their way. After the
    /// two play in sync, host 1's nft drops what goes to host 3 beyond 16 kB/s, a third of the
    /// media's bitrate, until `starvedSeconds` after mpv on host 3 paused for its cache; then the
    /// limit is lifted. Measured with the agents' events and a separate IPC client on each mpv.
    ///
    /// With `live`, host 1 encodes a live HLS stream at the same bitrate (`LiveEncoder`) and
    /// that is what they play: the starved one must rejoin at the group's date, skipping what it
    /// missed, while nobody waits.
    public static func realStall(
        executable: String, prefix: String, directory: URL, port: Int = 18_080, starvedSeconds: Double = 4,
        live: Bool = false
    ) throws -> StallFigures {
        let media = directory.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let encoder = live ? try LiveEncoder(directory: media, seconds: 120) : nil
        defer { encoder?.stop() }
        if !live { try makeStallMedia(at: media.appendingPathComponent("pattern.mkv").path) }
        // `coplay web` serves a page's folder: this one's page says what it holds.
        try "<title>coplay test media</title>\n".write(
            to: media.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        let (server, steadyHost, starvedHost) = ("\(prefix)-h1", "\(prefix)-h2", "\(prefix)-h3")
        try sysctl(server, "net.ipv4.tcp_wmem", "4096 32768 65536")
        try sysctl(starvedHost, "net.ipv4.tcp_rmem", "4096 32768 65536")
        // A live stream's files change every second: Python's server reads them as they are asked for.
        let web =
            live
            ? try serveLive(media, in: server, port: port, home: directory)
            : try spawnInNamespace(
                server, [executable, "web", "--listen", "10.77.0.1:\(port)", "--root", media.path],
                home: directory.path)
        defer { stopServer(web) }
        if !live { try awaitListener(web, in: server, port: port) }
        var agents: [AgentProcess] = []
        defer { stop(agents) }
        var players: [MpvClient] = []
        for (name, host) in [("steady", steadyHost), ("starved", starvedHost)] {
            let socket = directory.appendingPathComponent("\(name).sock").path
            agents.append(
                try AgentProcess(
                    executable: executable, name: name,
                    arguments: [
                        "--interface", "eth0", "--session", "stall-\(getpid())", "--player", "mpv", "--mpv-option",
                        "vo=null", "--mpv-option", "ao=null", "--mpv-option", "cache=yes", "--mpv-option",
                        "cache-secs=2", "--mpv-socket", socket,
                    ], namespace: host))
            players.append(try MpvClient(path: socket))
        }
        let (steady, starved) = (agents[0], agents[1])
        guard steady.waitForEvent(timeout: .seconds(15), where: { $0.name == "clock-synced" }) != nil else {
            throw BenchError(description: "the agents did not find each other: \(steady.diagnostics.suffix(3))")
        }
        steady.send("share http://10.77.0.1:\(port)/\(live ? "live.m3u8" : "pattern.mkv") id=pattern")
        usleep(1_500_000)
        steady.send("play")
        usleep(8_000_000)  // both playing, steered together
        var figures = StallFigures()
        figures.offsetsBefore = Distribution(offsets(players[0], players[1], seconds: 2))

        let cache = try MpvClient(path: players[1].path)
        cache.command(["observe_property", 1, "paused-for-cache"])
        let steadyPause = try MpvClient(path: players[0].path)
        steadyPause.command(["observe_property", 2, "pause"])
        let pauses = PauseWatch(steadyPause)
        let marks = agents.map { $0.allEvents.count }
        try throttle(server, to: "10.77.0.3", port: port)
        var lifted = false
        defer { if !lifted { try? unthrottle(server) } }
        guard let stalledAt = cache.waitForChange(of: "paused-for-cache", to: true, timeout: .seconds(30)) else {
            // What that mpv was doing instead, for the next time this happens (once in some 25
            // runs of `stall --live`).
            let state = ["pause", "paused-for-cache", "core-idle", "time-pos", "demuxer-cache-duration", "path"].map {
                "\($0)=\(cache.property($0).map { "\($0)" } ?? "unavailable")"
            }
            // And what its agent said from the start (a stall or a suspension before the throttle).
            let now = MpvClient.unixNanos()
            let events = starved.allEvents.suffix(12).map { event in
                let said = (event["message"] as? String).map { " (\($0))" } ?? ""
                return String(format: "%@%@ %.1f s ago", event.name, said, Double(now - event.atUnixNanos) / 1e9)
            }
            throw StallNeverCame(
                state: state.joined(separator: ", ") + "; its agent's last events: " + events.joined(separator: ", ")
                    + "; its status: \(starved.status()?.line ?? "-")")
        }
        if let began = starved.waitForEvent(
            from: marks[1], timeout: .seconds(5), where: { $0.name == "suspension-began" })
        {
            figures.suspended = true
            figures.stallSeen = Double(began.atUnixNanos - stalledAt) / 1e6
        }
        usleep(UInt32(starvedSeconds * 1_000_000))
        try unthrottle(server)
        lifted = true
        guard let refilledAt = cache.waitForChange(of: "paused-for-cache", to: false, timeout: .seconds(30)) else {
            throw BenchError(description: "mpv on the throttled host never refilled its cache")
        }
        figures.starvedSeconds = Double(refilledAt - stalledAt) / 1e9
        // Back in sync: within 5 ms, staying so for 0.5 s.
        var within: Int64?
        var series: [String] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let now = MpvClient.unixNanos()
            let reading = players[0].audioOffset(of: players[1], attempts: 3)
            if series.count < 60, let reading {
                series.append(String(format: "%.0f:%.1f", Double(now - refilledAt) / 1e6, reading.offset * 1000))
            }
            if let reading, abs(reading.offset) <= 0.005 {
                within = within ?? now
                if now - within! >= 500_000_000 { break }
            } else {
                within = nil
            }
            usleep(20_000)
        }
        if let within { figures.backInSync = Double(within - refilledAt) / 1e9 }
        figures.offsetsAfter = Distribution(offsets(players[0], players[1], seconds: 5))
        if let ended = starved.waitForEvent(
            from: marks[1], timeout: .seconds(1), where: { $0.name == "suspension-ended" })
        {
            figures.resumed = true
            figures.diagnostics.append(ended.line)
        }
        let events = starved.allEvents.dropFirst(marks[1]).map {
            String(format: "%@ %.0f", $0.name, Double($0.atUnixNanos - refilledAt) / 1e6)
        }
        figures.afterRefill =
            "A-B after the refill (ms since: ms): \(series.joined(separator: " "));"
            + " the starved agent's events (ms since the refill): \(events.joined(separator: ", "))"
        if ProcessInfo.processInfo.environment["COPLAY_BENCH_DEBUG"] != nil {
            print("    \(figures.afterRefill)")
            for agent in agents { print("    \(agent.name): \(agent.status()?.line ?? "-")") }
        }
        figures.steadyPaused = pauses.sawPause
        pauses.stop()
        let issuedElsewhere = ["paused", "waiting", "time-jumped", "playing"]
        figures.foreignCommands = steady.allEvents.dropFirst(marks[0]).count { issuedElsewhere.contains($0.name) }
        return figures
    }

    /// Watches one mpv's `pause` on a thread of its own (observed by the caller), for at most
    /// two minutes or until `stop`.
    final class PauseWatch: @unchecked Sendable {
        private let lock = NSLock()
        private var paused = false
        private var stopped = false
        var sawPause: Bool { lock.withLock { paused } }
        func stop() { lock.withLock { stopped = true } }

        init(_ client: MpvClient) {
            Thread { [self] in
                let deadline = ContinuousClock.now + .seconds(120)
                while ContinuousClock.now < deadline, !lock.withLock({ stopped }) {
                    // nil after 5 s without an event: watched on, until stopped.
                    guard let (event, _) = client.nextEvent() else { continue }
                    guard event["event"] as? String == "property-change", event["name"] as? String == "pause",
                        event["data"] as? Bool == true
                    else { continue }
                    lock.withLock { paused = true }
                }
            }.start()
        }
    }

    /// |A - B| in ms, 10 readings a second for `seconds`.
    static func offsets(_ a: MpvClient, _ b: MpvClient, seconds: Double) -> [Double] {
        var values: [Double] = []
        for _ in 0..<Int(seconds * 10) {
            if let reading = a.audioOffset(of: b, attempts: 3) { values.append(abs(reading.offset) * 1000) }
            usleep(100_000)
        }
        return values
    }

    /// 90 s of a test pattern and a tone at about 470 kbit/s: three times what the throttle lets
    /// through.
    static func makeStallMedia(at path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else { return }
        let (status, output) = try Locations.run(
            try Locations.onPath("ffmpeg").orThrow("ffmpeg is not installed"),
            [
                "-y", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "90", "-c:v", "libx264", "-preset", "ultrafast", "-g",
                "25", "-b:v", "400k", "-c:a", "aac", "-b:a", "64k", path,
            ])
        guard status == 0 else { throw BenchError(description: "ffmpeg failed: \(output)") }
    }

    static func sysctl(_ namespace: String, _ name: String, _ value: String) throws {
        let (status, output) = try Locations.run(
            "/usr/sbin/ip", ["netns", "exec", namespace, "sysctl", "-q", "-w", "\(name)=\(value)"])
        guard status == 0 else { throw BenchError(description: "sysctl \(name) in \(namespace): \(output)") }
    }

    /// Host `namespace` sends what its port `port` serves to `address` at 16 kB/s at most.
    static func throttle(_ namespace: String, to address: String, port: Int) throws {
        let rules = """
            table inet coplaystall {
              chain out {
                type filter hook output priority 0; policy accept;
                ip daddr \(address) tcp sport \(port) limit rate over 16 kbytes/second drop
              }
            }
            """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-stall-\(namespace).nft")
        try rules.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, output) = try Locations.run("/usr/sbin/ip", ["netns", "exec", namespace, "nft", "-f", file.path])
        guard status == 0 else { throw BenchError(description: "nft in \(namespace): \(output)") }
    }

    static func unthrottle(_ namespace: String) throws {
        let (status, output) = try Locations.run(
            "/usr/sbin/ip", ["netns", "exec", namespace, "nft", "delete", "table", "inet", "coplaystall"])
        guard status == 0 else { throw BenchError(description: "nft in \(namespace): \(output)") }
    }

    /// `coplay-bench stall`: `runs` times, a participant starved by a real network (`realStall`).
    public static func stall(
        executable: String, runs: Int, starvedSeconds: Double, link: String? = nil, live: Bool = false
    ) throws {
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        guard getuid() == 0 else { throw BenchError(description: "stall needs root (network namespaces and nft)") }
        print(
            "stall: 3 hosts of a test LAN (\(link.map { "\($0) link model" } ?? "bridge")); host 1 serves a 470 kbit/s"
                + (live ? " live HLS stream (ffmpeg; Python's http.server)" : " file (coplay web)")
                + " over HTTP, hosts 2"
                + " and 3 play it in headless mpv (2 s read-ahead) under coplay; host 3's download is limited to"
                + " 16 kB/s by nft until \(starvedSeconds) s after its mpv paused for its cache")
        var all: [StallFigures] = []
        for run in 1...runs {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-stall-\(getpid())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let figures = try onLAN(hosts: 3, link: link, dtim: 1, bench: CommandLine.arguments[0]) { prefix in
                try realStall(
                    executable: executable, prefix: prefix, directory: directory, starvedSeconds: starvedSeconds,
                    live: live)
            }
            func ms(_ value: Double?) -> String { value.map { String(format: "%.0f ms", $0) } ?? "never" }
            func s(_ value: Double?) -> String { value.map { String(format: "%.2f s", $0) } ?? "never" }
            print(
                "  run \(run): stall seen \(ms(figures.stallSeen)) after mpv paused for its cache; starved"
                    + " \(s(figures.starvedSeconds)); back within 5 ms \(s(figures.backInSync)) after the cache"
                    + " refilled; |A-B| before \(figures.offsetsBefore.summary(unit: "ms")), after"
                    + " \(figures.offsetsAfter.summary(unit: "ms")); the steady player paused: \(figures.steadyPaused);"
                    + " commands the steady one did not issue: \(figures.foreignCommands)")
            all.append(figures)
        }
        let seen = all.compactMap(\.stallSeen)
        let back = all.compactMap(\.backInSync)
        print("  stall seen and suspended (ms): \(Distribution(seen).summary(unit: "ms"))")
        print("  back in sync after the cache refilled (s): \(Distribution(back).summary(unit: "s"))")
        print(
            "  |A-B| after (ms): \(Distribution(all.flatMap(\.offsetsAfter.sorted)).summary(unit: "ms")); steady player"
                + " paused in \(all.count { $0.steadyPaused }) of \(runs) runs; foreign commands"
                + " \(all.map(\.foreignCommands).reduce(0, +))")
    }
}

import Foundation
import Glibc

extension Benchmarks {
    /// mpv players joining one live stream at different moments.
    public struct LiveFigures: Sendable {
        /// |A - B| (and |A - C|) once the later ones played, 10 readings a second (ms): the
        /// stream's own media times (mpv's `audio-pts`, which `rebase-start-time=no` leaves as
        /// the transport stream's PTS), so not coplay's map of them to dates.
        public var offsets = Distribution([])
        /// Each later participant: its agent started → its `playing` event (s).
        public var joinToPlaying: [Double] = []
        /// The playlist's edge (its last segment's end, read from the encoder's own file) minus the
        /// group's date (the first agent's `status` position), twice a second (s).
        public var behindEdge = Distribution([])
        /// The playlist's target duration (s).
        public var targetDuration = 1.0
    }

    /// A live HLS encoder: ffmpeg writing 1 s segments of a test pattern and a tone into
    /// `directory` (`live.m3u8`, six segments listed, older ones deleted, each with its program
    /// date), in real time, for `seconds` at most; stopped by `stop`.
    final class LiveEncoder: @unchecked Sendable {
        let process = Process()
        let playlist: URL

        init(directory: URL, seconds: Int, bitrate: String = "400k") throws {
            playlist = directory.appendingPathComponent("live.m3u8")
            // An earlier encoder's playlist and segments (a scene set once more, in the same
            // folder) would be read as this one's at once: its dates are of another stream.
            let old = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in old where name == "live.m3u8" || name.hasSuffix(".ts") {
                try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
            }
            process.executableURL = URL(
                fileURLWithPath: try Locations.onPath("ffmpeg").orThrow("ffmpeg is not installed"))
            process.arguments = [
                "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f",
                "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", String(seconds), "-c:v", "libx264",
                "-preset", "ultrafast", "-tune", "zerolatency", "-g", "25", "-keyint_min", "25", "-sc_threshold", "0",
                "-b:v", bitrate, "-c:a", "aac", "-b:a", "64k", "-f", "hls", "-hls_time", "1", "-hls_list_size", "6",
                "-hls_flags", "program_date_time+delete_segments", playlist.path,
            ]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Three segments listed before anyone reads it.
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline, (try? Self.read(playlist))?.segments ?? 0 < 3 { usleep(100_000) }
            guard (try? Self.read(playlist))?.segments ?? 0 >= 3 else {
                stop()
                throw BenchError(description: "ffmpeg wrote no live playlist in 15 s")
            }
        }

        /// What the benchmark reads of the encoder's playlist, by itself (not coplay's reader):
        /// the segments listed, the target duration, and the edge, its last segment's date plus
        /// that segment's duration.
        struct Listing {
            var segments = 0
            var targetDuration = 0.0
            var edge: Double?
        }

        static func read(_ playlist: URL) throws -> Listing {
            let text = try String(contentsOf: playlist, encoding: .utf8)
            var listing = Listing()
            var lastDate: Double?
            var lastDuration = 0.0
            let dates = ISO8601DateFormatter()
            dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for line in text.split(separator: "\n") {
                if line.hasPrefix("#EXT-X-TARGETDURATION:") {
                    listing.targetDuration = Double(line.dropFirst("#EXT-X-TARGETDURATION:".count)) ?? 0
                } else if line.hasPrefix("#EXTINF:") {
                    lastDuration = Double(line.dropFirst("#EXTINF:".count).split(separator: ",")[0]) ?? 0
                } else if line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") {
                    // ffmpeg writes the zone as +0000, which the formatter wants as +00:00.
                    var value = String(line.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count))
                    if value.count > 5, value.dropLast(4).last == "+" || value.dropLast(4).last == "-" {
                        value.insert(":", at: value.index(value.endIndex, offsetBy: -2))
                    }
                    lastDate = dates.date(from: value)?.timeIntervalSince1970
                } else if !line.hasPrefix("#") {
                    listing.segments += 1
                }
            }
            listing.edge = lastDate.map { $0 + lastDuration }
            return listing
        }

        func stop() {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Stops a server the benchmark started. SIGKILL: a test runner's children may inherit SIGTERM
    /// ignored, and a server of test media holds nothing.
    static func stopServer(_ server: Process) {
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
    }

    /// Lets the agents go: standard input closed, each leaves and exits (at most 5 s each).
    static func stop(_ agents: [AgentProcess]) {
        for agent in agents { agent.closeInput() }
        for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
    }

    /// Serves `folder` over HTTP from 10.77.0.1:`port` inside `namespace`: Python's http.server,
    /// which reads each file as it is asked for (`coplay web` holds a page's files as they were
    /// when it started, and a live stream's change every second). Stopped by the caller.
    static func serveLive(_ folder: URL, in namespace: String, port: Int, home: URL) throws -> Process {
        let server = try spawnInNamespace(
            namespace,
            [
                try Locations.onPath("python3").orThrow("python3 is not installed"), "-m", "http.server", "--bind",
                "10.77.0.1", String(port), "--directory", folder.path,
            ], home: home.path)
        try awaitListener(server, in: namespace, port: port)
        return server
    }

    /// Returns once `server` listens on TCP `port` in `namespace`: an agent that reads a playlist
    /// before then is refused (seen on a busy machine: Python's start-up took longer than the
    /// agents took to find each other, and the starved participant never loaded the stream).
    static func awaitListener(_ server: Process, in namespace: String, port: Int) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            guard server.isRunning else { throw BenchError(description: "the web server in \(namespace) exited") }
            let (status, output) = try Locations.run(
                "/usr/sbin/ip", ["netns", "exec", namespace, "ss", "-H", "-l", "-t", "-n", "sport = :\(port)"])
            if status == 0, !output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return }
            usleep(50_000)
        }
        throw BenchError(description: "the web server in \(namespace) did not listen on port \(port) within 10 s")
    }

    /// Host 1 of a `Tools/lan` LAN (`prefix`) encodes a live HLS stream (`LiveEncoder`) and serves
    /// it (Python's http.server); host 2's agent shares it and plays; `gap` seconds later host 3's agent
    /// starts and joins, and with `players` 3, host 4's `gap` after that. Each plays it in a
    /// headless mpv.
    public static func liveStream(
        executable: String, prefix: String, directory: URL, players: Int = 2, gap: Double = 10, port: Int = 18_080
    ) throws -> LiveFigures {
        let media = directory.appendingPathComponent("live")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let encoder = try LiveEncoder(directory: media, seconds: Int(gap) * players + 60)
        defer { encoder.stop() }
        let web = try serveLive(media, in: "\(prefix)-h1", port: port, home: directory)
        defer { stopServer(web) }
        var agents: [AgentProcess] = []
        defer { stop(agents) }
        var mpvs: [MpvClient] = []
        var figures = LiveFigures()
        for index in 0..<players {
            let socket = directory.appendingPathComponent("live-\(index).sock").path
            let started = MpvClient.unixNanos()
            let agent = try AgentProcess(
                executable: executable, name: "p\(index + 1)",
                arguments: [
                    "--interface", "eth0", "--session", "live-\(getpid())", "--player", "mpv", "--mpv-option",
                    "vo=null", "--mpv-option", "ao=null", "--mpv-socket", socket,
                ], namespace: "\(prefix)-h\(index + 2)")
            agents.append(agent)
            mpvs.append(try MpvClient(path: socket))
            if index == 0 {
                usleep(500_000)
                agent.send("share http://10.77.0.1:\(port)/live.m3u8 id=live")
                guard agent.waitForEvent(timeout: .seconds(10), where: { $0.name == "item-changed" }) != nil else {
                    throw BenchError(description: "the share never took: \(agent.diagnostics.suffix(3))")
                }
                usleep(500_000)
                agent.send("play")
            }
            guard let playing = agent.waitForEvent(timeout: .seconds(15), where: { $0.name == "playing" }) else {
                throw BenchError(
                    description: "participant \(index + 1) never played: \(agent.allEvents.suffix(4).map(\.line));"
                        + " the first one's events: \(agents[0].allEvents.map(\.name))"
                        + " \(agents[0].allEvents.filter { $0.name.contains("error") }.map(\.line))")
            }
            if index > 0 { figures.joinToPlaying.append(Double(playing.atUnixNanos - started) / 1e9) }
            if index + 1 < players { usleep(UInt32(gap * 1_000_000)) }
        }
        usleep(3_000_000)  // the later ones steered in
        var offsets: [Double] = []
        var behind: [Double] = []
        for round in 0..<50 {
            for other in mpvs.dropFirst() {
                if let reading = mpvs[0].audioOffset(of: other, attempts: 3) {
                    offsets.append(abs(reading.offset) * 1000)
                }
            }
            if round % 5 == 0, let status = agents[0].status(), let position = status["position"] as? Double,
                let playlist = try? LiveEncoder.read(encoder.playlist), let edge = playlist.edge
            {
                figures.targetDuration = playlist.targetDuration
                behind.append(edge - position)
            }
            usleep(100_000)
        }
        figures.offsets = Distribution(offsets)
        figures.behindEdge = Distribution(behind)
        return figures
    }

    /// `coplay-bench live`: `runs` times, players joining one live stream `gap` seconds apart
    /// (`liveStream`).
    public static func live(executable: String, runs: Int, players: Int, gap: Double) throws {
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        guard getuid() == 0 else { throw BenchError(description: "live needs root (network namespaces)") }
        print(
            "live: \(players + 1) hosts of a test LAN (bridge); host 1 encodes a live HLS stream (ffmpeg, 1 s segments"
                + " with program dates, 6 listed) and serves it (Python's http.server); \(players) headless mpv under coplay"
                + " join it \(gap) s apart")
        var all: [LiveFigures] = []
        for run in 1...runs {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-live-\(getpid())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let figures = try onLAN(hosts: players + 1, link: nil, dtim: 1, bench: CommandLine.arguments[0]) {
                prefix in
                try liveStream(executable: executable, prefix: prefix, directory: directory, players: players, gap: gap)
            }
            print(
                "  run \(run): |A-B| \(figures.offsets.summary(unit: "ms")); join → playing "
                    + figures.joinToPlaying.map { String(format: "%.2f s", $0) }.joined(separator: ", ")
                    + "; behind the live edge \(figures.behindEdge.summary(unit: "s")) (target duration"
                    + " \(figures.targetDuration) s)")
            all.append(figures)
        }
        print("  |A-B| (ms): \(Distribution(all.flatMap(\.offsets.sorted)).summary(unit: "ms"))")
        print("  join → playing (s): \(Distribution(all.flatMap(\.joinToPlaying)).summary(unit: "s"))")
        print("  behind the live edge (s): \(Distribution(all.flatMap(\.behindEdge.sorted)).summary(unit: "s"))")
    }
}

import Foundation
import Glibc

extension Benchmarks {
    /// What `homes` measured.
    public struct HomesFigures: Sendable {
        /// `coplay hub --tls internal` started → its link printed, ms.
        public var linkPrinted: Double?
        /// Home B's mpv played home B's own copy (another name, another folder, `--media`).
        public var ownCopy = false
        /// |home A's mpv − home B's mpv| while playing, ms.
        public var offsets = Distribution([])
        /// Pause (unpause) set in home A's mpv → home B's mpv paused (playing), ms.
        public var pause = Distribution([])
        public var unpause = Distribution([])
        /// Pause trials home B never followed.
        public var lost = 0
        /// The hub's TCP, captured at the hub host's port: segments with a payload, and for each
        /// string that must never be seen in clear (a NATS verb, the hub's secret, the group key,
        /// the film's name, the session), how many segments held it.
        public var capturedSegments = 0
        public var inClear: [String: Int] = [:]
        /// The hub killed and started again → home B's agent sees home A's again, s.
        public var hubBack: Double?
        /// Both players played on while the hub was down.
        public var playedThrough = false
        /// After the hub came back, a pause in home A reached home B.
        public var followedAfter = false
        /// The hub's own film (`--media`), fetched from home B over HTTPS: a byte range of it
        /// answered 206 with those bytes; the film's name without the hub's token, 404.
        public var hubMediaRanged = false
        public var hubMediaGuessRefused = false
    }

    /// `coplay-bench homes`: two homes and a hub on a `Tools/lan` LAN of the `wan` model (the hub
    /// and home A at one site, home B 20 ms away), each home reaching only the hub (`nft` drops
    /// what comes from the other home, as two NATs would). The hub: `coplay hub --tls internal`.
    /// Home A: `coplay party FILM --hub LINK` with a headless mpv. Home B: `coplay join` of the
    /// party's link for anywhere, with a headless mpv and its own copy of the film under another
    /// name in another folder (`--media`). Measures the hub's start, the players' offset, a pause
    /// across, what a capture at the hub reads, and the hub killed and started again.
    public static func homes(executable: String, bench: String, trials: Int, seconds: Int) throws -> HomesFigures {
        guard getuid() == 0 else { throw BenchError(description: "homes makes network namespaces: run it as root") }
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        for program in ["caddy", "nats-server", "tcpdump", "tshark", "nft", "ethtool", "curl"]
        where Locations.onPath(program) == nil {
            throw BenchError(
                description: "homes needs \(program) (apt-get install \(program == "nft" ? "nftables" : program))")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-homes-\(getpid())")
        let (page, homeB, state) = (
            directory.appendingPathComponent("page"), directory.appendingPathComponent("home-b/Films/2026"),
            directory.appendingPathComponent("hub-state")
        )
        for folder in [page, homeB] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("<!doctype html><title>coplay</title>".utf8).write(to: page.appendingPathComponent("index.html"))
        let film = directory.appendingPathComponent("film.mkv").path
        try MpvClient.makeTestMedia(at: film, seconds: 120 + seconds + trials * 6)
        let copy = homeB.appendingPathComponent("Our Film (2026).mkv").path
        try FileManager.default.copyItem(atPath: film, toPath: copy)
        let hubFilms = directory.appendingPathComponent("hub-films")
        try FileManager.default.createDirectory(at: hubFilms, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: film, toPath: hubFilms.appendingPathComponent("film.mkv").path)
        var figures = HomesFigures()

        try onLAN(hosts: 3, link: "wan", dtim: 1, bench: bench) { prefix in
            try separateHomes(prefix: prefix, homes: [2, 3])
            let capture = directory.appendingPathComponent("hub.pcap").path
            let dump = Process()
            dump.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            dump.arguments = [
                "netns", "exec", "\(prefix)-hub", "tcpdump", "-i", "p1", "-U", "-s", "0", "-w", capture, "tcp",
            ]
            dump.standardOutput = FileHandle.nullDevice
            dump.standardError = FileHandle.nullDevice
            try dump.run()
            defer {
                if dump.isRunning {
                    dump.terminate()
                    waitForExit(dump)
                }
            }
            usleep(500_000)

            let started = MpvClient.unixNanos()
            var hub = try HubProcess(executable: executable, namespace: "\(prefix)-h1", state: state.path)
            defer { hub.stop() }
            guard let link = hub.link(timeout: .seconds(10)) else {
                throw BenchError(description: "the hub printed no link: \(hub.output)")
            }
            figures.linkPrinted = Double(hub.linkAt! - started) / 1e6
            let ca = state.appendingPathComponent("caddy/pki/authorities/local/root.crt").path
            if let base = hub.mediaBase {
                func fetch(_ url: String, range: Bool) throws -> String {
                    try Locations.run(
                        "/usr/sbin/ip",
                        [
                            "netns", "exec", "\(prefix)-h3", "curl", "-s", "-o", "/dev/null", "-w",
                            "%{http_code} %{size_download}",
                            "--cacert", ca,
                        ] + (range ? ["-r", "1000-1999"] : []) + [url]
                    ).output
                }
                figures.hubMediaRanged = try fetch(base + "film.mkv", range: true) == "206 1000"
                figures.hubMediaGuessRefused = try fetch("https://10.77.0.1:8443/media/film.mkv", range: false)
                    .hasPrefix("404")
            }
            print("  homes: the hub's link in \(Int(figures.linkPrinted!)) ms; the party in home A")
            let sockets = ["a", "b"].map { directory.appendingPathComponent("mpv-\($0).sock").path }
            let mpv = ["--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null"]
            let party = try AgentProcess(
                executable: executable, name: "ann", subcommand: ["party", film],
                arguments: [
                    "--hub", link, "--hub-ca", ca, "--listen", "10.77.0.2", "--interface", "eth0", "--no-qr", "--root",
                    page.path, "--mpv-socket", sockets[0],
                ] + mpv, namespace: "\(prefix)-h2")
            var agents = [party]
            defer {
                for agent in agents { agent.closeInput() }
                for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
            }
            guard let announced = party.waitForEvent(timeout: .seconds(15), where: { $0.name == "party" }),
                let anywhere = announced["anywhere"] as? String
            else { throw BenchError(description: "the party printed no link for anywhere: \(party.diagnostics)") }
            print("  homes: the party is up; a friend joins in home B from its link for anywhere")
            let friend = try AgentProcess(
                executable: executable, name: "ben", subcommand: ["join", anywhere],
                arguments: [
                    "--hub-ca", ca, "--media", directory.appendingPathComponent("home-b").path, "--interface", "eth0",
                    "--mpv-socket", sockets[1],
                ] + mpv, namespace: "\(prefix)-h3")
            agents.append(friend)
            let players = try sockets.map { try MpvClient(path: $0) }
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, players[1].property("path") as? String != copy { usleep(100_000) }
            figures.ownCopy = players[1].property("path") as? String == copy
            guard figures.ownCopy else {
                throw BenchError(description: "home B's mpv did not load its own copy: \(friend.diagnostics.suffix(8))")
            }
            print("  homes: home B plays its own copy; play, then the players measured")
            party.send("play")
            usleep(10_000_000)  // the clocks across the wan warmed up, the players steered together
            let air = try measureAir(players, seconds: seconds, trials: trials)
            (figures.offsets, figures.pause, figures.unpause, figures.lost) = (
                air.offsets, air.pause, air.unpause, air.lost
            )

            // The hub killed and started again; the homes play on meanwhile.
            for player in players where player.property("pause") as? Bool != false { player.set("pause", false) }
            usleep(2_000_000)
            print("  homes: the hub killed and started again")
            let mark = friend.allEvents.count
            hub.kill()
            var paused = false
            for _ in 0..<10 {
                if players.contains(where: { $0.property("pause") as? Bool == true }) { paused = true }
                usleep(100_000)
            }
            let restarted = MpvClient.unixNanos()
            hub = try HubProcess(executable: executable, namespace: "\(prefix)-h1", state: state.path)
            guard hub.link(timeout: .seconds(10)) == link else {
                throw BenchError(description: "the hub came back with another link: \(hub.output)")
            }
            // Back: home B hears home A within the last heartbeat (the hub was down over a second).
            let back = ContinuousClock.now + .seconds(15)
            while ContinuousClock.now < back {
                let heard = friend.peers(timeout: .seconds(1))?.contains {
                    ($0["name"] as? String) == "ann"
                        && (($0["lastSeenMillis"] as? NSNumber)?.doubleValue ?? .infinity) < 600
                }
                if heard == true {
                    figures.hubBack = Double(MpvClient.unixNanos() - restarted) / 1e9
                    break
                }
                usleep(50_000)
            }
            _ = mark
            for _ in 0..<10 {
                if players.contains(where: { $0.property("pause") as? Bool == true }) { paused = true }
                usleep(100_000)
            }
            figures.playedThrough = !paused
            players[0].set("pause", true)
            let followUntil = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < followUntil, !figures.followedAfter {
                figures.followedAfter = players[1].property("pause") as? Bool == true
                usleep(20_000)
            }
            if !figures.followedAfter {
                print("  home B after the hub's return, its last events:")
                for event in friend.allEvents.suffix(12) { print("    \(event.line.prefix(240))") }
                print("  home A's: ")
                for event in party.allEvents.suffix(8) { print("    \(event.line.prefix(240))") }
                print(
                    "  mpv B pause=\(players[1].property("pause") ?? "-"), mpv A pause=\(players[0].property("pause") ?? "-")"
                )
            }

            print("  homes: the capture read")
            dump.terminate()
            waitForExit(dump)
            let secrets = link.components(separatedBy: "#hub=").last ?? ""
            let key = anywhere.components(separatedBy: "key=").last ?? ""
            (figures.capturedSegments, figures.inClear) = try inspect(
                capture,
                forbidden: [
                    "CONNECT ", "PUB ", "MSG ", "SUB ", "INFO {", "PING\r\n", secrets, key, "film.mkv", "Our Film",
                    "party",
                ])
        }
        return figures
    }

    /// Waits up to 3 s for `process` to end, then kills it (Foundation's `waitUntilExit` never
    /// returned on a test's lane thread: it waits in a run loop nothing wakes).
    static func waitForExit(_ process: Process) {
        let deadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        while process.isRunning, ContinuousClock.now < deadline + .seconds(2) { usleep(10_000) }
    }

    /// The TCP segments of a capture that carry a payload, and how many hold each string.
    static func inspect(_ capture: String, forbidden: [String]) throws -> (Int, [String: Int]) {
        let (status, output) = try Locations.run(
            "/usr/bin/tshark", ["-r", capture, "-Y", "tcp.len > 0", "-T", "fields", "-e", "tcp.payload"])
        guard status == 0 else { throw BenchError(description: "tshark: \(output.prefix(300))") }
        var counts = Dictionary(uniqueKeysWithValues: forbidden.map { ($0, 0) })
        var segments = 0
        for line in output.split(separator: "\n") where !line.isEmpty {
            let hex = line.filter { $0 != ":" }
            guard hex.count.isMultiple(of: 2), hex.allSatisfy(\.isHexDigit) else { continue }
            segments += 1
            var bytes: [UInt8] = []
            bytes.reserveCapacity(hex.count / 2)
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                bytes.append(UInt8(hex[index..<next], radix: 16)!)
                index = next
            }
            let text = String(decoding: bytes, as: UTF8.self)
            for string in forbidden where !string.isEmpty && text.contains(string) { counts[string, default: 0] += 1 }
        }
        return (segments, counts)
    }

    public static func printHomes(_ figures: HomesFigures) {
        func ms(_ value: Double?) -> String { value.map { String(format: "%.0f ms", $0) } ?? "never" }
        print(
            "homes: a hub and two homes on the test LAN's wan model (home B 20 ms away), each home behind its own NAT")
        print("  coplay hub --tls internal → hub link printed: \(ms(figures.linkPrinted)) (target ≤ 2 s)")
        print("  home B plays its own copy (another name, another folder): \(figures.ownCopy ? "yes" : "no")")
        print(
            "  |home A's mpv − home B's mpv| while playing: \(figures.offsets.summary(unit: "ms")) (target p99 ≤ 2 ms)")
        print(
            "  pause in home A → paused in home B: \(figures.pause.summary(unit: "ms")) (target p50 ≤ one crossing + 25 ms)"
        )
        print(
            "  unpause → playing in home B: \(figures.unpause.summary(unit: "ms")); pauses not followed: \(figures.lost)"
        )
        let clear = figures.inClear.filter { $0.value > 0 }
        print(
            "  the hub's TCP captured at its port: \(figures.capturedSegments) segments with a payload; in clear: "
                + (clear.isEmpty ? "nothing (no NATS verb, secret, key, film name or session)" : "\(clear)"))
        print(
            "  the hub killed and started again → home B sees home A again: "
                + (figures.hubBack.map { String(format: "%.2f s", $0) } ?? "never")
                + " (target ≤ 5 s); players played on: "
                + (figures.playedThrough ? "yes" : "no") + "; a pause afterwards followed: "
                + (figures.followedAfter ? "yes" : "no"))
        print(
            "  the hub's own film (--media) from home B over HTTPS: a byte range "
                + (figures.hubMediaRanged ? "answered 206" : "NOT answered") + "; its name without the token: "
                + (figures.hubMediaGuessRefused ? "404" : "SERVED"))
    }
}

/// `coplay hub` in a namespace, its output read as it comes.
struct HubProcess {
    private let process = Process()
    private let lines = LockedLines()
    private(set) var linkAt: Int64?

    /// The homes benchmark's hub: its own CA, on port 8443, the page and films beside `state`.
    init(executable: String, namespace: String, state: String) throws {
        let folder = URL(fileURLWithPath: state).deletingLastPathComponent()
        try self.init(
            executable: executable, namespace: namespace,
            arguments: [
                "--tls", "internal", "--listen", "10.77.0.1", "--port", "8443", "--state", state, "--json", "--no-qr",
                "--root", folder.appendingPathComponent("page").path, "--media",
                folder.appendingPathComponent("hub-films").path,
            ])
    }

    /// `coplay hub ARGUMENTS` in `namespace` (with `--json`, for `link`).
    init(executable: String, namespace: String, arguments: [String], environment: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments =
            ["netns", "exec", namespace] + (environment.isEmpty ? [] : ["/usr/bin/env"] + environment)
            + [executable, "hub"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let lines = self.lines
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    lines.append(
                        String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self), at: MpvClient.unixNanos())
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
        }
    }

    var output: String { lines.all.map(\.line).joined(separator: "\n") }

    /// The first line holding `text`, waited for, and when it came (Unix ns).
    func line(containing text: String, timeout: Duration) -> (line: String, at: Int64)? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = lines.all.first(where: { $0.line.contains(text) }) { return found }
            usleep(10_000)
        }
        return nil
    }
    /// The first `--media` folder's URL, from the `hub` event.
    private(set) var mediaBase: String?

    /// The link of the hub's `hub` event, waited for.
    mutating func link(timeout: Duration) -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for (line, at) in lines.all where line.contains("\"event\":\"hub\"") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let link = object["link"] as? String
                else { continue }
                linkAt = at
                mediaBase = (object["media"] as? [String])?.first
                return link
            }
            usleep(10_000)
        }
        return nil
    }

    /// Killed outright (its nats-server and Caddy end with it).
    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        Benchmarks.waitForExit(process)
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        Benchmarks.waitForExit(process)
    }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [(line: String, at: Int64)] = []
    func append(_ line: String, at: Int64) {
        lock.lock()
        if lines.count < 10_000 { lines.append((line, at)) }
        lock.unlock()
    }
    var all: [(line: String, at: Int64)] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }
}

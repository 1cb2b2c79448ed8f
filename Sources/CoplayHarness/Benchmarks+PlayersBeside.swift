import Foundation
import Glibc

extension Benchmarks {
    /// A player beside mpv, read from outside whatever keeps them in step: VLC's clock through the
    /// benchmark's own script inside it (`VlcObserver`), Kodi's through the benchmark's own JSON-RPC
    /// connection (`KodiClient`), mpv's through its socket.
    struct BesidePlayer {
        /// Its key in the figures (`vlc`, `kodi`, `syncplay-vlc`).
        var key: String
        /// Its clock − mpv's at each step of its clock over `seconds` (ms), and its clock floor (ms).
        var offsets: (_ seconds: Double) -> (samples: [Double], floor: Double)
        /// Presses its own pause key as a person would, and waits (with `mpvPaused`, which waits up
        /// to a time for mpv's pause) for mpv to follow; returns when the player took the key (its
        /// own report of the pause, or the key's moment where the player's report comes late) and
        /// when mpv paused.
        var pressPause: (_ mpvPaused: (Duration) -> Int64?) throws -> (took: Int64, mpvPaused: Int64)?
        /// When the player said it plays again after `unixNanos`, if it has (asked every 2 ms).
        var playing: (_ since: Int64) -> Int64?
    }

    /// One group: mpv and the players beside it, and what starts them after a pause.
    struct BesideGroup {
        var mpv: MpvClient
        var players: [BesidePlayer]
        var resume: () -> Void
    }

    struct BesideFigures {
        /// The player's clock − mpv's at each step of its clock, ms.
        var offsets = Distribution([])
        /// Its pause key pressed → mpv paused, ms.
        var pause = Distribution([])
        /// A start after a pause: |the player playing − mpv playing|, ms.
        var startSpread = Distribution([])
        /// How finely the player's own clock tells where it plays: its steps against the moments
        /// they were seen (a line of slope 1 through their median), p99 of the residual, ms.
        var clockFloor = Double.nan
        var pausesMissed = 0

        var json: [String: Double] {
            [
                "offset_p99_ms": Distribution(offsets.sorted.map(abs)).percentile(0.99),
                "pause_p50_ms": pause.percentile(0.5), "start_spread_ms": startSpread.percentile(0.5),
                "clock_floor_ms": clockFloor,
            ]
        }
    }

    /// `players --player vlc,kodi`: the players named, beside mpv, under coplay (an agent each, on
    /// loopback); then VLC under Syncplay 1.6.9 where Debian's syncplay and syncplay-server are there
    /// (its server and two clients in a namespace of this run's own), the same clip in the same run.
    /// With `--json`, the figures as one object alone on standard output:
    /// `{"players": {"vlc": {...}, "kodi": {...}, "syncplay-vlc": {...}}, "start_spread_all_ms": N}`.
    static func playersBeside(_ options: Options, common: [String], jsonOutput: Int32?) throws {
        let (vlc, kodi) = (options.players.contains("vlc"), options.players.contains("kodi"))
        let isRoot = getuid() == 0
        guard MpvClient.isInstalled else { throw BenchError(description: "players needs mpv and ffmpeg") }
        guard !vlc || (VlcObserver.isInstalled && (!isRoot || Locations.onPath("setpriv") != nil)) else {
            throw BenchError(
                description:
                    "players --player vlc needs vlc (vlc-bin, vlc-plugin-base); as root also setpriv (VLC refuses root)"
            )
        }
        guard !kodi || KodiProcess.isInstalled else {
            throw BenchError(description: "players --player kodi needs kodi, xvfb, pulseaudio and setpriv")
        }
        // A folder the players may read and write in when they run as nobody (VLC's rc socket).
        let directory = URL(fileURLWithPath: "/tmp/coplay-bench-players-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o777)
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = directory.appendingPathComponent("pattern.mkv").path
        let seconds = max(options.seconds, 10)
        try MpvClient.makeTestMedia(at: media, seconds: seconds * 4 + options.rounds * 16 + 120)
        chmod(media, 0o644)
        // VLC as nobody, under a name that ends in `vlc` (Syncplay looks for that in the path).
        var vlcPath: String?
        if vlc {
            let bin = directory.appendingPathComponent("bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            let wrapper = bin.appendingPathComponent("vlc").path
            try VlcObserver.writeLauncher(at: wrapper, asNobody: isRoot)
            vlcPath = wrapper
        }
        print(
            "players --player \(options.players.joined(separator: ",")) beside mpv (vo=null, ao=null), one clip;"
                + (vlc ? " VLC 3 with vout and aout dummy, its clock read by the benchmark's own script in it;" : "")
                + (kodi ? " Kodi on a virtual display, its clock read by the benchmark's own JSON-RPC;" : "")
                + " mpv's audio-pts over its socket")

        var (figures, all) = try withCoplayGroup(
            options, common: common, media: media, directory: directory, vlc: vlcPath, kodi: kodi
        ) { try measureBeside($0, seconds: seconds, rounds: options.rounds) }
        if let vlcPath {
            if Locations.onPath("syncplay") != nil, Locations.onPath("syncplay-server") != nil, isRoot {
                let (syncplay, _) = try withSyncplayVLC(media: media, directory: directory, vlc: vlcPath) {
                    try measureBeside($0, seconds: seconds, rounds: options.rounds)
                }
                figures.merge(syncplay) { $1 }
            } else {
                print(
                    "  (Syncplay not measured: it needs Debian's syncplay and syncplay-server, and root for its namespace)"
                )
            }
        }
        reportBeside(figures, all: all)
        guard let jsonOutput else { return }
        fflush(nil)
        func number(_ value: Double) -> String { value.isFinite ? String(format: "%.3f", value) : "null" }
        let objects = figures.keys.sorted().map { name in
            let fields = figures[name]!.json.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\(number($0.value))" }
            return "\"\(name)\":{\(fields.joined(separator: ","))}"
        }
        let line = Array(
            "{\"players\":{\(objects.joined(separator: ","))},\"start_spread_all_ms\":\(number(all.percentile(0.5)))}\n"
                .utf8)
        _ = line.withUnsafeBytes { write(jsonOutput, $0.baseAddress, $0.count) }
        close(jsonOutput)
    }

    private static func reportBeside(_ figures: [String: BesideFigures], all: Distribution) {
        let names = [("vlc", "coplay, VLC"), ("kodi", "coplay, Kodi"), ("syncplay-vlc", "Syncplay, VLC")]
        let rows = names.compactMap { key, name in figures[key].map { (key, name, $0) } }
        func line(_ what: String, _ value: (BesideFigures) -> Distribution, ratioAt: Double) {
            print("  \(what)")
            for (_, name, figure) in rows {
                print(
                    "    \(name + ":")\(String(repeating: " ", count: max(1, 16 - name.count)))\(value(figure).summary(unit: "ms"))"
                )
            }
            guard let ours = figures["vlc"], let theirs = figures["syncplay-vlc"] else { return }
            let times = value(theirs).percentile(ratioAt) / value(ours).percentile(ratioAt)
            if times.isFinite {
                print("    Syncplay / coplay with VLC at p\(Int(ratioAt * 100)): \(String(format: "%.0f", times))×")
            }
        }
        line("|the player's clock − mpv's| while playing", { Distribution($0.offsets.sorted.map(abs)) }, ratioAt: 0.99)
        line("its pause key pressed → mpv paused", \.pause, ratioAt: 0.5)
        line("a start after a pause: |the player playing − mpv playing|", \.startSpread, ratioAt: 0.5)
        if all.count > 0 {
            print(
                "  a start after a pause, coplay: all players playing within \(all.summary(unit: "ms")) of each other")
        }
        for (_, name, figure) in rows {
            print(
                "  \(name): the player's clock floor (its steps against when they were seen, p99 of the residual) \(String(format: "%.2f", figure.clockFloor)) ms"
                    + (figure.pausesMissed > 0 ? "; \(figure.pausesMissed) pauses did not reach mpv" : ""))
        }
    }

    /// Agent a drives mpv; agent b VLC (`--player vlc`) and agent c Kodi (`--player kodi`), as
    /// asked; all on loopback.
    private static func withCoplayGroup<T>(
        _ options: Options, common: [String], media: String, directory: URL, vlc: String?, kodi: Bool,
        _ body: (BesideGroup) throws -> T
    ) throws -> T {
        let mpvSocket = directory.appendingPathComponent("coplay-mpv.sock").path
        var agents: [AgentProcess] = []
        var kodiProcess: KodiProcess?
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
            kodiProcess?.stop()
        }
        agents.append(
            try start(
                options, name: "a",
                common + ["--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null"]
                    + ["--mpv-socket", mpvSocket]))
        let a = agents[0]
        let mpv = try MpvClient(path: mpvSocket)
        var players: [BesidePlayer] = []
        var loaded: [() -> Bool] = []
        if let vlc {
            let rc = directory.appendingPathComponent("coplay-vlc-rc.sock").path
            let observer = try VlcObserver()
            let b = try AgentProcess(
                executable: options.executable, name: "b",
                arguments: common + ["--player", "vlc", "--vlc-path", vlc]
                    + ["--vlc-option", "vout=dummy", "--vlc-option", "aout=dummy", "--vlc-option", "extraintf=oldrc"]
                    + ["--vlc-option", "rc-unix=\(rc)", "--vlc-option", "rc-fake-tty"],
                environment: observer.observeEnvironment)
            agents.append(b)
            players.append(vlcPlayer("vlc", observer: observer, mpv: mpv, remoteControl: rc))
            loaded.append { !observer.steps(since: 0).isEmpty }
        }
        if kodi {
            let port = 20_000 + Int(getpid() % 20_000)
            let process = try KodiProcess(folder: directory.appendingPathComponent("kodi"), port: port)
            kodiProcess = process
            let remote = try KodiClient(port: port)
            agents.append(
                try start(options, name: "c", common + ["--player", "kodi:127.0.0.1:\(port)"]))
            players.append(kodiPlayer(remote, mpv: mpv))
            loaded.append { remote.time() != nil }
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while a.allEvents.filter({ $0.name == "peer-joined" }).count < players.count {
            guard ContinuousClock.now < deadline else {
                throw BenchError(description: "the agents did not see each other")
            }
            usleep(50_000)
        }
        a.send("share \(media) id=pattern")
        let loadDeadline = ContinuousClock.now + .seconds(15)
        while !loaded.allSatisfy({ $0() }) {
            guard ContinuousClock.now < loadDeadline else {
                throw BenchError(description: "a player did not open the clip")
            }
            usleep(50_000)
        }
        usleep(1_000_000)
        a.send("play")
        return try body(BesideGroup(mpv: mpv, players: players, resume: { a.send("play") }))
    }

    /// VLC read through the benchmark's observer, paused through its own rc interface.
    private static func vlcPlayer(_ key: String, observer: VlcObserver, mpv: MpvClient, remoteControl: String)
        -> BesidePlayer
    {
        BesidePlayer(
            key: key,
            offsets: { seconds in
                let since = MpvClient.unixNanos()
                let offsets = observer.offsets(against: mpv, since: since, seconds: seconds)
                return (offsets, clockFloor(observer.steps(since: since)))
            },
            pressPause: { mpvPaused in
                // rc's pause is a toggle, as the space bar is: pressed while VLC plays.
                let deadline = ContinuousClock.now + .seconds(3)
                while !observer.isPlaying, ContinuousClock.now < deadline { usleep(2_000) }
                let pressed = MpvClient.unixNanos()
                try VlcObserver.remoteControl(remoteControl, "pause")
                let paused = mpvPaused(.seconds(5))
                guard let paused, let took = observer.paused(true, since: pressed) else {
                    if verbose {
                        print(
                            "    VLC's pause key: mpv paused \(paused != nil), VLC said paused \(observer.paused(true, since: pressed) != nil), playing before \(observer.isPlaying)"
                        )
                    }
                    return nil
                }
                return (took, paused)
            },
            playing: { observer.paused(false, since: $0) })
    }

    /// Kodi read and paused through the benchmark's own JSON-RPC connection, its remote's pause key
    /// sent as a remote sends it (`Input.ExecuteAction pause`).
    private static func kodiPlayer(_ remote: KodiClient, mpv: MpvClient) -> BesidePlayer {
        BesidePlayer(
            key: "kodi",
            offsets: { seconds in
                let (offsets, steps) = remote.steppedOffsets(against: mpv, seconds: seconds)
                return (offsets, clockFloor(steps))
            },
            pressPause: { mpvPaused in
                // Pressed while Kodi plays, not while a skip of the follower's holds it still; and
                // pressed again where Kodi did not take the key (seen now and then with the first key
                // of a run: no OnPause, still playing), which is asked of Kodi only after a second
                // without mpv pausing. The key's moment is returned: Kodi's own OnPause is read only
                // when the connection is next used.
                for _ in 0..<3 {
                    let deadline = ContinuousClock.now + .seconds(3)
                    while remote.time()?.speed != 1, ContinuousClock.now < deadline { usleep(2_000) }
                    let sent = MpvClient.unixNanos()
                    remote.call("Input.ExecuteAction", ["action": "pause"])
                    if let paused = mpvPaused(.seconds(1)) { return (sent, paused) }
                    if remote.time()?.speed == 0 { return mpvPaused(.seconds(4)).map { (sent, $0) } }
                }
                return nil
            },
            playing: { since in
                remote.call("JSONRPC.Ping", nil)  // reads the notifications that came meanwhile
                return remote.notified("Player.OnResume", since: since)
            })
    }

    /// Syncplay's server and two `syncplay --no-gui` clients in a namespace of this run's own: client
    /// a starts mpv, client b VLC with Syncplay's own interface script and, beside it, the
    /// benchmark's (`VlcObserver.script`), which reaches the observer on the namespace's loopback.
    private static func withSyncplayVLC<T>(
        media: String, directory: URL, vlc: String, _ body: (BesideGroup) throws -> T
    )
        throws -> T
    {
        let namespace = "cpvlc\(getpid())"
        try makeNamespace(namespace)
        defer { removeNamespace(namespace) }
        let observer = try VlcObserver(namespace: namespace)
        var processes: [Process] = []
        var mpv: MpvClient?
        let rc = directory.appendingPathComponent("syncplay-vlc-rc.sock").path
        defer {
            // Syncplay's clients do not end on SIGTERM, and their players outlive them (VLC ignores
            // SIGTERM while its interfaces run): quit mpv, end VLC, then kill what is left.
            mpv?.command(["quit"])
            try? VlcObserver.remoteControl(rc, "quit")
            usleep(300_000)
            for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            for process in processes { process.waitUntilExit() }
            for pid in VlcObserver.pids(naming: rc) { kill(pid, SIGKILL) }
        }
        let port = syncplayPort
        func home(_ name: String) throws -> String {
            let home = directory.appendingPathComponent("syncplay-home-\(name)")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            chmod(home.path, 0o777)
            return home.path
        }
        processes.append(try startSyncplayServer(in: namespace, home: try home("server")))
        let client = ["syncplay", "--no-gui", "--no-store", "-a", "127.0.0.1:\(port)", "-r", "bench"]
        let mpvSocket = directory.appendingPathComponent("syncplay-mpv.sock").path
        processes.append(
            try spawnInNamespace(
                namespace,
                client + ["-n", "a", "--player-path", try Locations.onPath("mpv").orThrow("mpv"), media]
                    + ["--", "--input-ipc-server=\(mpvSocket)", "--vo=null", "--ao=null"], home: try home("a")))
        let player = try MpvClient(path: mpvSocket, timeout: .seconds(20))
        mpv = player
        // Syncplay copies its syncplay.lua into HOME's VLC interface folder; the observer goes beside.
        let homeB = try home("b")
        var folder = homeB
        for part in [".local", "share", "vlc", "lua", "intf"] {
            folder += "/" + part
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            chmod(folder, 0o777)
        }
        try VlcObserver.script.write(toFile: folder + "/coplayobserve.lua", atomically: true, encoding: .utf8)
        chmod(folder + "/coplayobserve.lua", 0o644)
        // After Syncplay's own options, so that these win: no console interface; Syncplay's Lua
        // interface (`--lua-intf=syncplay`), the rc one, and the observer.
        processes.append(
            try spawnInNamespace(
                namespace,
                client + ["-n", "b", "--player-path", vlc, media, "--", "--intf=dummy"]
                    + ["--extraintf=luaintf:oldrc:luaintf{intf=coplayobserve}", "--rc-unix=\(rc)", "--rc-fake-tty"]
                    + ["--vout=dummy", "--aout=dummy"], home: homeB, environment: observer.observeEnvironment))
        let deadline = ContinuousClock.now + .seconds(20)
        while observer.steps(since: 0).isEmpty || !FileManager.default.fileExists(atPath: rc) {
            guard ContinuousClock.now < deadline, processes.allSatisfy(\.isRunning) else {
                let log = (try? String(contentsOfFile: homeB + "/output.log", encoding: .utf8)) ?? ""
                throw BenchError(description: "Syncplay's VLC did not start: \(log.suffix(600))")
            }
            usleep(50_000)
        }
        usleep(3_000_000)  // both clients in the room with the file
        player.set("pause", false)
        return try body(
            BesideGroup(
                mpv: player, players: [vlcPlayer("syncplay-vlc", observer: observer, mpv: player, remoteControl: rc)],
                resume: { player.set("pause", false) }))
    }

    /// On either setup: each player's offset while playing, then its pause key pressed and the
    /// start after it, `rounds` times for each player; and how far apart all players start.
    private static let verbose = ProcessInfo.processInfo.environment["COPLAY_BENCH_VERBOSE"] == "1"

    private static func measureBeside(_ group: BesideGroup, seconds: Int, rounds: Int) throws -> (
        [String: BesideFigures], all: Distribution
    ) {
        let mpv = group.mpv
        usleep(5_000_000)  // settled: the first seconds after a start are the follower's to settle
        var figures: [String: BesideFigures] = [:]
        for player in group.players {
            let (samples, floor) = player.offsets(Double(seconds))
            figures[player.key] = BesideFigures(offsets: Distribution(samples), clockFloor: floor)
        }
        let watcher = try MpvClient(path: mpv.path)
        watcher.command(["observe_property", 1, "pause"])
        var pauses: [String: [Double]] = [:]
        var spreads: [String: [Double]] = [:]
        var all: [Double] = []
        for round in 0..<(rounds * group.players.count) {
            let pressed = group.players[round % group.players.count]
            _ = watcher.drainPending()
            let paused = try pressed.pressPause { watcher.waitForChange(of: "pause", to: true, timeout: $0) }
            if let paused {
                pauses[pressed.key, default: []].append(Double(paused.mpvPaused - paused.took) / 1e6)
            } else {
                figures[pressed.key]?.pausesMissed += 1
            }
            usleep(800_000)
            _ = watcher.drainPending()
            let resumed = MpvClient.unixNanos()
            group.resume()
            let mpvPlaying = watcher.waitForChange(of: "pause", to: false, timeout: .seconds(5))
            var playing: [String: Int64] = [:]
            let deadline = ContinuousClock.now + .seconds(5)
            while playing.count < group.players.count, ContinuousClock.now < deadline {
                for player in group.players where playing[player.key] == nil {
                    playing[player.key] = player.playing(resumed)
                }
                usleep(2_000)
            }
            if let mpvPlaying {
                for (key, moment) in playing {
                    spreads[key, default: []].append(abs(Double(moment - mpvPlaying)) / 1e6)
                }
                if playing.count == group.players.count {
                    let moments = [mpvPlaying] + Array(playing.values)
                    all.append(Double(moments.max()! - moments.min()!) / 1e6)
                    if verbose {
                        print(
                            "    start \(round): "
                                + playing.map { "\($0.key) \(Double($0.value - mpvPlaying) / 1e6) ms" }.joined(
                                    separator: ", "))
                    }
                }
            }
            if mpv.property("pause") as? Bool == true { mpv.set("pause", false) }
            usleep(2_500_000 + UInt32(round * 137_000 % 500_000))
        }
        for key in figures.keys {
            figures[key]?.pause = Distribution(pauses[key] ?? [])
            figures[key]?.startSpread = Distribution(spreads[key] ?? [])
        }
        return (figures, group.players.count > 1 ? Distribution(all) : Distribution([]))
    }

    /// How finely a clock that steps tells where it plays: the lag of each step (when it was seen
    /// less where it says it is) against the mean of its neighbours' lags, p99 of that residual (ms).
    /// Neighbours, not one line, since a follower steering the rate bends the line; a seek or a
    /// skip in the window counts once as error.
    static func clockFloor(_ steps: [ClockStep]) -> Double {
        guard steps.count >= 10, let first = steps.first else { return .nan }
        let lags: [Double] = steps.map { step in
            let seen = Double(step.atUnixNanos - first.atUnixNanos) / 1e6
            return seen - (step.position - first.position) * 1000
        }
        let residuals: [Double] = (1..<(lags.count - 1)).map { index in
            let neighbours = (lags[index - 1] + lags[index + 1]) / 2
            return abs(lags[index] - neighbours)
        }
        return Distribution(residuals).percentile(0.99)
    }
}

import Foundation
import Glibc
import Synchronization

extension Benchmarks {
    /// `coplay-bench queue`: three agents on loopback, each driving a headless mpv, play a queue
    /// through. Prints, from what each mpv reports (a separate IPC client on each, recording its
    /// events as they arrive):
    /// - each transition: the last player's end of the item (`eof-reached`) → every player playing
    ///   the next one (its file loaded, `pause` false);
    /// - `next` typed into one agent, or `>` pressed in one mpv (in turn), while a long item plays
    ///   → every player playing the next.
    public static func queue(_ options: Options, trials: Int) throws {
        guard MpvClient.isInstalled else { throw BenchError(description: "mpv is not installed (apt-get install mpv)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-queue-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let short = directory.appendingPathComponent("short.mkv").path
        let long = directory.appendingPathComponent("long.mkv").path
        try MpvClient.makeTestMedia(at: short, seconds: 2)
        try MpvClient.makeTestMedia(at: long, seconds: 60)
        // Each entry a file of its own (mpv's path tells the items apart).
        let shorts = try (0...trials).map { index in
            let path = directory.appendingPathComponent("short-\(index).mkv").path
            try FileManager.default.copyItem(atPath: short, toPath: path)
            return path
        }
        let longs = try (0...2 * trials).map { index in
            let path = directory.appendingPathComponent("long-\(index).mkv").path
            try FileManager.default.linkItem(atPath: long, toPath: path)
            return path
        }
        try mpvAlone(long, in: directory)
        print(
            "queue: 3 agents on loopback, one headless mpv each; \(trials) transitions at an item's end, \(trials) by next typed and \(trials) by > pressed"
        )
        let port = String(46_000 + Int(getpid() % 1_000))
        var agents: [AgentProcess] = []
        var players: [MpvClient] = []
        defer {
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
        }
        for index in 0..<3 {
            let socket = directory.appendingPathComponent("mpv-\(index).sock").path
            agents.append(
                try AgentProcess(
                    executable: options.executable, name: "q\(index)",
                    arguments: [
                        "--interface", "lo", "--group", "239.255.77.1:\(port)", "--session", "queue-\(getpid())",
                        "--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null", "--mpv-socket", socket,
                    ]))
            players.append(try MpvClient(path: socket))
        }
        let recorders = try players.map { try Recorder(path: $0.path) }
        defer { for recorder in recorders { recorder.stop() } }
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, (agents[0].peers()?.count ?? 0) < 2 { usleep(100_000) }

        // At an item's end.
        for (index, path) in shorts.enumerated() {
            agents[index % 3].send("queue add \(path) id=s\(index)")
            usleep(30_000)
        }
        usleep(1_500_000)
        agents[1].send("play")
        usleep(UInt32((trials + 1) * 2_300_000 + 1_500_000))
        var atEnd: [Double] = []
        var atEndByClock: [Double] = []
        var atEndApart: [Double] = []
        for index in 0..<trials {
            let ends = recorders.compactMap { $0.firstChange("eof-reached", to: true, whilePlaying: shorts[index]) }
            let plays = recorders.compactMap { $0.firstUnpause(of: shorts[index + 1]) }
            // A player that had not quite reached its end when the group moved on reports none.
            guard !ends.isEmpty, plays.count == 3 else {
                print("    transition \(index): \(ends.count) ends and \(plays.count) starts seen")
                continue
            }
            atEnd.append(Double(plays.max()! - ends.max()!) / 1e6)
            let clocks = recorders.compactMap { $0.clockStart(of: shorts[index + 1]) }
            if clocks.count == 3 {
                atEndByClock.append(Double(clocks.max()! - ends.max()!) / 1e6)
                atEndApart.append(Double(clocks.max()! - clocks.min()!) / 1e6)
            }
            if ProcessInfo.processInfo.environment["COPLAY_BENCH_DEBUG"] != nil {
                let origin = ends.max()!
                print(
                    "    transition \(index): ends \(ends.map { Double($0 - origin) / 1e6 }) plays \(plays.map { Double($0 - origin) / 1e6 }) clocks \(clocks.map { Double($0 - origin) / 1e6 })"
                )
                printEvents(of: agents, from: origin - 100_000_000, to: plays.max()! + 20_000_000, origin: origin)
            }
        }
        print(
            "  end of an item (the last player's) → every player playing the next: \(Distribution(atEnd).summary(unit: "ms"))"
        )
        print(
            "    by each player's audio clock (the instant it says the next began): \(Distribution(atEndByClock).summary(unit: "ms"))"
        )
        print("    players apart at the start, by those instants: \(Distribution(atEndApart).summary(unit: "ms"))")
        if ProcessInfo.processInfo.environment["COPLAY_BENCH_DEBUG"] != nil {
            for (index, recorder) in recorders.enumerated() { print("player \(index): \(recorder.dump())") }
        }

        // By `next`.
        // After the short entries, where the group is: `next` goes to the first long one.
        for (index, path) in longs.enumerated() {
            agents[index % 3].send("queue add \(path) id=l\(index)")
            usleep(30_000)
        }
        usleep(500_000)
        // The queue's order, as the group holds it.
        let mark = agents[0].allEvents.count
        agents[0].send("queue")
        let order =
            (agents[0].waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "queue" }?["items"]
            as? [[String: Any]])?
            .compactMap { $0["url"] as? String } ?? longs
        agents[0].send("next")
        usleep(1_500_000)
        // Typed into an agent and pressed in an mpv (`>`, which coplay binds to `next`), in turn.
        var typed = NextFigures()
        var keyed = NextFigures()
        for index in 0..<(2 * trials) {
            guard let current = players[0].property("path") as? String, let at = order.firstIndex(of: current),
                at + 1 < order.count
            else {
                print("    next \(index): player 0 is on \(players[0].property("path") ?? "nothing"): stopped")
                break
            }
            usleep(800_000)
            let byKey = index % 2 == 1
            let pressed = MpvClient.unixNanos()
            if byKey {
                players[(index / 2) % 3].command(["keypress", ">"])
            } else {
                agents[(index / 2) % 3].send("next")
            }
            usleep(1_200_000)
            let plays = recorders.compactMap { $0.firstUnpause(of: order[at + 1], after: pressed) }
            guard plays.count == 3 else {
                print("    next \(index): \(plays.count) players playing the next item")
                continue
            }
            let clocks = recorders.compactMap { $0.clockStart(of: order[at + 1]) }
            if byKey {
                keyed.add(plays: plays, clocks: clocks, pressed: pressed)
            } else {
                typed.add(plays: plays, clocks: clocks, pressed: pressed)
            }
            if ProcessInfo.processInfo.environment["COPLAY_BENCH_DEBUG"] != nil {
                print(
                    "    next \(index)\(byKey ? " (>)" : ""): plays \(plays.map { Double($0 - pressed) / 1e6 }) clocks \(clocks.map { Double($0 - pressed) / 1e6 })"
                )
                for (number, recorder) in recorders.enumerated() {
                    print("      mpv \(number): \(recorder.events(from: pressed, to: plays.max()! + 20_000_000))")
                }
                printEvents(of: agents, from: pressed, to: plays.max()! + 20_000_000, origin: pressed)
            }
        }
        typed.print(as: "next typed into one agent")
        keyed.print(as: "> pressed in one mpv")
        let departures = agents.map { $0.allEvents.count { $0.name == "peer-left" } }.reduce(0, +)
        print("  peer-left events: \(departures)")
    }

    /// The figures of one way of moving the group on by hand: press → every player playing the
    /// next item, by each mpv's unpause and by its audio clock; how far apart they began it.
    private struct NextFigures {
        var byUnpause: [Double] = []
        var byClock: [Double] = []
        var apart: [Double] = []

        mutating func add(plays: [Int64], clocks: [Int64], pressed: Int64) {
            byUnpause.append(Double(plays.max()! - pressed) / 1e6)
            guard clocks.count == 3 else { return }
            byClock.append(Double(clocks.max()! - pressed) / 1e6)
            apart.append(Double(clocks.max()! - clocks.min()!) / 1e6)
        }

        func print(as label: String) {
            Swift.print(
                "  \(label) → every player playing the next item: \(Distribution(byUnpause).summary(unit: "ms"))")
            Swift.print("    by each player's audio clock: \(Distribution(byClock).summary(unit: "ms"))")
            Swift.print("    players apart at the start, by those instants: \(Distribution(apart).summary(unit: "ms"))")
        }
    }

    /// Each agent's events between `start` and `end` (Unix nanoseconds), each with its time in
    /// milliseconds from `origin` (with COPLAY_BENCH_DEBUG).
    private static func printEvents(of agents: [AgentProcess], from start: Int64, to end: Int64, origin: Int64) {
        for (number, agent) in agents.enumerated() {
            let seen = agent.allEvents.filter { $0.atUnixNanos > start && $0.atUnixNanos < end }
            print(
                "      agent \(number): "
                    + seen.map { "\($0.name)@\(String(format: "%.1f", Double($0.atUnixNanos - origin) / 1e6))" }
                    .joined(separator: " "))
        }
    }

    /// What mpv alone costs a `next` (no coplay): a headless mpv plays `path` for half a second, is
    /// paused, and at once told to load it again; the time from that `loadfile` to `file-loaded`,
    /// at mpv's own `video-timing-offset` (50 ms: its video output blocks until a frame's time,
    /// rendered that far ahead) and at the 10 ms coplay sets.
    private static func mpvAlone(_ path: String, in directory: URL) throws {
        let socket = directory.appendingPathComponent("mpv-alone.sock").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Locations.onPath("mpv").orThrow("mpv is not installed"))
        process.arguments = [
            "--idle=yes", "--keep-open=yes", "--pause", "--no-terminal", "--vo=null", "--ao=null",
            "--input-ipc-server=\(socket)",
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let mpv = try MpvClient(path: socket)
        func event(_ name: String) -> Int64? {
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline, let (event, at) = mpv.nextEvent() {
                if event["event"] as? String == name { return at }
            }
            return nil
        }
        print("mpv alone: loadfile right after pausing a playing file → file-loaded (8 each)")
        for offset in [0.05, 0.01] {
            mpv.set("video-timing-offset", offset)
            var costs: [Double] = []
            for _ in 0..<8 {
                mpv.command(["loadfile", path, "replace"])
                guard event("playback-restart") != nil else { continue }
                mpv.set("pause", false)
                usleep(500_000)
                mpv.set("pause", true)
                let sent = MpvClient.unixNanos()
                mpv.command(["loadfile", path, "replace"])
                guard let loaded = event("file-loaded") else { continue }
                costs.append(Double(loaded - sent) / 1e6)
            }
            let label = offset == 0.05 ? "mpv's default" : "coplay's"
            print(
                "  video-timing-offset \(offset) (\(label)): \(Distribution(costs).summary(unit: "ms"))")
        }
    }

    /// Records one mpv's `pause`, `eof-reached` and `path` changes as they arrive, on a thread of
    /// its own; and, some 50 ms after each unpause, where mpv's audio clock says the file began
    /// playing (on a second client, so that no event is missed meanwhile).
    private final class Recorder: Sendable {
        private let client: MpvClient
        private let sampler: MpvClient
        private let changes = Mutex<[(name: String, value: String, at: Int64)]>([])
        private let unpauses = Mutex<[Int64]>([])
        /// For each file: the instant at which its position was 0, as mpv's audio clock told it
        /// after its first unpause (the wall time of a sample, less `audio-pts` / `speed`).
        private let clockStarts = Mutex<[String: Int64]>([:])
        private let stopped = Atomic<Bool>(false)

        init(path: String) throws {
            client = try MpvClient(path: path)
            sampler = try MpvClient(path: path)
            Thread { [self] in
                while !stopped.load(ordering: .relaxed) {
                    usleep(5_000)
                    guard let due = unpauses.withLock({ $0.first }), MpvClient.unixNanos() >= due + 50_000_000 else {
                        continue
                    }
                    unpauses.withLock { _ = $0.removeFirst() }
                    let speed = sampler.number("speed") ?? 1
                    let sample = sampler.command(["get_property", "audio-pts"])
                    guard let path = sampler.property("path") as? String,
                        let position = (sample.data as? NSNumber)?.doubleValue
                    else { continue }
                    let start = sample.atUnixNanos - Int64(position / max(speed, 0.01) * 1e9)
                    clockStarts.withLock { if $0[path] == nil { $0[path] = start } }
                }
            }.start()
            for (id, name) in ["pause", "eof-reached", "path"].enumerated() {
                client.command(["observe_property", id + 1, name])
            }
            Thread { [self] in
                while !stopped.load(ordering: .relaxed) {
                    guard let (event, at) = client.nextEvent() else { continue }
                    if let name = event["event"] as? String, ["file-loaded", "playback-restart"].contains(name) {
                        changes.withLock { $0.append((name, "", at)) }
                        continue
                    }
                    guard event["event"] as? String == "property-change", let name = event["name"] as? String else {
                        continue
                    }
                    let value: String
                    switch event["data"] {
                    case let flag as Bool: value = flag ? "true" : "false"
                    case let text as String: value = text
                    default: value = ""
                    }
                    changes.withLock { $0.append((name, value, at)) }
                    if name == "pause", value == "false" { unpauses.withLock { $0.append(at) } }
                }
            }.start()
        }

        func stop() { stopped.store(true, ordering: .relaxed) }

        /// When mpv's audio clock says `path` was at its start (see `clockStarts`).
        func clockStart(of path: String) -> Int64? { clockStarts.withLock { $0[path] } }

        /// What mpv said between `start` and `end`, in milliseconds from `start` (for debugging).
        func events(from start: Int64, to end: Int64) -> String {
            changes.withLock {
                $0.filter { $0.at >= start && $0.at <= end }
                    .map {
                        "\($0.name)=\($0.value.split(separator: "/").last ?? "")@\(String(format: "%.1f", Double($0.at - start) / 1e6))"
                    }
                    .joined(separator: " ")
            }
        }

        func dump() -> String {
            changes.withLock {
                $0.map { "\($0.name)=\($0.value.split(separator: "/").last ?? "")@\($0.at / 1_000_000 % 100_000)" }
                    .joined(separator: " ")
            }
        }

        /// When `name` first changed to `value` while `path` was loaded.
        func firstChange(_ name: String, to value: Bool, whilePlaying path: String) -> Int64? {
            changes.withLock { changes in
                var loaded = ""
                for change in changes {
                    if change.name == "path" { loaded = change.value }
                    if loaded == path, change.name == name, change.value == (value ? "true" : "false") {
                        return change.at
                    }
                }
                return nil
            }
        }

        /// When mpv first played `path` (its `pause` false once it was loaded), after `after`.
        func firstUnpause(of path: String, after: Int64 = 0) -> Int64? {
            changes.withLock { changes in
                var loaded = ""
                for change in changes where change.at >= after || change.name == "path" {
                    if change.name == "path" { loaded = change.value }
                    if loaded == path, change.at >= after, change.name == "pause", change.value == "false" {
                        return change.at
                    }
                }
                return nil
            }
        }
    }
}

import CoplayHarness
import Foundation
import Testing

/// `coplay party`, run as a person runs it, on loopback: the link it prints, an agent that joins
/// from that link through the party's own nats-server, the films fetched from its web server, and
/// nothing of the party left behind however it ends.
@Suite(.serialized) struct PartyTests {
    static let serverInstalled = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].contains {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// A folder for one party: a page (a stand-in index.html: the real page is built later in CI),
    /// a film, and a runtime directory of its own, to see what the party leaves there.
    struct Room {
        let folder: URL
        var page: String { folder.appendingPathComponent("page").path }
        var runtime: String { folder.appendingPathComponent("run").path }
        let films: [String]

        init(films named: [(name: String, bytes: Data)]) throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "coplay-party-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            self.folder = folder
            for sub in ["page", "run"] {
                try FileManager.default.createDirectory(
                    at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
            }
            try Data("<!doctype html><title>party</title>".utf8).write(
                to: folder.appendingPathComponent("page/index.html"))
            films = try named.map { film in
                let url = folder.appendingPathComponent(film.name)
                try film.bytes.write(to: url)
                return url.path
            }
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }

        /// The party's host on loopback, its group on a port of this test run's own.
        func party(player: [String], salt: Int, extra: [String] = []) throws -> AgentProcess {
            try AgentProcess(
                executable: coplay, name: "host", subcommand: ["party"] + films,
                arguments: [
                    "--listen", "127.0.0.1", "--interface", "lo", "--group", "239.255.77.1:\(privatePort(salt))",
                    "--no-qr", "--root", page,
                ] + player + extra,
                environment: ["XDG_RUNTIME_DIR": runtime])
        }
    }

    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    /// The party's nats-server: a grandchild, under the watchdog `sh`.
    static func relayServer(of party: AgentProcess) -> Int32? {
        for watchdog in ProcessTable.children(of: party.pid) where watchdog.name == "sh" {
            if let server = ProcessTable.children(of: watchdog.pid).first(where: { $0.name == "nats-server" }) {
                return server.pid
            }
        }
        return nil
    }

    @Test(.enabled(if: serverInstalled, "needs nats-server (apt-get install nats-server)"))
    func aPartyPrintsItsLink_andAnAgentJoinsFromIt_andFetchesTheFilmWithRanges() throws {
        let film = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let room = try Room(films: [("film one.webm", film), ("two.webm", Data([1, 2, 3]))])
        defer { room.remove() }
        let started = ContinuousClock.now
        let host = try room.party(player: ["--player", "none"], salt: 23)
        let announced = try #require(host.waitForEvent(timeout: .seconds(10)) { $0.name == "party" })
        print(
            "party: the link printed \((ContinuousClock.now - started).formatted(.units(allowed: [.milliseconds]))) after the start"
        )
        let link = try #require(announced["link"] as? String)
        let items = try #require(announced["items"] as? [String])
        #expect(items.count == 2 && items[0].hasSuffix("/film%20one.webm") && items[1].hasSuffix("/two.webm"))
        #expect(link.hasPrefix("http://127.0.0.1:") && link.contains("#relay=ws%3A%2F%2F") && link.contains("&key="))

        // The film, as a browser seeks in it; the page; and the film's folder without its secret.
        let media = try #require(URL(string: items[0]))
        let part = try HTTP.get(media, headers: ["Range: bytes=1000-1999"])
        #expect(part.status == 206 && part.body == film[1000..<2000])
        #expect(part.head.contains("Content-Range: bytes 1000-1999/100000"))
        #expect(try HTTP.get(URL(string: link)!).status == 200, "the page")
        let guessed = URL(string: "http://\(media.host!):\(media.port!)/media/film%20one.webm")!
        #expect(try HTTP.get(guessed).status == 404, "no film without the link's secret")
        let oversized = try HTTP.get(URL(string: link)!, headers: ["X-Pad: " + String(repeating: "a", count: 9000)])
        #expect(oversized.status == 431, "a head over 8 KiB, whole in one go")

        // An agent joins from the link alone, through the party's relay and key.
        let sofa = try AgentProcess(
            executable: coplay, name: "sofa", subcommand: ["join", link],
            arguments: ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(24))", "--player", "simulated"])
        let adopted = sofa.waitForEvent(timeout: .seconds(10)) { $0.name == "activity" }
        #expect((adopted?["url"] as? String) == items[0], "the joiner's item: \(adopted?.line ?? "none")")
        #expect(
            sofa.waitForEvent(timeout: .seconds(10)) {
                $0.name == "peer-joined" && $0.peer("name") as? String == "host"
            }
                != nil, "the joiner meets the host (its group port differs: through the relay alone)")
        sofa.send("play")
        #expect(host.waitForEvent(timeout: .seconds(10)) { $0.name == "playing" } != nil, "a play from the joiner")
        sofa.closeInput()
        _ = sofa.waitForExit(timeout: .seconds(5))

        // Killed outright, the party takes its relay with it.
        let server = try #require(Self.relayServer(of: host), "the party's nats-server")
        let killed = ContinuousClock.now
        host.signal(SIGKILL)
        #expect(
            Self.waitUntil(seconds: 5) { !ProcessTable.isRunning(server) }, "nats-server \(server) outlived the party")
        print(
            "party: nats-server ended \((ContinuousClock.now - killed).formatted(.units(allowed: [.milliseconds]))) after the party's SIGKILL"
        )
        if ProcessTable.isRunning(server) { kill(server, SIGKILL) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: room.runtime).isEmpty, "left on disk")
    }

    @Test(.enabled(if: serverInstalled, "needs nats-server (apt-get install nats-server)"))
    func aPartyEndedByCtrlC_exitsZero_tellsEveryone_andLeavesNothingBehind() throws {
        let room = try Room(films: [("film.webm", Data([1, 2, 3]))])
        defer { room.remove() }
        let host = try room.party(player: ["--player", "none"], salt: 25)
        let link = try #require(host.waitForEvent(timeout: .seconds(10)) { $0.name == "party" }?["link"] as? String)
        let server = try #require(Self.relayServer(of: host), "the party's nats-server")
        #expect(try FileManager.default.contentsOfDirectory(atPath: room.runtime).isEmpty, "the token stays on disk")
        // An agent joined from the link is done when the party is: told, it exits 0, rather than
        // try the party's gone relay for good.
        let sofa = try AgentProcess(
            executable: coplay, name: "sofa", subcommand: ["join", link],
            arguments: ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(26))", "--player", "simulated"])
        #expect(
            sofa.waitForEvent(timeout: .seconds(10)) {
                $0.name == "peer-joined" && $0.peer("name") as? String == "host"
            }
                != nil, "sofa joined the party")
        let ended = ContinuousClock.now
        host.signal(SIGINT)
        #expect(host.waitForExit(timeout: .seconds(8)) == 0)
        #expect(
            host.diagnostics.contains { $0.contains("the party is over: ending the session for everyone in it") },
            "\(host.diagnostics.suffix(3))")
        #expect(sofa.waitForExit(timeout: .seconds(3)) == 0, "sofa exits when the party ends")
        print(
            "party: a joined agent exited \((ContinuousClock.now - ended).formatted(.units(allowed: [.milliseconds]))) after the party's Ctrl-C"
        )
        #expect(
            sofa.allEvents.contains {
                $0.name == "session" && $0["reason"] as? String == "ended by host: the party is over"
            }, "\(sofa.allEvents.suffix(3).map(\.line))")
        #expect(
            sofa.diagnostics.contains { $0.contains("host ended the session: the party is over; exiting") },
            "\(sofa.diagnostics.suffix(3))")
        #expect(!ProcessTable.isRunning(server), "nats-server outlived the party")
        #expect(ProcessTable.children(of: host.pid).isEmpty)
    }

    @Test(.enabled(if: serverInstalled, "needs nats-server (apt-get install nats-server)"))
    func whatAPartyCannotStart_isSaidWithItsRemedy() throws {
        let room = try Room(films: [("film.webm", Data([1]))])
        defer { room.remove() }
        let cases: [([String], String)] = [
            (["party", room.films[0], "--listen", "127.0.0.1", "--root", room.folder.path], "no index.html"),
            (["party", room.films[0], "--listen", "192.0.2.1", "--root", room.page], "cannot listen on 192.0.2.1"),
            (["party", room.folder.path + "/none.mp4", "--listen", "127.0.0.1"], "no such file"),
        ]
        for (arguments, reason) in cases {
            let (status, output) = try Locations.run(coplay, arguments + ["--interface", "lo", "--player", "none"])
            #expect(status != 0 && output.contains(reason), "\(arguments): \(status) \(output)")
        }
    }

    /// Two mpv play the film the party serves, over HTTP: the host's and a joiner's, in step.
    @Test(
        .enabled(if: serverInstalled && MpvClient.isInstalled && Locations.onPath("ffmpeg") != nil, "needs mpv, ffmpeg")
    )
    func theHostsMpv_andAJoinersMpv_playTheServedFilmTogether() throws {
        let encoded = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-party-\(getpid()).webm")
        defer { try? FileManager.default.removeItem(at: encoded) }
        let (status, output) = try Locations.run(
            Locations.onPath("ffmpeg")!,
            [
                "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=440", "-t", "30", "-c:v", "libvpx", "-b:v", "100k", "-c:a", "libopus", "-shortest",
                encoded.path,
            ])
        try #require(status == 0, "ffmpeg: \(output)")
        let room = try Room(films: [("film.webm", try Data(contentsOf: encoded))])
        defer { room.remove() }
        let mpv = ["--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null"]
        let host = try room.party(player: mpv, salt: 26)
        let link = try #require(host.waitForEvent(timeout: .seconds(10)) { $0.name == "party" }?["link"] as? String)
        let sofa = try AgentProcess(
            executable: coplay, name: "sofa", subcommand: ["join", link],
            arguments: ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(26))"] + mpv)
        #expect(
            sofa.waitForEvent(timeout: .seconds(15)) { $0.name == "peer-changed" && "\($0.line)".contains("ready") }
                != nil)
        host.send("play")
        for agent in [host, sofa] {
            #expect(agent.waitForEvent(timeout: .seconds(15)) { $0.name == "playing" } != nil, "\(agent.name) plays")
        }
        Thread.sleep(forTimeInterval: 2)
        // Each status says its position and the true instant it held at: A's, carried to B's
        // instant at the group's rate (1), against B's.
        func sample(_ event: AgentEvent) -> (position: Double, nanos: Int64)? {
            guard let position = event["position"] as? Double,
                let nanos = (event["sampledAtUnixNanos"] as? NSNumber)?.int64Value
            else { return nil }
            return (position, nanos)
        }
        var offsets: [Double] = []
        for _ in 0..<10 {
            if let a = host.status().flatMap(sample), let b = sofa.status().flatMap(sample) {
                offsets.append(abs(a.position + Double(b.nanos - a.nanos) / 1e9 - b.position) * 1000)
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(
            host.allEvents.first { $0.name == "player-error" } == nil,
            "\(host.allEvents.filter { $0.name == "player-error" })")
        #expect(
            sofa.allEvents.first { $0.name == "player-error" } == nil,
            "\(sofa.allEvents.filter { $0.name == "player-error" })")
        print("party: host's and joiner's mpv, |A−B| in ms: \(offsets.sorted().map { String(format: "%.2f", $0) })")
        #expect(offsets.count >= 5 && offsets.sorted()[offsets.count / 2] < 20, "\(offsets)")
        sofa.closeInput()
        host.closeInput()
        #expect(host.waitForExit(timeout: .seconds(8)) == 0)
    }

    /// The README's party section, typed as written by the host of a test LAN whose default route
    /// gives the room's address, and its join line typed on a second host with the link the party
    /// printed: both mpv play the film. Put in, as in every walkthrough: a private group port, mpv
    /// without a window or sound (no screen here), and a stand-in page where none is built yet.
    @Test(
        .enabled(
            if: isRoot && serverInstalled && MpvClient.isInstalled && Locations.onPath("ffmpeg") != nil,
            "needs root, nats-server, mpv and ffmpeg"))
    func theReadmesParty_typedAsWritten_playsOnTheHost_andOnAJoiner() throws {
        let blocks = WalkthroughTests.blocks(under: "A watch party")
        let partyLine = try #require(blocks.first?.first, "no recipe under 'A watch party'")
        let partyWords = WalkthroughTests.command(partyLine).split(separator: " ").map(String.init)
        try #require(partyWords.first == "coplay" && partyWords.count >= 3, "\(partyLine)")
        let joinWords = WalkthroughTests.command(try #require(blocks.dropFirst().first?.first)).split(separator: " ")
            .map(String.init)
        try #require(joinWords.prefix(2) == ["coplay", "join"], "\(joinWords)")
        let room = try Room(films: [])
        defer { room.remove() }
        for film in partyWords.dropFirst(2) {
            let (status, output) = try Locations.run(
                Locations.onPath("ffmpeg")!,
                [
                    "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi",
                    "-i", "sine=frequency=440", "-t", "20", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac",
                    "-shortest", room.folder.appendingPathComponent(film).path,
                ])
            try #require(status == 0, "ffmpeg: \(output)")
        }
        let headless = ["--mpv-option", "vo=null", "--mpv-option", "ao=null"]
        let built = FileManager.default.fileExists(
            atPath: URL(fileURLWithPath: coplay).deletingLastPathComponent().appendingPathComponent(
                "../wasm/web/index.html"
            )
            .path)
        try withLAN(hosts: 2) { prefix in
            _ = try Locations.run("/usr/sbin/ip", ["-n", "\(prefix)-h1", "route", "add", "default", "dev", "eth0"])
            let group = ["--group", "239.255.77.1:\(privatePort(27))"]
            let host = try AgentProcess(
                executable: coplay, name: "tv", subcommand: Array(partyWords.dropFirst()),
                arguments: group + headless + (built ? [] : ["--root", room.page]), namespace: "\(prefix)-h1",
                environment: ["XDG_RUNTIME_DIR": room.runtime], directory: room.folder)
            let announced = try #require(
                host.waitForEvent(timeout: .seconds(10)) { $0.name == "party" }, "\(host.diagnostics.suffix(5))")
            let link = try #require(announced["link"] as? String)
            #expect(link.hasPrefix("http://10.77.0.1:"), "the default route's address: \(link)")
            let joined = joinWords.dropFirst(2).map { $0.hasPrefix("'http") ? link : $0 }
            let phone = try AgentProcess(
                executable: coplay, name: "laptop", subcommand: ["join", link],
                arguments: Array(joined.filter { $0 != link }) + group + headless, namespace: "\(prefix)-h2")
            #expect(
                phone.waitForEvent(timeout: .seconds(15)) { $0.name == "peer-changed" && $0.line.contains("ready") }
                    != nil, "the joiner's mpv never got ready: \(phone.allEvents.suffix(5))")
            host.send("play")
            for agent in [host, phone] {
                #expect(
                    agent.waitForEvent(timeout: .seconds(15)) { $0.name == "playing" } != nil,
                    "\(agent.name): \(agent.allEvents.suffix(5))")
                #expect(agent.allEvents.first { $0.name == "player-error" } == nil, "\(agent.allEvents.suffix(5))")
            }
            phone.closeInput()
            host.signal(SIGINT)
            #expect(host.waitForExit(timeout: .seconds(8)) == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: room.runtime).isEmpty)
        }
    }
}

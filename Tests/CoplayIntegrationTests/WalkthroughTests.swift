import CoplayHarness
import Foundation
import Testing

/// The README, followed as a newcomer follows it: its recipes are read out of README.md itself
/// (the code blocks under its headings) and run on loopback, so that what the README says and
/// what coplay does cannot drift apart. Each recipe's own words are kept; only the interface
/// (`eth0` → `lo`) and a private group port are put in, as the README's own note on one machine
/// says.
@Suite(.serialized, .onALane) struct WalkthroughTests {
    static let readme =
        (try? String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""

    /// The fenced code blocks after the heading that contains `heading`, up to the next heading,
    /// each as its lines.
    static func blocks(under heading: String?) -> [[String]] {
        var found: [[String]] = []
        var inSection = false
        var block: [String]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if block == nil, line.hasPrefix("#") {
                inSection = heading.map { line.contains($0) } ?? true
                continue
            }
            guard inSection else { continue }
            if line.hasPrefix("```") {
                if let finished = block {
                    found.append(finished)
                    block = nil
                } else {
                    block = []
                }
            } else {
                block?.append(line)
            }
        }
        return found
    }

    /// A typed line without its trailing `# comment`.
    static func command(_ line: String) -> String {
        guard let hash = line.range(of: "  #") ?? line.range(of: " # ") else { return line }
        return String(line[..<hash.lowerBound]).trimmingCharacters(in: .whitespaces)
    }

    /// The agent lines of a recipe (`coplay …` with options), made to run here.
    static func agentArguments(_ line: String, port: String) -> [String] {
        let words = command(line).split(separator: " ").map(String.init)
        var arguments = Array(words.drop { $0 != "coplay" }.dropFirst())
        // Always loopback: a recipe without --interface would otherwise take the default route's.
        if let index = arguments.firstIndex(of: "--interface"), index + 1 < arguments.count {
            arguments[index + 1] = "lo"
        } else {
            arguments += ["--interface", "lo"]
        }
        return arguments + ["--group", "239.255.77.1:\(port)", "--session", "walkthrough-\(port)"]
    }

    @Test func theReadmeIsFound_andHasItsRecipes() {
        #expect(!Self.readme.isEmpty)
        for heading in ["Two machines on one LAN", "Watch a list together", "Watch the traffic", "Watching a film"] {
            #expect(!Self.blocks(under: heading).isEmpty, "no recipe under '\(heading)'")
        }
    }

    /// Every option a README recipe gives is one `coplay --help` lists.
    @Test func everyOptionTheReadmeUses_isOneCoplayKnows() throws {
        let (_, help) = try Locations.run(coplay, ["--help"])
        let recipes = Self.blocks(under: nil).flatMap { $0 }.filter { $0.contains("coplay ") }
        var options = Set<String>()
        for line in recipes {
            for word in Self.command(line).split(separator: " ") where word.hasPrefix("--") {
                options.insert(String(word.prefix { $0 != "=" }))
            }
        }
        #expect(options.count > 5, "\(options)")
        let outside: Set<String> = ["--immediate-mode", "--auth"]  // tcpdump's and nats-server's
        for option in options.subtracting(outside) {
            #expect(help.contains(option + " ") || help.contains(option + "\n"), "README uses \(option)")
        }
    }

    /// Two machines on one LAN, then the everyday commands, the queue recipe line by line, and
    /// help: each prints what the README says it does.
    @Test func twoAgents_share_play_pause_seek_theQueue_andNext() throws {
        let port = privatePort(21)
        let start = try #require(Self.blocks(under: "Two machines on one LAN").first)
        let lines = start.filter { $0.hasPrefix("coplay ") }
        try #require(lines.count == 2, "\(start)")
        let agents = try lines.map { line in
            try AgentProcess(
                executable: coplay, name: line.contains("alice") ? "alice" : "bob",
                arguments: Self.agentArguments(line, port: port).filter {
                    $0 != "--name" && $0 != "alice" && $0 != "bob"
                }
            )
        }
        defer { for agent in agents { agent.signal(SIGKILL) } }
        let (alice, bob) = (agents[0], agents[1])
        #expect(bob.waitForEvent(timeout: .seconds(5)) { $0.name == "peer-joined" } != nil, "bob sees alice")

        // The film recipe's typed lines, on the simulated player.
        let film = try #require(Self.blocks(under: "Watching a film").first)
        let typed = film.filter { !$0.hasPrefix("coplay") }.map(Self.command)
        #expect(typed == ["share /srv/films/film.mkv", "play"], "\(typed)")
        alice.send(typed[0])
        #expect(bob.waitForEvent(timeout: .seconds(3)) { $0.name == "activity" } != nil, "bob got the share")
        usleep(300_000)
        let beforePlay = bob.allEvents.count
        alice.send(typed[1])
        let playing = bob.waitForEvent(from: beforePlay, timeout: .seconds(5)) { $0.name == "playing" }
        #expect(playing?["reason"] as? String == "play", "a play says play: \(playing?.line ?? "none")")
        bob.send("pause")
        #expect(alice.waitForEvent(timeout: .seconds(3)) { $0.name == "paused" } != nil)
        bob.send("seek 30")
        #expect(alice.waitForEvent(timeout: .seconds(3)) { $0.name == "time-jumped" } != nil)

        // The queue recipe, line by line, on alice: no line is refused, and both agents end on
        // one queue (the recipe clears it at its end).
        let queue = try #require(Self.blocks(under: "Watch a list together").first).map(Self.command)
        #expect(queue.count >= 6, "\(queue)")
        let mark = alice.allEvents.count
        for line in queue {
            alice.send(line)
            usleep(150_000)
        }
        usleep(500_000)
        let refused = alice.allEvents.dropFirst(mark).filter { $0.name == "error" }.map(\.line)
        #expect(refused.isEmpty, "README queue lines refused: \(refused)")
        #expect(alice.allEvents.dropFirst(mark).contains { $0.name == "queue" }, "`queue` prints the queue")
        #expect(bob.allEvents.contains { $0.name == "queue-changed" }, "bob saw the queue change")

        // Both agents end the recipe on one entry; then, playing, `next` moves both to the next
        // entry, playing on.
        alice.send("queue add https://example.com/n1.mkv id=n1")
        alice.send("queue add https://example.com/n2.mkv id=n2")
        usleep(300_000)
        let beforePlay2 = (alice.allEvents.count, bob.allEvents.count)
        bob.send("play")
        let started = [
            alice.waitForEvent(from: beforePlay2.0, timeout: .seconds(5)) { $0.name == "playing" },
            bob.waitForEvent(from: beforePlay2.1, timeout: .seconds(5)) { $0.name == "playing" },
        ]
        let playingItem = try #require(started[0]?["item"] as? String, "both play")
        #expect(started[1]?["item"] as? String == playingItem)
        let beforeNext = (alice.allEvents.count, bob.allEvents.count)
        bob.send("next")
        let moved = [
            alice.waitForEvent(from: beforeNext.0, timeout: .seconds(5)) {
                $0.name == "playing" && $0["item"] as? String != playingItem
            },
            bob.waitForEvent(from: beforeNext.1, timeout: .seconds(5)) {
                $0.name == "playing" && $0["item"] as? String != playingItem
            },
        ]
        #expect(moved.allSatisfy { $0 != nil }, "both play on after next")
        #expect(moved[0]?["item"] as? String == moved[1]?["item"] as? String, "on one entry")
        bob.send("help queue")
        #expect(bob.waitForEvent(timeout: .seconds(2)) { $0.name == "help" } != nil)
        for agent in agents { agent.send("quit") }
        for agent in agents { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
    }

    /// The README's capture recipe, as written (tcpdump with --immediate-mode, then coplay dump),
    /// on loopback: the capture decodes, and what was typed is in it to the last datagram.
    @Test(
        .enabled(
            if: isRoot && FileManager.default.isExecutableFile(atPath: "/usr/bin/tcpdump"), "needs root and tcpdump"))
    func theCaptureRecipe_decodesTheSession() throws {
        let recipe = try #require(Self.blocks(under: "Watch the traffic").first)
        let capture = try #require(recipe.first { $0.hasPrefix("tcpdump") && $0.contains("-w session.pcap") })
        let port = privatePort(22)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-walk-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("session.pcap").path
        var arguments = Array(Self.command(capture).split(separator: " ").map(String.init).dropFirst())
        if let index = arguments.firstIndex(of: "-i") { arguments[index + 1] = "lo" }
        if let index = arguments.firstIndex(of: "-w") { arguments[index + 1] = file }
        // Bounded, and only this test's group port.
        arguments = ["-Z", "root", "-c", "5000"] + arguments.dropLast() + ["udp", "and", "port", port]
        let tcpdump = Process()
        tcpdump.executableURL = URL(fileURLWithPath: "/usr/bin/tcpdump")
        tcpdump.arguments = arguments
        tcpdump.standardError = FileHandle.nullDevice
        tcpdump.standardOutput = FileHandle.nullDevice
        try tcpdump.run()
        defer { if tcpdump.isRunning { kill(tcpdump.processIdentifier, SIGKILL) } }
        usleep(700_000)
        let agent = try AgentProcess(
            executable: coplay, name: "walker",
            arguments: ["--interface", "lo", "--group", "239.255.77.1:\(port)", "--session", "walk-cap"])
        defer { agent.signal(SIGKILL) }
        #expect(agent.waitForEvent(timeout: .seconds(5)) { $0.name == "session" } != nil)
        agent.send("share https://example.com/last.mp4 id=last")
        usleep(200_000)
        agent.send("pause")
        usleep(300_000)
        // Ctrl-C, as the recipe says (tcpdump starts with the runner's signals blocked, so it is
        // stopped with SIGKILL here; --immediate-mode has written every packet as it came).
        kill(tcpdump.processIdentifier, SIGKILL)
        tcpdump.waitUntilExit()
        agent.send("quit")
        _ = agent.waitForExit(timeout: .seconds(5))
        let dump = try #require(recipe.first { $0.hasPrefix("coplay dump session.pcap") })
        var dumpArguments = Array(Self.command(dump).split(separator: " ").map(String.init).dropFirst())
        dumpArguments[1] = file
        let (status, output) = try Locations.run(coplay, dumpArguments)
        #expect(status == 0)
        #expect(output.contains("share item=last"), "the share is in the capture")
        #expect(output.contains(" pause item=last"), "the last command typed is in the capture")
        #expect(output.contains("(0 malformed)"))
    }
}

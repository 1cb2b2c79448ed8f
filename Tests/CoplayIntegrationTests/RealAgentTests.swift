import CoplayCore
import CoplayHarness
import Foundation
import Glibc
import Testing

/// A few short tests of real `coplay` processes. The protocol itself is tested in the
/// simulation; these check the sockets, the process contract and the namespace LAN.
@Suite(.serialized, .onALane) struct RealAgentTests {
    @Test(.enabled(if: isRoot, "needs root for network namespaces"))
    func threeAgentsInNamespaces_discoverEachOther_andDetectAKilledOne() throws {
        var lanName = ""
        try withLAN(hosts: 3) { prefix in
            lanName = prefix
            let agents = try (1...3).map { host in
                try AgentProcess(
                    executable: coplay, name: "host\(host)", arguments: ["--interface", "eth0", "--session", "it"],
                    namespace: "\(prefix)-h\(host)")
            }
            var ids: [String] = []
            for agent in agents {
                let joined = try #require(
                    agent.waitForEvent(timeout: .seconds(10)) {
                        $0.name == "session" && $0["state"] as? String == "joined"
                    }, "\(agent.name): \(agent.diagnostics)")
                ids.append(joined["peer"] as? String ?? "")
            }
            for (index, agent) in agents.enumerated() {
                for other in ids where other != ids[index] {
                    let seen = agent.waitForEvent(timeout: .seconds(5)) {
                        $0.name == "peer-joined" && $0.peer("id") as? String == other
                    }
                    #expect(seen != nil, "\(agent.name) never saw \(other)")
                    #expect(
                        (seen?.peer("address") as? String)?.hasPrefix("10.77.0.") == true,
                        "peers are reached over the namespace LAN")
                }
            }
            let killedAt = Int64(Date().timeIntervalSince1970 * 1e9)
            agents[2].signal(SIGKILL)
            for agent in agents[0..<2] {
                let gone = agent.waitForEvent(timeout: .seconds(5)) {
                    $0.name == "peer-left" && $0.peer("id") as? String == ids[2]
                }
                #expect(gone?["reason"] as? String == "timeout", "\(agent.name) did not detect the crash")
                if let gone {
                    #expect(
                        gone.atUnixNanos - killedAt < 2_000_000_000,
                        "detection took \((gone.atUnixNanos - killedAt) / 1_000_000) ms")
                }
                #expect(agent.peers()?.count == 1)
            }
            for agent in agents[0..<2] { agent.closeInput() }
            for agent in agents[0..<2] { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
        }
        let leftovers = try Locations.run("/usr/sbin/ip", ["netns", "list"]).output
        #expect(!leftovers.contains(lanName + "-"), "namespaces left behind: \(leftovers)")
    }

    @Test func agentOnLoopback_answersCommands_countsGarbage_andLeavesOnEndOfInput() throws {
        let port = privatePort(0)
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(port)", "--session", "loopback-it"]
        let alice = try AgentProcess(executable: coplay, name: "alice", arguments: common + ["--clock-skew-ms", "300"])
        let bob = try AgentProcess(executable: coplay, name: "bob", arguments: common)
        let bobID = try #require(bob.waitForEvent(timeout: .seconds(10)) { $0.name == "session" }?["peer"] as? String)
        let synced = try #require(
            alice.waitForEvent(timeout: .seconds(5)) { $0.name == "clock-synced" && $0.peer("id") as? String == bobID })
        let offset = try #require((synced.peer("offsetNanos") as? NSNumber)?.int64Value)
        #expect(abs(offset + 300_000_000) < 1_000_000, "bob's clock is 300 ms behind alice's, estimated \(offset) ns")

        // Hostile input on the group port: counted and dropped, the agent goes on.
        let sender = try GroupSender(port: UInt16(port)!)
        for payload in [
            Array("hello?".utf8), Array("GET / HTTP/1.1\r\nHost: coplay.example\r\n\r\n".utf8),
            Array("CPLY".utf8) + [9] + Array(repeating: 0, count: 40), Array(repeating: 0xFF, count: 1500),
        ] {
            sender.send(payload)
        }
        usleep(200_000)
        let status = try #require(alice.status())
        for key in [
            "peer", "name", "session", "state", "item", "rate", "position", "sampledAtUnixNanos", "waiting",
            "suspensions", "peers",
        ] {
            #expect(status[key] != nil, "status lacks \(key)")
        }
        #expect(status["state"] as? String == "joined" && (status["peers"] as? NSNumber)?.intValue == 1)
        let sampled = try #require((status["sampledAtUnixNanos"] as? NSNumber)?.int64Value)
        #expect(
            abs(sampled - Int64(Date().timeIntervalSince1970 * 1e9)) < 1_000_000_000,
            "sampledAtUnixNanos is the true time, not the skewed one")
        let counters = try #require(status["counters"] as? [String: Any])
        let drops = try #require(counters["drops"] as? [String: Any])
        #expect((drops["tooShort"] as? NSNumber)?.intValue == 1)
        #expect((drops["badMagic"] as? NSNumber)?.intValue == 1)
        #expect((drops["unsupportedVersion"] as? NSNumber)?.intValue == 1)
        #expect((drops["tooLong"] as? NSNumber)?.intValue == 1)

        // A bad line gets one error event; the agent goes on.
        let mark = alice.allEvents.count
        alice.send("frobnicate 3")
        let error = try #require(alice.waitForEvent(from: mark, timeout: .seconds(2)) { $0.name == "error" })
        #expect((error["message"] as? String)?.contains("unknown command 'frobnicate'") == true)
        #expect(alice.status() != nil)

        // End of input: alice leaves (bob sees it at once) and exits 0; SIGTERM does the same for bob.
        let bobMark = bob.allEvents.count
        alice.closeInput()
        #expect(alice.waitForExit(timeout: .seconds(5)) == 0)
        let left = bob.waitForEvent(from: bobMark, timeout: .seconds(2)) { $0.name == "peer-left" }
        #expect(left?["reason"] as? String == "shutdown")
        bob.signal(SIGTERM)
        #expect(bob.waitForExit(timeout: .seconds(5)) == 0)
    }

    @Test func datagramFlood_isCountedAndLosesNoCommand() throws {
        let port = privatePort(2)
        let agent = try AgentProcess(
            executable: coplay, name: "flooded", arguments: ["--interface", "lo", "--group", "239.255.77.1:\(port)"])
        _ = try #require(agent.waitForEvent(timeout: .seconds(10)) { $0.name == "session" })
        let sender = try GroupSender(port: UInt16(port)!)
        let garbage = Array("not coplay at all, just noise on the port".utf8)
        let floodCount = 20_000
        let commands = 50
        for index in 0..<floodCount {
            sender.send(garbage)
            if index % (floodCount / commands) == 0 { agent.send("status") }
        }
        var answered = 0
        var last: AgentEvent?
        while let event = agent.waitForEvent(
            from: last.map { e in agent.allEvents.firstIndex { $0.line == e.line }! + 1 } ?? 0, timeout: .seconds(10),
            where: { $0.name == "status" })
        {
            answered += 1
            last = event
            if answered == commands { break }
        }
        #expect(answered == commands, "every typed command is answered during a flood")
        usleep(800_000)  // the kernel reports its drop count with the next datagram (a heartbeat echo)
        let counters = try #require(agent.status()?["counters"] as? [String: Any])
        let badMagic = ((counters["drops"] as? [String: Any])?["badMagic"] as? NSNumber)?.intValue ?? 0
        let queueDrops = (counters["receiveQueueDrops"] as? NSNumber)?.intValue ?? 0
        let kernelDrops = (counters["kernelDrops"] as? NSNumber)?.intValue ?? 0
        #expect(badMagic <= floodCount)
        #expect(
            badMagic + queueDrops + kernelDrops >= floodCount,
            "every flood datagram is accounted for: \(badMagic) decoded and dropped + \(queueDrops) over the queue + \(kernelDrops) by the kernel"
        )
        agent.signal(SIGINT)
        #expect(agent.waitForExit(timeout: .seconds(5)) == 0, "SIGINT leaves gracefully")
    }

    @Test func demo_runsTheScriptedSessionAndLeavesNothingRunning() throws {
        let (status, output) = try Locations.run(coplay, ["demo"])
        #expect(status == 0, "\(output.suffix(2000))")
        #expect(output.contains("dave   item-changed bbb (share), adopting the group's state"))
        #expect(output.contains("every agent resolved them the same way: yes"))
        #expect(output.contains("all agents stopped; nothing is left running."))
        // The demo measures sync error; on loopback it is far under a millisecond.
        let worst = output.split(separator: "\n").first { $0.hasPrefix("sync error between agents") }?
            .split(separator: " ").dropLast().last.flatMap { Double($0) }
        #expect((worst ?? 99) < 1, "worst sync error \(worst ?? -1) ms")
    }

    /// Help answers wherever it is asked, and exits 0: `coplay help`, `coplay help SUB`, `coplay
    /// SUB --help` (once a usage error, exit 2), `coplay help COMMAND`; an unknown topic is a
    /// usage error.
    @Test func helpAnswersWhereverItIsAsked() throws {
        for (arguments, expected) in [
            (["help"], "Usage:"), (["--help"], "Usage:"), (["help", "dump"], "coplay dump FILE|-"),
            (["dump", "--help"], "coplay dump FILE|-"), (["ctl", "-h"], "coplay ctl PATH --follow"),
            (["keygen", "--help"], "coplay keygen"), (["demo", "--help"], "coplay demo"),
            (["help", "queue"], "help queue: "),
        ] {
            let (status, output) = try Locations.run(coplay, arguments)
            #expect(status == 0, "coplay \(arguments.joined(separator: " "))")
            #expect(output.contains(expected), "coplay \(arguments.joined(separator: " ")): \(output.prefix(200))")
        }
        let (status, output) = try Locations.run(coplay, ["help", "nope"])
        #expect(status == 2 && output.contains("no help on 'nope'"))
    }

    @Test func badFlag_exitsTwoWithTheProblemAndTheHint() throws {
        let (status, output) = try Locations.run(coplay, ["--interface"])
        #expect(status == 2)
        #expect(output.contains("--interface needs a value") && output.contains("coplay --help"))
        let (unknownStatus, unknownOutput) = try Locations.run(
            coplay, ["--interface", "no-such-if0", "--group", "239.255.77.1:\(privatePort(1))"])
        #expect(unknownStatus == 1)
        #expect(unknownOutput.contains("no interface named or addressed 'no-such-if0'"))
    }
}

/// Real agents on a lossy network: `nft` in each namespace drops 20% of incoming UDP.
@Suite(.serialized, .onALane) struct LossyNetworkTests {
    @Test(.enabled(if: isRoot && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft"), "needs root and nft"))
    func threeAgents_withTwentyPercentLoss_convergeOnOneState() throws {
        try withLAN(hosts: 3) { prefix in
            try dropUDP(percent: 20, onHosts: 1...3, of: prefix)
            let agents = try (1...3).map { host in
                try AgentProcess(
                    executable: coplay, name: "lossy\(host)", arguments: ["--interface", "eth0", "--session", "lossy"],
                    namespace: "\(prefix)-h\(host)")
            }
            for agent in agents {
                var seen = 0
                let ready = agent.waitForEvent(timeout: .seconds(15)) { event in
                    if event.name == "clock-synced" { seen += 1 }
                    return seen >= 2
                }
                #expect(ready != nil, "\(agent.name) never synced with both others")
            }
            agents[0].send("share https://example.com/lossy.mp4 id=lossy")
            usleep(700_000)
            agents[1].send("play")
            usleep(1_500_000)
            agents[2].send("seek 60")
            usleep(1_500_000)
            agents[1].send("pause")
            // Repair (digests every 500 ms, nacks) must bring everyone to the same state.
            var statuses: [AgentEvent] = []
            for _ in 0..<40 {
                usleep(250_000)
                statuses = agents.compactMap { $0.status() }
                let delivered = Set(
                    statuses.compactMap {
                        (($0["counters"] as? [String: Any])?["commandsDelivered"] as? NSNumber)?.intValue
                    })
                let positions = statuses.compactMap { ($0["position"] as? NSNumber)?.doubleValue }
                if statuses.count == 3, delivered.count == 1,
                    statuses.allSatisfy({ ($0["rate"] as? NSNumber)?.doubleValue == 0 }),
                    let low = positions.min(), let high = positions.max(), high - low < 0.001
                {
                    break
                }
            }
            #expect(statuses.count == 3)
            for status in statuses {
                #expect(status["item"] as? String == "lossy")
                #expect((status["rate"] as? NSNumber)?.doubleValue == 0, "\(status)")
            }
            let positions = statuses.compactMap { ($0["position"] as? NSNumber)?.doubleValue }
            #expect((positions.max() ?? 0) - (positions.min() ?? 1) < 0.001, "paused positions differ: \(positions)")
            #expect((positions.min() ?? 0) >= 60, "the seek to 60 s was applied everywhere: \(positions)")
            let delivered = statuses.compactMap {
                (($0["counters"] as? [String: Any])?["commandsDelivered"] as? NSNumber)?.intValue
            }
            #expect(Set(delivered).count == 1, "every agent delivered the same commands: \(delivered)")
            // The loss was real.
            // The loss was real: count what nft dropped on all three hosts (one host alone sees too
            // few packets for a firm bound).
            var dropped = 0
            for host in 1...3 {
                let (_, counters) = try Locations.run(
                    "/usr/sbin/ip",
                    ["netns", "exec", "\(prefix)-h\(host)", "nft", "list", "counter", "inet", "coplayloss", "dropped"])
                dropped +=
                    counters.split(whereSeparator: \.isWhitespace).drop { $0 != "packets" }.dropFirst().first.flatMap {
                        Int($0)
                    } ?? 0
            }
            #expect(dropped > 10, "nft dropped only \(dropped) packets on the 3 hosts")
            print(
                "lossy network: nft dropped \(dropped) UDP packets arriving at the 3 hosts; all 3 agents delivered \(delivered.first ?? 0) commands and paused at \(positions.first ?? 0) s"
            )
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
        }
    }
}

/// A real session captured with tcpdump decodes completely with `coplay dump`.
@Suite(.serialized, .onALane) struct CaptureIntegrationTests {
    @Test(
        .enabled(
            if: isRoot && FileManager.default.isExecutableFile(atPath: "/usr/bin/tcpdump"), "needs root and tcpdump"))
    func capturedSession_decodesWithNoMalformedDatagram() throws {
        let capture = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-session-\(getpid()).pcap")
            .path
        defer { try? FileManager.default.removeItem(atPath: capture) }
        try withLAN(hosts: 3) { prefix in
            let tcpdump = Process()
            tcpdump.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            // Bounded: tcpdump stops by itself after 60 s whatever happens; -Z root keeps it
            // signalable and able to write the file.
            tcpdump.arguments = [
                "netns", "exec", "\(prefix)-h1", "timeout", "60", "tcpdump", "-Z", "root", "-i", "eth0", "-U", "-w",
                capture, "udp",
            ]
            tcpdump.standardError = FileHandle.nullDevice
            tcpdump.standardOutput = FileHandle.nullDevice
            try tcpdump.run()
            defer { if tcpdump.isRunning { tcpdump.terminate() } }
            usleep(700_000)
            let agents = try (1...3).map { host in
                try AgentProcess(
                    executable: coplay, name: "cap\(host)", arguments: ["--interface", "eth0", "--session", "capture"],
                    namespace: "\(prefix)-h\(host)")
            }
            for agent in agents {
                var synced = 0
                _ = agent.waitForEvent(timeout: .seconds(10)) { event in
                    if event.name == "clock-synced" { synced += 1 }
                    return synced >= 2
                }
            }
            // The sharer's player needs half a second: the play waits for its ready.
            agents[0].send("share https://example.com/capture.mp4 id=capture title=\"Capture test\" buffer=0.5")
            usleep(300_000)
            agents[1].send("play")
            usleep(800_000)
            agents[2].send("seek 42")
            usleep(800_000)
            agents[1].send("suspend userActionRequired")
            agents[0].send("msg to=cap3 \"one for cap3\"")
            agents[2].send("msg unreliable everyone")
            usleep(300_000)
            agents[0].send("pause")
            usleep(300_000)
            agents[2].send("play-now")
            usleep(300_000)
            for agent in agents { agent.closeInput() }
            for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
            usleep(300_000)
            kill(tcpdump.processIdentifier, SIGTERM)  // timeout passes it on to tcpdump, which flushes and exits
            let deadline = Date().addingTimeInterval(10)
            while tcpdump.isRunning && Date() < deadline { usleep(50_000) }
        }
        let (status, output) = try Locations.run(coplay, ["dump", capture, "--json"])
        #expect(status == 0, "\(output.suffix(500))")
        let lines = output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let summary = output.split(separator: "\n").first { $0.hasPrefix("coplay dump:") }.map(String.init) ?? ""
        #expect(summary.contains("(0 malformed)"), "\(summary)")
        let types = Set(lines.compactMap { $0["type"] as? String })
        for type in ["hello", "heartbeat", "probe", "probe-reply", "command", "ready", "leave", "unreliable-message"] {
            #expect(types.contains(type), "no \(type) datagram in the capture: \(types.sorted())")
        }
        let operations = Set(lines.compactMap { $0["operation"] as? String })
        #expect(
            operations.isSuperset(of: ["share", "play", "start", "seek", "pause", "message", "play-now"]),
            "\(operations.sorted())")
        print("captured session: \(summary); types \(types.sorted())")

        // The same capture through tshark and the Lua dissector: every coplay datagram, none malformed.
        let tshark = ["/usr/bin/tshark", "/usr/local/bin/tshark"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        if let tshark {
            let script = packageRoot.appendingPathComponent("Tools/coplay.lua").path
            let all = try Locations.run(
                tshark,
                ["-X", "lua_script:\(script)", "-r", capture, "-Y", "coplay", "-T", "fields", "-e", "coplay.type"])
            let malformed = try Locations.run(
                tshark,
                [
                    "-X", "lua_script:\(script)", "-r", capture, "-Y", "coplay.malformed", "-T", "fields", "-e",
                    "frame.number",
                ])
            let dissected = all.output.split(separator: "\n").filter { $0.hasPrefix("0x") }.count
            #expect(
                dissected == lines.count, "tshark dissected \(dissected) coplay datagrams, coplay dump \(lines.count)")
            // Packet by packet, in capture order: the same type, sender and sequence.
            let rows = try Locations.run(
                tshark,
                [
                    "-X", "lua_script:\(script)", "-r", capture, "-Y", "coplay", "-T", "fields", "-E", "separator=,",
                    "-e", "coplay.type", "-e", "coplay.sender", "-e", "coplay.sequence",
                ]
            )
            .output.split(separator: "\n").filter { $0.hasPrefix("0x") }.map {
                $0.split(separator: ",").map(String.init)
            }
            var disagreements = 0
            for (row, line) in zip(rows, lines) where row.count == 3 {
                let type = UInt8(row[0].dropFirst(2), radix: 16).flatMap(MessageType.init(rawValue:))?.description
                let sender = UInt64(row[1].dropFirst(2), radix: 16)
                let dumpSender = (line["sender"] as? String).flatMap { UInt64($0, radix: 16) }
                if type != line["type"] as? String || sender != dumpSender
                    || Int(row[2]) != (line["sequence"] as? NSNumber)?.intValue
                {
                    disagreements += 1
                }
            }
            #expect(rows.count == lines.count)
            #expect(disagreements == 0, "\(disagreements) packets decoded differently by tshark and coplay dump")
            #expect(
                malformed.output.split(separator: "\n").filter { Int($0) != nil }.isEmpty,
                "tshark flagged malformed packets: \(malformed.output)")
            print("captured session through tshark: \(dissected) coplay datagrams, none malformed")
        }
    }
}

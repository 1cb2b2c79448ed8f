import CoplayHarness
import Foundation
import Glibc
import Testing

/// The control socket (`--control PATH`) and `coplay ctl`, on loopback: an agent whose standard
/// input has ended runs on; several clients at once; replies go to the asker; followers get
/// every event; garbage, a client that never reads, and one client too many hurt nobody else;
/// and the agent runs as `Tools/coplay.service` starts it.
@Suite(.serialized, .onALane) struct ControlSocketTests {
    private func socketPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("cp-\(getpid())-\(name).sock").path
    }

    private func ctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try Locations.run(coplay, ["ctl"] + arguments)
    }

    /// A raw client of the socket: what a script in any language would do.
    final class RawClient {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        private var pending: [UInt8] = []

        init(path: String) throws {
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard status == 0 else { throw LANError(description: "connect \(path): errno \(errno)") }
            var wait = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(descriptor) }

        func send(_ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Lines that arrive within `seconds`; stops early at the `times`-th line containing `until`.
        func lines(within seconds: Double, until: String? = nil, times: Int = 1) -> [String] {
            var lines: [String] = []
            var matched = 0
            let deadline = Date().addingTimeInterval(seconds)
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while Date() < deadline {
                let count = recv(descriptor, &chunk, chunk.count, 0)
                if count == 0 { break }
                guard count > 0 else { continue }
                pending += chunk[0..<count]
                var start = 0
                defer { pending.removeFirst(start) }
                while let newline = pending[start...].firstIndex(of: 10) {
                    lines.append(String(decoding: pending[start..<newline], as: UTF8.self))
                    start = newline + 1
                    if let until, lines.last?.contains(until) == true {
                        matched += 1
                        if matched == times { return lines }
                    }
                }
            }
            return lines
        }
    }

    @Test func ctlDrivesAnAgentWhoseInputEnded_andClientsCannotHurtEachOther() throws {
        let path = socketPath("a")
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(9))", "--session", "ctl-it"]
        let alice = try AgentProcess(executable: coplay, name: "alice", arguments: common + ["--control", path])
        let bob = try AgentProcess(executable: coplay, name: "bob", arguments: common)
        _ = try #require(alice.waitForEvent(timeout: .seconds(10)) { $0.name == "peer-joined" })
        alice.closeInput()
        usleep(300_000)
        #expect(alice.isRunning, "with --control, the end of standard input does not end the agent")

        // One command, one reply.
        let status = try ctl([path, "status"])
        #expect(status.status == 0)
        #expect(status.output.contains(#""event":"status""#) && status.output.contains(#""name":"alice""#))
        let refused = try ctl([path, "play", "0.001"])
        #expect(refused.status == 1 && refused.output.contains(#""event":"error""#), "\(refused.output)")

        // A follower sees the events another client's command causes, and what the group does.
        let follower = try RawClient(path: path)
        follower.send("follow\n")
        #expect(follower.lines(within: 2, until: "done").last?.contains(#""event":"done""#) == true)
        #expect(try ctl([path, "share", "https://example.com/f.mp4", "id=film"]).status == 0)
        bob.send("play-now")
        let seen = follower.lines(within: 3, until: #""event":"playing""#)
        #expect(seen.contains { $0.contains(#""event":"activity""#) }, "the share, made by another client")
        #expect(seen.contains { $0.contains(#""event":"playing""#) }, "bob's play-now, from the group")

        // Garbage, an over-long line and a client that never reads affect nobody else.
        let garbage = try RawClient(path: path)
        garbage.send("\u{1}\u{2}\u{FF}junk\n" + String(repeating: "x", count: 40_000) + "\n")
        let garbageReply = garbage.lines(within: 2, until: "done")
        #expect(garbageReply.contains { $0.contains(#""event":"error""#) }, "garbage gets an error: \(garbageReply)")
        do {
            // A follower that never reads is sent about 1.5 MB of events (every status reply is
            // an event): past its buffer it is disconnected, and the agent never waits for it.
            let sleeper = try RawClient(path: path)
            sleeper.send("follow\n")
            let busy = try RawClient(path: path)
            // All in one write, read after: a client that wrote line by line without reading
            // would block in its own send once the agent holds back its unread replies.
            busy.send(String(repeating: "status\n", count: 1_500))
            let busyReplies = busy.lines(within: 20, until: #""event":"done""#, times: 1_500)
                .filter { $0.contains(#""event":"status""#) }
            #expect(busyReplies.count == 1_500, "every status answered, in spite of a follower that never reads")
        }
        let after = try ctl([path, "status"])
        #expect(after.status == 0 && after.output.contains(#""rate":1"#), "the agent is unharmed and still playing")

        // A client past the limit is told why; the others carry on. First the clients above are
        // let go: a slot they free while the crowd is here (their reader ends a moment after they
        // hang up) let ctl in once, in CI.
        usleep(500_000)
        do {
            let crowd = try (0..<9).map { _ in try RawClient(path: path) }
            let refusal = crowd.flatMap { $0.lines(within: 0.3, until: "done") }
            #expect(refusal.contains { $0.contains("too many control clients") }, "\(refusal)")
            #expect(try ctl([path, "status"]).status == 1, "the limit holds for ctl too")
        }
        usleep(300_000)  // the crowd has hung up

        // The watch table, drawn once.
        let watch = try ctl([path, "--watch", "--times", "1"])
        #expect(watch.status == 0)
        #expect(watch.output.contains("PARTICIPANT") && watch.output.contains("alice (this)"), "\(watch.output)")
        #expect(watch.output.contains("bob"), "the peer's row")

        // quit ends the agent, gracefully.
        #expect(try ctl([path, "quit"]).status == 0)
        #expect(alice.waitForExit(timeout: .seconds(5)) == 0)
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed on exit")
        bob.closeInput()
        #expect(bob.waitForExit(timeout: .seconds(5)) == 0)

        let nobody = try ctl([path, "status"])
        #expect(nobody.status == 1 && nobody.output.contains("no agent answers at \(path)"), "\(nobody.output)")
    }

    /// The unit in Tools/coplay.service, as systemd would run it: its ExecStart line with `%t`
    /// and `$COPLAY_OPTIONS` expanded, standard input /dev/null; driven by `coplay ctl`,
    /// stopped by SIGTERM with exit status 0.
    @Test func theServiceUnitsCommandLine_runsAnAgentThatCtlDrives_andSIGTERMStops() throws {
        let unit = try String(contentsOf: packageRoot.appendingPathComponent("Tools/coplay.service"), encoding: .utf8)
        let execStart = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let runtime = FileManager.default.temporaryDirectory.appendingPathComponent("cp-unit-\(getpid())").path
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let options = "--interface lo --group 239.255.77.1:\(privatePort(10)) --session unit-it --player simulated"
        let words = execStart.dropFirst("ExecStart=".count).replacingOccurrences(of: "%t", with: runtime)
            .replacingOccurrences(of: "$COPLAY_OPTIONS", with: options).split(separator: " ").map(String.init)
        #expect(words.first == "/usr/local/bin/coplay")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: coplay)
        process.arguments = Array(words.dropFirst())
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let path = runtime + "/coplay.sock"
        var status = (status: Int32(1), output: "")
        for _ in 0..<50 where status.status != 0 {
            usleep(100_000)
            status = try ctl([path, "status"])
        }
        #expect(status.status == 0 && status.output.contains(#""session":"unit-it""#), "\(status.output)")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "SIGTERM (systemctl stop) leaves gracefully")
    }
}

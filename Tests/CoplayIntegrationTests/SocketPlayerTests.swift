import CoplayHarness
import Foundation
import Synchronization
import Testing

/// The delegating-player socket, driven by the reference client `Tools/coplay-player-example`
/// (a clock-driven model of a player): agent A drives it over `--player socket:PATH`; agent B
/// has the simulated player.
@Suite(.serialized, .onALane, .enabled(if: Locations.onPath("python3") != nil, "python3 runs the reference client"))
struct SocketPlayerTests {
    /// The reference client as a process: its stdin is the person in front of the player, its
    /// stdout what it got and where it is.
    final class Client: @unchecked Sendable {
        let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private let lines = Mutex<[String]>([])

        init(socket: String, _ extra: [String] = []) throws {
            process.executableURL = URL(fileURLWithPath: Locations.onPath("python3")!)
            process.arguments =
                [packageRoot.appendingPathComponent("Tools/coplay-player-example").path, socket] + extra
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let handle = output.fileHandleForReading
            Thread.detachNewThread { [self] in
                var pending = Data()
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { return }
                    pending += chunk
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: pending[..<newline], as: UTF8.self)
                        pending.removeSubrange(...newline)
                        self.lines.withLock { $0.append(line) }
                    }
                }
            }
        }

        deinit { if process.isRunning { process.terminate() } }

        func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

        /// The commands coplay sent it, in order.
        var commands: [[String: Any]] {
            lines.withLock { $0 }.compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["got"] as? [String: Any]
            }
        }

        /// Its position and the true Unix time it was at it.
        func state() -> (position: Double, atUnixNanos: Int64)? {
            let before = lines.withLock { $0.count }
            send("state")
            for _ in 0..<100 {
                usleep(10_000)
                let fresh = lines.withLock { Array($0.dropFirst(before)) }
                for line in fresh {
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        let state = object["state"] as? [String: Any],
                        let position = (state["position"] as? NSNumber)?.doubleValue,
                        let at = (state["atUnixNanos"] as? NSNumber)?.int64Value
                    else { continue }
                    return (position, at)
                }
            }
            return nil
        }

        func waitFor(_ timeout: Duration, command name: String, count: Int = 1) -> Bool {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                if commands.filter({ $0["command"] as? String == name }).count >= count { return true }
                usleep(20_000)
            }
            return false
        }
    }

    /// A delegating player that cannot load the item says `load-failed` and why: its agent leaves
    /// the item, a play from the group afterwards leaves it in no suspension, and the group sees
    /// why it is not watching.
    @Test func aLoadThePlayerCannotDo_leavesTheItem_andSuspendsNobody() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-fail-\(getpid()).sock").path
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(23))", "--session", "socket-fail"]
        let alice = try AgentProcess(
            executable: coplay, name: "alice", arguments: common + ["--player", "socket:\(path)"])
        let bob = try AgentProcess(executable: coplay, name: "bob", arguments: common)
        let client = try Client(socket: path)
        #expect(alice.waitForEvent(timeout: .seconds(10)) { $0.name == "peer-joined" } != nil)
        bob.send("share http://example.invalid/missing.mkv id=missing duration=600")
        #expect(client.waitFor(.seconds(5), command: "load"))
        client.send(#"raw {"event":"load-failed","message":"404 Not Found","problem":"notFound"}"#)
        let unloaded = alice.waitForEvent(timeout: .seconds(3)) { $0.name == "item-unloaded" }
        #expect(unloaded?["item"] as? String == "missing", "\(unloaded?.line ?? "no item-unloaded")")
        bob.send("play")
        usleep(4_000_000)
        // No suspension (no stallRecovery), only why it is not watching: at alice and at bob.
        let suspensions = try #require(alice.status()?["suspensions"] as? [String])
        #expect(suspensions == ["cannotPlay:notFound"], "alice: \(suspensions)")
        let seen = bob.peers()?.first { $0["name"] as? String == "alice" }
        #expect((seen?["suspensions"] as? [String]) == ["cannotPlay:notFound"], "bob's peers: \(seen ?? [:])")
        client.send("quit")
        for agent in [alice, bob] { agent.send("quit") }
        for agent in [alice, bob] { _ = agent.waitForExit(timeout: .seconds(5)) }
    }

    @Test func aDelegatingPlayerFollowsTheGroup_actsForItsPerson_completesLate_andReconnects() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-player-\(getpid()).sock").path
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(7))", "--session", "socket-it"]
        let alice = try AgentProcess(
            executable: coplay, name: "alice", arguments: common + ["--player", "socket:\(path)"])
        let bob = try AgentProcess(executable: coplay, name: "bob", arguments: common)
        var client = try Client(socket: path, ["--speed-error", "0.003"])
        #expect(alice.waitForEvent(timeout: .seconds(10)) { $0.name == "peer-joined" } != nil)
        #expect(alice.status()?["player"].flatMap { ($0 as? [String: Any])?["kind"] as? String } == "socket")

        // Loaded and started with the group: the client answers `done`, then plays at the instant.
        bob.send("share http://example.invalid/film.mkv id=film duration=600")
        #expect(client.waitFor(.seconds(5), command: "load"))
        usleep(300_000)
        bob.send("play")
        #expect(client.waitFor(.seconds(5), command: "play"))
        #expect(alice.waitForEvent(timeout: .seconds(5)) { $0.name == "playing" } != nil)
        // It runs 0.3% fast: rate nudges hold it on the group's timeline (bob's simulated player).
        usleep(4_000_000)
        let state = try #require(client.state())
        let group = try #require(bob.status())
        let groupPosition = try #require((group["position"] as? NSNumber)?.doubleValue)
        let groupAt = try #require((group["sampledAtUnixNanos"] as? NSNumber)?.int64Value)
        let error = state.position - (groupPosition + Double(state.atUnixNanos - groupAt) / 1e9)
        #expect(abs(error) < 0.005, "the socket player is \(error * 1000) ms off the group")
        #expect(client.commands.contains { $0["command"] as? String == "rate" }, "steered by rate nudges")
        let player = try #require(alice.status()?["player"] as? [String: Any])
        #expect(((player["samplePosition"] as? NSNumber)?.doubleValue ?? 0) > 3, "status shows the player's own sample")
        #expect(abs((player["sampleErrorMs"] as? NSNumber)?.doubleValue ?? 99) < 5)

        // The person in front of the player pauses it: bob pauses, with alice as the originator.
        client.send("pause")
        let paused = bob.waitForEvent(timeout: .seconds(3)) { $0.name == "paused" }
        #expect((paused?["originator"] as? [String: Any])?["name"] as? String == "alice")

        // Garbage and out-of-range values from the player are answered with an error each and
        // change nothing.
        usleep(200_000)
        let statusBefore = alice.status()?["rate"] as? NSNumber
        for garbage in [
            "{not json", #"{"event":"sample","position":-5,"rate":1,"atUnixNanos":0}"#,
            #"{"event":"user","action":"play","rate":1e300}"#, #"{"event":"sample","position":1e400}"#,
            #"{"done":"x"}"#, #"{"event":"explode"}"#,
            #"{"event":"sample","position":1,"rate":1,"atUnixNanos":-9223372036854775808}"#,
        ] {
            client.send("raw \(garbage)")
        }
        usleep(300_000)
        let errors = client.commands.compactMap { $0["error"] as? String }
        #expect(errors.count == 7, "\(errors)")
        #expect(alice.status()?["rate"] as? NSNumber == statusBefore)
        #expect(bob.allEvents.filter { $0.name == "paused" || $0.name == "playing" }.count == 2)

        // The player disconnects: alice says so and keeps running; a new one is told the item.
        client.send("quit")
        #expect(alice.waitForEvent(timeout: .seconds(3)) { $0.name == "player-error" } != nil)
        #expect(alice.status()?["rate"] as? NSNumber == statusBefore)
        // The new player is slow: it completes loads and prepares 4 s late.
        client = try Client(socket: path, ["--complete-late", "4"])
        #expect(client.waitFor(.seconds(5), command: "load"), "a reconnecting player is sent the item")
        // A coordinated seek from bob does not wait past its deadline for the slow player: alice
        // is left out in a stall recovery, which ends when the player completes.
        usleep(4_500_000)
        let mark = alice.allEvents.count
        bob.send("seek 100")
        bob.send("play")
        #expect(
            bob.waitForEvent(from: 0, timeout: .seconds(6)) {
                $0.name == "playing" && ($0["position"] as? NSNumber)?.doubleValue ?? 0 >= 100
            } != nil)
        let began = alice.waitForEvent(from: mark, timeout: .seconds(6)) { $0.name == "suspension-began" }
        #expect(began?["reason"] as? String == "stallRecovery")
        let ended = alice.waitForEvent(from: mark, timeout: .seconds(8)) { $0.name == "suspension-ended" }
        #expect(ended?["reason"] as? String == "stallRecovery", "the slow player caught up")

        client.send("quit")
        for agent in [alice, bob] { agent.closeInput() }
        for agent in [alice, bob] { #expect(agent.waitForExit(timeout: .seconds(5)) == 0) }
        #expect(!FileManager.default.fileExists(atPath: path), "the socket is removed on exit")
    }
}

import CoplayHarness
import Foundation
import Synchronization
import Testing

/// An agent attached (`--mpv-attach`) to a stand-in for mpv's IPC socket that answers every
/// request and, on cue, says it is paused for its cache: the buffering of a real network
/// stream, which a local file never has. The agent must turn it into a `stallRecovery`
/// suspension and end it once the player has caught up.
@Suite(.serialized, .onALane) struct MpvStallTests {
    /// Listens on `path`; answers each request with success, `file-loaded` and
    /// `playback-restart` after a `loadfile`, and `seek` and `playback-restart` after a `seek`.
    final class FakeMpv: @unchecked Sendable {
        let listener: Int32
        private let connection = Mutex<Int32>(-1)
        let commands = Mutex<[String]>([])
        /// Whether a seek is answered with its events (mpv answers one it cannot make, in a
        /// stream without byte ranges, with success alone).
        let answersSeeks = Mutex(true)

        let path: String

        init(path: String) {
            self.path = path
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            listen(descriptor, 1)
            listener = descriptor
            Thread.detachNewThread { [self] in
                let client = accept(descriptor, nil, nil)
                connection.withLock { $0 = client }
                var buffer: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = recv(client, &chunk, chunk.count, 0)
                    guard count > 0 else { return }
                    buffer += chunk[..<count]
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = Array(buffer[..<newline])
                        buffer.removeSubrange(...newline)
                        answer(line)
                    }
                }
            }
        }

        private func answer(_ line: [UInt8]) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let command = object["command"] as? [Any], let name = command.first as? String
            else { return }
            commands.withLock { $0.append(name) }
            var replies = [#"{"request_id":\#(object["request_id"] as? Int ?? 0),"error":"success","data":1.0}"#]
            if name == "loadfile" {
                replies += [#"{"event":"start-file"}"#, #"{"event":"file-loaded"}"#, #"{"event":"playback-restart"}"#]
            }
            if name == "seek", answersSeeks.withLock({ $0 }) {
                replies += [#"{"event":"seek"}"#, #"{"event":"playback-restart"}"#]
            }
            for reply in replies { send(reply) }
        }

        /// Stops listening and removes the socket's file.
        func close() {
            Glibc.close(listener)
            unlink(path)
        }

        func send(_ line: String) {
            let client = connection.withLock { $0 }
            _ = Array((line + "\n").utf8).withUnsafeBytes {
                Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
        }
    }

    /// A fake mpv on a socket of its own (`TAG` names it) and an agent attached to it.
    private func attached(_ tag: String, port: Int, session: String) throws -> (FakeMpv, AgentProcess) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-\(tag)-mpv-\(getpid()).sock")
            .path
        unlink(path)
        let mpv = FakeMpv(path: path)
        do {
            let agent = try AgentProcess(
                executable: coplay, name: "viewer",
                arguments: [
                    "--interface", "lo", "--group", "239.255.77.1:\(privatePort(port))", "--session", session,
                    "--player", "mpv", "--mpv-attach", "--mpv-socket", path,
                ])
            return (mpv, agent)
        } catch {
            mpv.close()
            throw error
        }
    }

    @Test func pausedForCache_becomesAStallRecoverySuspension_thatEndsOnceCaughtUp() throws {
        let (mpv, agent) = try attached("fake", port: 16, session: "stall-it")
        defer { mpv.close() }
        #expect(agent.waitForEvent(timeout: .seconds(5)) { $0.name == "session" } != nil)
        agent.send("share http://example.invalid/stream.mkv id=stream")
        agent.send("play-now")
        #expect(agent.waitForEvent(timeout: .seconds(5)) { $0.name == "playing" } != nil)
        usleep(300_000)
        // (A play-now before the player is ready is itself a short stall recovery: look only after.)
        let mark = agent.allEvents.count
        mpv.send(#"{"event":"property-change","id":3,"name":"paused-for-cache","data":true}"#)
        let began = agent.waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "suspension-began" }
        #expect(began?["reason"] as? String == "stallRecovery")
        #expect(agent.status()?["suspensions"] as? [String] == ["stallRecovery"])
        mpv.send(#"{"event":"property-change","id":3,"name":"paused-for-cache","data":false}"#)
        let ended = agent.waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "suspension-ended" }
        #expect(ended?["reason"] as? String == "stallRecovery", "the stall is over once mpv has caught up")
        #expect(mpv.commands.withLock { $0.filter { $0 == "seek" }.count } >= 1, "caught up with a seek to the group")
        #expect(agent.status()?["suspensions"] as? [String] == [])
        agent.closeInput()
        #expect(agent.waitForExit(timeout: .seconds(5)) == 0, "an attached mpv is left running; the agent exits 0")
    }

    /// A new item never inherits the last one's stall: on the first item (a server without byte
    /// ranges) mpv answered a seek it could not make with success and nothing after it, and said
    /// it was paused for its cache, and never that it was over, before the group moved on. The
    /// next item loads, is ready, and starts with the group, with no suspension (it stayed in
    /// `stallRecovery` at rate 0: issue 52, seen with mpv and `python3 -m http.server`).
    @Test func aNewItem_doesNotInheritTheLastOnesStall() throws {
        let (mpv, agent) = try attached("stuck", port: 18, session: "stuck-it")
        defer { mpv.close() }
        defer { agent.closeInput() }
        #expect(agent.waitForEvent(timeout: .seconds(5)) { $0.name == "session" } != nil)
        agent.send("share http://example.invalid/first.mp4 id=first")
        agent.send("play-now")
        #expect(agent.waitForEvent(timeout: .seconds(5)) { $0.name == "playing" } != nil)
        usleep(300_000)
        mpv.answersSeeks.withLock { $0 = false }
        agent.send("seek 60")
        usleep(300_000)
        mpv.send(#"{"event":"property-change","id":3,"name":"paused-for-cache","data":true}"#)
        #expect(agent.waitForEvent(timeout: .seconds(3)) { $0.name == "suspension-began" } != nil)
        // The group moves on; mpv never says the old file's stall is over.
        let mark = agent.allEvents.count
        agent.send("share http://example.invalid/second.mp4 id=second")
        usleep(300_000)
        agent.send("play")
        let playing = agent.waitForEvent(from: mark, timeout: .seconds(2)) {
            $0.name == "playing" && $0["item"] as? String == "second"
        }
        #expect(playing != nil, "the second item starts with the group within 2 s, its player ready")
        #expect(agent.status()?["suspensions"] as? [String] == [], "no stall carried over")
    }

    /// Press-to-playing: after a group pause mpv is held where the group stopped, so the
    /// coordinated start that follows prepares it without a seek (a seek to where it already is
    /// cost the start tens of milliseconds).
    @Test func aPlayAfterAPause_startsWithoutSeekingMpvAgain() throws {
        let (mpv, agent) = try attached("held", port: 17, session: "held-it")
        defer { mpv.close() }
        defer { agent.closeInput() }
        #expect(agent.waitForEvent(timeout: .seconds(5)) { $0.name == "session" } != nil)
        agent.send("share http://example.invalid/stream.mkv id=stream")
        agent.send("play-now")
        #expect(agent.waitForEvent(timeout: .seconds(5)) { $0.name == "playing" } != nil)
        usleep(300_000)
        agent.send("pause")
        #expect(agent.waitForEvent(timeout: .seconds(3)) { $0.name == "paused" } != nil)
        usleep(300_000)
        let (mark, seeks) = (agent.allEvents.count, mpv.commands.withLock { $0.filter { $0 == "seek" }.count })
        agent.send("play")
        #expect(agent.waitForEvent(from: mark, timeout: .seconds(3)) { $0.name == "playing" } != nil)
        usleep(200_000)
        #expect(mpv.commands.withLock { $0.filter { $0 == "seek" }.count } == seeks, "held where the start is")
    }
}

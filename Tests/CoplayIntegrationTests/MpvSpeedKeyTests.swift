import CoplayHarness
import Foundation
import Testing

/// The person's speed keys in a real mpv, in a suite of their own so that they run beside
/// `MpvAgentTests`, not after it (that suite is serialized and the fast tier's longest).
@Suite(.onALane, .enabled(if: MpvClient.isInstalled, "mpv is not installed (.ci/run installs it)"))
struct MpvSpeedKeyTests {
    /// The person's own `]` in mpv A (mpv multiplies its speed by 1.1) is the group's rate of 1.1,
    /// whatever nudge mpv A's speed carried, and `[` brings it back to 1: mpv B follows each
    /// within half a second of the key (it takes 10-20 ms on an idle machine, printed; 73 ms was
    /// seen beside the whole fast tier: a bound on following, not a timing target), and neither
    /// agent issues anything else.
    @Test func aPersonsSpeedKeysInMpv_moveTheGroupsRateAndBack() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mpv-keys-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let mpv = MpvAgentTests()
        let media = directory.appendingPathComponent("pattern.mkv").path
        try MpvClient.makeTestMedia(at: media, seconds: 60)
        let (alice, bob, players) = try mpv.twoAgentsWithMpv(in: directory, port: privatePort(28), session: "mpv-keys")
        defer {
            for agent in [alice, bob] {
                agent.closeInput()
                _ = agent.waitForExit(timeout: .seconds(5))
            }
        }
        let (mpvA, mpvB) = (players[0], players[1])
        #expect(alice.waitForEvent(timeout: .seconds(10)) { $0.name == "peer-joined" } != nil)
        alice.send("share \(media) id=pattern duration=60")
        #expect(mpv.waitUntil(.seconds(10)) { mpvB.property("path") as? String == media }, "bob's mpv loaded the file")
        usleep(500_000)
        alice.send("play")
        #expect(mpv.waitUntil(.seconds(10)) { mpvB.property("pause") as? Bool == false })
        usleep(2_000_000)  // steered together, nudges on both

        /// From the key to mpv B's speed within 1% of `rate` (ms), polled.
        func keyToSpeed(_ key: String, _ rate: Double) -> Double? {
            let pressed = ContinuousClock.now
            mpvA.command(["keypress", key])
            while ContinuousClock.now - pressed < .seconds(2) {
                if let speed = mpvB.number("speed"), abs(speed / rate - 1) < 0.01 {
                    let elapsed = (ContinuousClock.now - pressed).components
                    return Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
                }
            }
            return nil
        }
        let mark = bob.allEvents.count
        let up = keyToSpeed("]", 1.1)
        #expect(up.map { $0 <= 500 } == true, "] → mpv B at 1.1 in \(up.map { "\($0) ms" } ?? "never")")
        usleep(1_000_000)
        let down = keyToSpeed("[", 1.0)
        #expect(down.map { $0 <= 500 } == true, "[ → mpv B at 1 in \(down.map { "\($0) ms" } ?? "never")")
        print("speed keys in mpv A → mpv B at the rate: ] \(up ?? .nan) ms, [ \(down ?? .nan) ms")
        usleep(1_000_000)
        // Each key is one group `play` at the person's rate (and its coordinated start), not mpv
        // A's nudged speed; nothing else was issued: no pause, no other rate.
        let commands = bob.allEvents.dropFirst(mark).filter {
            ["paused", "playing", "waiting", "time-jumped", "rate-changed"].contains($0.name)
        }
        let plays = commands.filter { $0["reason"] as? String == "play" }
        let rates = plays.compactMap { ($0["rate"] as? NSNumber)?.doubleValue }
        #expect(
            rates.count == 2 && abs(rates[0] - 1.1) < 1e-3 && abs(rates[1] - 1) < 1e-3,
            "the group's rates: \(plays.map(\.line))")
        #expect(
            commands.allSatisfy { ["play", "start"].contains($0["reason"] as? String ?? "") },
            "\(commands.map(\.line))")
    }
}

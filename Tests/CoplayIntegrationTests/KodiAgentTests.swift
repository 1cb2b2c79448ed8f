import CoplayHarness
import Foundation
import Testing

/// Kodi beside mpv: alice's agent drives a headless mpv, bob's a Kodi 20 of the test's own (a
/// virtual display with software GL, a null PulseAudio sink) over Kodi's JSON-RPC on loopback.
/// The positions are the players' own, read from outside the agents: mpv's through its socket,
/// Kodi's through the test's own JSON-RPC connection (`KodiClient`). In the players tier
/// (`COPLAY_PLAYERS=1`, about 90 s).
@Suite(.serialized, .onALane)
struct KodiAgentTests {
    static let enabled =
        ProcessInfo.processInfo.environment["COPLAY_PLAYERS"] == "1" && MpvClient.isInstalled && KodiProcess.isInstalled

    func waitUntil(_ timeout: Duration, _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            usleep(2_000)
        }
        return condition()
    }

    @Test(
        .enabled(if: enabled, "COPLAY_PLAYERS=1, with mpv, kodi, xvfb and pulseaudio"), .timeLimit(.minutes(4)))
    func kodiBesideMpv_playsInStep_followsItsRemote_andStandsAsideWhileGone() throws {
        let directory = URL(fileURLWithPath: "/tmp/coplay-kodi-test-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = directory.appendingPathComponent("pattern.mkv").path
        try MpvClient.makeTestMedia(at: media, seconds: 180)
        chmod(media, 0o644)
        let port = try #require(Int(privatePort(34)))
        var kodi = try KodiProcess(folder: directory.appendingPathComponent("kodi"), port: port)
        defer { kodi.stop() }
        var remote = try KodiClient(port: port)

        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(33))", "--session", "kodi"]
        let mpvSocket = directory.appendingPathComponent("a.sock").path
        let alice = try AgentProcess(
            executable: coplay, name: "alice",
            arguments: common + [
                "--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null", "--mpv-socket", mpvSocket,
            ])
        let bob = try AgentProcess(
            executable: coplay, name: "bob", arguments: common + ["--player", "kodi:127.0.0.1:\(port)"])
        let mpv = try MpvClient(path: mpvSocket)
        #expect(alice.waitForEvent(timeout: .seconds(15)) { $0.name == "peer-joined" } != nil)
        alice.send("share \(media) id=pattern duration=180")
        #expect(bob.waitForEvent(timeout: .seconds(10)) { $0.name == "item-changed" } != nil)
        #expect(waitUntil(.seconds(10)) { remote.time() != nil }, "Kodi opened the film")
        usleep(1_000_000)
        alice.send("play")
        #expect(waitUntil(.seconds(5)) { mpv.property("pause") as? Bool == false })
        // The first seconds after a start are the follower's to settle by skips.
        usleep(4_000_000)
        let step = remote.clockStep(seconds: 2)
        let offsets = remote.offsets(against: mpv, seconds: 10)
        print(
            "Kodi beside mpv: Kodi's time steps every \(step.map { String(format: "%.0f", $0) } ?? "?") ms;"
                + " at its steps Kodi − mpv \(Distribution(offsets).summary(unit: "ms"))")
        #expect(offsets.count >= 30, "Kodi's time stepped \(offsets.count) times in 10 s")
        #expect(Distribution(offsets.map(abs)).percentile(0.99) <= 20, "\(Distribution(offsets).summary(unit: "ms"))")

        // The person at Kodi pauses with its remote (`Input.ExecuteAction pause`, as a remote
        // does): the group pauses, and alice's mpv with it; alice plays again.
        var pauses: [Double] = []
        remote.call("GUI.SetFullscreen", ["fullscreen": true])  // the film's window, as a person watches it
        for _ in 0..<5 {
            // Kodi's pause is a toggle, as its remote's key is: pressed while it plays (not while a
            // skip of the follower's holds it still for a moment), and pressed again if Kodi did
            // not take it (seen now and then with the first key of a run: no OnPause, still
            // playing). What is measured is coplay's part, from the key Kodi took.
            var sent: Int64 = 0
            var pausedAt: Int64?
            var taken = true
            for _ in 0..<3 {
                #expect(waitUntil(.seconds(3)) { remote.time()?.speed == 1 }, "Kodi plays")
                sent = MpvClient.unixNanos()
                remote.call("Input.ExecuteAction", ["action": "pause"])
                var askedKodi = false
                _ = waitUntil(.seconds(3)) {
                    if mpv.property("pause") as? Bool == true { pausedAt = MpvClient.unixNanos() }
                    if pausedAt == nil, !askedKodi, MpvClient.unixNanos() - sent > 1_000_000_000 {
                        askedKodi = true
                        taken = remote.time()?.speed == 0
                        if !taken { return true }  // Kodi did not take the key: pressed again
                    }
                    return pausedAt != nil
                }
                if pausedAt != nil || taken { break }
            }
            remote.call("JSONRPC.Ping", nil)  // reads the notifications that came meanwhile
            guard let pausedAt, remote.notified("Player.OnPause", since: sent) != nil else {
                let kodiPaused = remote.notified("Player.OnPause", since: sent) != nil
                Issue.record(
                    "mpv paused: \(pausedAt != nil); Kodi took the key: \(taken), said it paused: \(kodiPaused)")
                break
            }
            // From the remote's key to mpv paused: Kodi's own handling of the key included (the
            // test reads Kodi's notification only when it next asks Kodi something).
            pauses.append(Double(pausedAt - sent) / 1e6)
            usleep(500_000)
            alice.send("play")
            #expect(
                waitUntil(.seconds(5)) {
                    remote.call("JSONRPC.Ping", nil)
                    return remote.notified("Player.OnResume", since: pausedAt) != nil
                }, "Kodi plays again")
            usleep(3_000_000)
        }
        print(
            "a pause made with Kodi's remote (its key sent) → mpv paused: \(Distribution(pauses).summary(unit: "ms"))")
        #expect(
            pauses.count == 5 && Distribution(pauses).percentile(0.5) <= 50,
            "\(Distribution(pauses).summary(unit: "ms"))")
        #expect(alice.allEvents.filter { $0.name == "paused" && $0.line.contains("bob") }.count >= 5)

        // Kodi stopped whole for 10 s (SIGSTOP: a hung player): bob says so within 2 s and stands
        // aside; the group plays on, and nothing of the freeze is a group command; once Kodi runs
        // again it follows the group again.
        let kodiPID = try #require(kodi.kodiPIDs.first, "Kodi runs")
        let frozenFrom = alice.allEvents.count
        let saidAfter = bob.says("Kodi has answered nothing", after: SIGSTOP, to: kodiPID, within: .seconds(3))
        #expect(saidAfter != nil, "bob said its Kodi stopped")
        let mpvBefore = mpv.number("time-pos") ?? .nan
        usleep(10_000_000)
        let mpvAfter = mpv.number("time-pos") ?? .nan
        kill(kodiPID, SIGCONT)
        #expect(mpvAfter - mpvBefore > 9, "alice's mpv played on: \(mpvBefore) → \(mpvAfter)")
        #expect(bob.waitForDiagnostic(timeout: .seconds(3)) { $0.contains("Kodi answers again") })
        // Back in the group by skips (each holds Kodi paused 1.2 s, `kodiSkipTime`: a window with one
        // sees fewer steps).
        usleep(8_000_000)
        let resumed = remote.offsets(against: mpv, seconds: 5)
        print(
            "Kodi stopped 10 s: said after \(saidAfter ?? .zero); then Kodi − mpv \(Distribution(resumed).summary(unit: "ms"))"
        )
        #expect(
            resumed.count >= 10 && abs(Distribution(resumed).percentile(0.5)) <= 20,
            "\(Distribution(resumed).summary(unit: "ms"))")
        let realignFrom = alice.allEvents.count
        alice.send("pause")
        usleep(1_000_000)
        alice.send("play")
        usleep(4_000_000)
        let realigned = remote.offsets(against: mpv, seconds: 5)
        print("then a pause and a play: Kodi − mpv \(Distribution(realigned).summary(unit: "ms"))")
        #expect(
            realigned.count >= 10 && abs(Distribution(realigned).percentile(0.5)) <= 20,
            "\(Distribution(realigned).summary(unit: "ms"))")
        let commands = alice.commandsSeen(since: frozenFrom, until: realignFrom, startedBy: "bob")
        #expect(commands.isEmpty, "the freeze moved the group: \(commands)")

        // Kodi killed outright and started again (a box restarted): bob stays, says so, and once
        // Kodi answers again opens the group's film there and follows.
        kodi.stop()
        #expect(
            bob.waitForDiagnostic(timeout: .seconds(4)) { $0.contains("Kodi's connection") && $0.contains("ended") },
            "bob said Kodi went")
        #expect(bob.isRunning, "bob stays in the group without its Kodi")
        kodi = try KodiProcess(folder: directory.appendingPathComponent("kodi"), port: port)
        remote = try KodiClient(port: port)
        #expect(bob.waitForDiagnostic(timeout: .seconds(20)) { $0.contains("Kodi is back") }, "bob drove Kodi again")
        usleep(8_000_000)
        let restarted = remote.offsets(against: mpv, seconds: 5)
        print("Kodi restarted: then Kodi − mpv \(Distribution(restarted).summary(unit: "ms"))")
        #expect(
            restarted.count >= 10 && abs(Distribution(restarted).percentile(0.5)) <= 20,
            "\(Distribution(restarted).summary(unit: "ms"))")

        bob.closeInput()
        alice.closeInput()
        #expect(bob.waitForExit(timeout: .seconds(5)) == 0, "\(bob.diagnostics.suffix(5))")
        #expect(alice.waitForExit(timeout: .seconds(5)) == 0, "\(alice.diagnostics.suffix(5))")
    }
}

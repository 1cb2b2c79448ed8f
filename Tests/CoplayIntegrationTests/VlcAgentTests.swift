import CoplayHarness
import Foundation
import Testing

/// The players people have, beside mpv: alice's agent drives a headless mpv, bob's a VLC 3 with no
/// video or sound output (`vout=dummy`, `aout=dummy`), both on loopback. The positions are the
/// players' own, read from outside the agents: mpv's through its socket, VLC's clock through the
/// benchmark's own connection to coplay's script inside it (`VlcObserver`). A tier of its own in CI
/// (`COPLAY_PLAYERS=1 swift test --filter VlcAgentTests`, about 45 s): VLC is started as `nobody`
/// when the tests run as root, since VLC refuses root.
@Suite(.serialized, .onALane)
struct VlcAgentTests {
    static let enabled =
        ProcessInfo.processInfo.environment["COPLAY_PLAYERS"] == "1" && MpvClient.isInstalled
        && VlcObserver.isInstalled && (!isRoot || Locations.onPath("setpriv") != nil)

    func waitUntil(_ timeout: Duration, _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            usleep(2_000)
        }
        return condition()
    }

    @Test(
        .enabled(if: enabled, "COPLAY_PLAYERS=1, with mpv and vlc (vlc-bin, vlc-plugin-base)"), .timeLimit(.minutes(3)))
    func vlcBesideMpv_playsInStep_andAPauseInVLCPausesTheGroup() throws {
        let (directory, vlcPath) = try Self.folderForVLC("test")
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = directory.appendingPathComponent("pattern.mkv").path
        try MpvClient.makeTestMedia(at: media, seconds: 90)
        chmod(media, 0o644)
        let rc = directory.appendingPathComponent("rc.sock").path
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(31))", "--session", "vlc"]
        let mpvSocket = directory.appendingPathComponent("a.sock").path
        let alice = try AgentProcess(
            executable: coplay, name: "alice",
            arguments: common + [
                "--player", "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null", "--mpv-socket", mpvSocket,
            ])
        let observer = try VlcObserver()
        let bob = try AgentProcess(
            executable: coplay, name: "bob",
            arguments: common + ["--player", "vlc", "--vlc-option", "vout=dummy", "--vlc-option", "aout=dummy"]
                + ["--vlc-option", "extraintf=oldrc", "--vlc-option", "rc-unix=\(rc)", "--vlc-option", "rc-fake-tty"]
                + vlcPath,
            environment: observer.observeEnvironment)
        let mpv = try MpvClient(path: mpvSocket)
        #expect(alice.waitForEvent(timeout: .seconds(15)) { $0.name == "peer-joined" } != nil)
        alice.send("share \(media) id=pattern duration=90")
        #expect(bob.waitForEvent(timeout: .seconds(10)) { $0.name == "item-changed" } != nil)
        usleep(1_000_000)
        alice.send("play")
        #expect(waitUntil(.seconds(5)) { mpv.property("pause") as? Bool == false })
        // The first seconds after a start are the follower's to settle; then ten seconds of steps.
        usleep(3_000_000)
        let offsets = observer.offsets(against: mpv, since: MpvClient.unixNanos(), seconds: 10)
        print("VLC beside mpv: VLC's clock − mpv's \(Distribution(offsets).summary(unit: "ms"))")
        let steps = offsets.count
        #expect(steps >= 30, "VLC's clock stepped \(steps) times in 10 s")
        #expect(Distribution(offsets.map(abs)).percentile(0.99) <= 10, "\(Distribution(offsets).summary(unit: "ms"))")

        // The person at VLC pauses there (VLC's own remote control, as its space bar): the group
        // pauses, and alice's mpv with it; alice plays again.
        var pauses: [Double] = []
        for _ in 0..<5 {
            let sent = MpvClient.unixNanos()
            try VlcObserver.remoteControl(rc, "pause")
            var pausedAt: Int64?
            _ = waitUntil(.seconds(3)) {
                if mpv.property("pause") as? Bool == true { pausedAt = MpvClient.unixNanos() }
                return pausedAt != nil
            }
            guard let pausedAt, let vlcPaused = observer.paused(true, since: sent) else {
                Issue.record("mpv did not pause after VLC's pause")
                break
            }
            pauses.append(Double(pausedAt - vlcPaused) / 1e6)
            usleep(500_000)
            alice.send("play")
            #expect(waitUntil(.seconds(5)) { observer.paused(false, since: pausedAt) != nil }, "VLC plays again")
            usleep(1_500_000)
        }
        print("a pause pressed in VLC → mpv paused: \(Distribution(pauses).summary(unit: "ms"))")
        #expect(
            pauses.count == 5 && Distribution(pauses).percentile(0.5) <= 30,
            "\(Distribution(pauses).summary(unit: "ms"))")
        let events = bob.allEvents.filter { $0.name == "paused" }
        #expect(events.count >= 5, "bob said its pauses")

        /// Four seconds of VLC's clock against mpv's, after a trouble: in step again.
        func followsAgain(_ what: String) {
            let offsets = observer.offsets(against: mpv, since: MpvClient.unixNanos(), seconds: 4)
            print("\(what): VLC's clock − mpv's \(Distribution(offsets).summary(unit: "ms"))")
            #expect(
                offsets.count >= 10 && Distribution(offsets.map(abs)).percentile(0.99) <= 10,
                "\(what): \(Distribution(offsets).summary(unit: "ms"))")
        }

        // bob's VLC stopped whole for 10 s (SIGSTOP: a hung player): bob says so within 2 s and
        // stands aside; the group plays on, and VLC's clock falling behind is no group command;
        // once it runs again it follows the group again.
        let vlcPID = try #require(VlcObserver.pids(naming: rc).first, "bob's VLC runs")
        let frozenFrom = alice.allEvents.count
        let saidAfter = bob.says("VLC has said nothing", after: SIGSTOP, to: vlcPID, within: .seconds(3))
        #expect(saidAfter != nil, "bob said its VLC stopped")
        let mpvBefore = mpv.number("time-pos") ?? .nan
        usleep(10_000_000)
        let mpvAfter = mpv.number("time-pos") ?? .nan
        kill(vlcPID, SIGCONT)
        #expect(mpvAfter - mpvBefore > 9, "alice's mpv played on: \(mpvBefore) → \(mpvAfter)")
        #expect(bob.waitForDiagnostic(timeout: .seconds(3)) { $0.contains("VLC speaks again") })
        usleep(3_000_000)
        followsAgain("VLC stopped 10 s: said after \(saidAfter ?? .zero)")
        let commands = alice.commandsSeen(since: frozenFrom, startedBy: "bob")
        #expect(commands.isEmpty, "the freeze moved the group: \(commands)")

        // bob's VLC killed (SIGKILL: the kernel's OOM killer, or a crash): bob says so within 2 s
        // and stands aside, starts another VLC, plays the group's film there again and follows
        // it; the group never moves for it.
        let crashedFrom = alice.allEvents.count
        let killedPID = try #require(VlcObserver.pids(naming: rc).first, "bob's VLC runs")
        let killed = ContinuousClock.now
        let killSaidAfter = bob.says("VLC ended by signal 9", after: SIGKILL, to: killedPID, within: .seconds(3))
        #expect(killSaidAfter != nil, "bob said its VLC was killed")
        #expect(bob.waitForDiagnostic(timeout: .seconds(20)) { $0.contains("VLC is back") }, "bob started VLC again")
        let backAfter = ContinuousClock.now - killed
        #expect(VlcObserver.pids(naming: rc).count == 1 && VlcObserver.pids(naming: rc).first != killedPID)
        usleep(4_000_000)
        followsAgain("VLC killed: said after \(killSaidAfter ?? .zero), back after \(backAfter); 4 s later")
        let crashCommands = alice.commandsSeen(since: crashedFrom, startedBy: "bob")
        #expect(crashCommands.isEmpty, "the crash moved the group: \(crashCommands)")

        // bob killed outright: its VLC goes with it (the script's next write fails), within 2 s.
        #expect(Self.processes(naming: rc) == 1, "bob's VLC runs")
        bob.signal(SIGKILL)
        _ = bob.waitForExit(timeout: .seconds(5))
        #expect(waitUntil(.seconds(3)) { Self.processes(naming: rc) == 0 }, "bob's VLC ended with bob")
        alice.closeInput()
        #expect(alice.waitForExit(timeout: .seconds(5)) == 0)
    }

    /// A VLC started by an agent ends with it: Ctrl-D on bob's standard input, and the VLC is gone.
    @Test(
        .enabled(if: enabled, "COPLAY_PLAYERS=1, with mpv and vlc (vlc-bin, vlc-plugin-base)"), .timeLimit(.minutes(1)))
    func anAgentEndingCleanly_quitsItsVLC_andAnOptionVLCRefusesIsAnErrorAtStart() throws {
        let (directory, vlcPath) = try Self.folderForVLC("end")
        defer { try? FileManager.default.removeItem(at: directory) }
        let marker = directory.appendingPathComponent("marker").path
        let common = ["--interface", "lo", "--group", "239.255.77.1:\(privatePort(32))", "--session", "vlc-end"]
        let agent = try AgentProcess(
            executable: coplay, name: "carol",
            arguments: common + ["--player", "vlc", "--vlc-option", "vout=dummy", "--vlc-option", "aout=dummy"]
                + ["--vlc-option", "meta-title=\(marker)"] + vlcPath)
        #expect(agent.waitForEvent(timeout: .seconds(15)) { $0.name == "session" } != nil)
        #expect(Self.processes(naming: marker) == 1)
        agent.closeInput()
        #expect(agent.waitForExit(timeout: .seconds(5)) == 0)
        #expect(waitUntil(.seconds(3)) { Self.processes(naming: marker) == 0 }, "carol's VLC quit with carol")
        // An option VLC does not know: the agent says so and exits, not a hang.
        let refused = try AgentProcess(
            executable: coplay, name: "dave",
            arguments: common + ["--player", "vlc", "--vlc-option", "no-such-vlc-option=1"] + vlcPath)
        #expect(refused.waitForExit(timeout: .seconds(15)) == 1)
        #expect(
            refused.diagnostics.contains { $0.contains("VLC exited") && $0.contains("--vlc-option") },
            "\(refused.diagnostics)")
        // The person quits VLC (its own quit, as its menu's): the agent leaves, as with mpv; a quit
        // is no crash, and no VLC is started again.
        let rc = directory.appendingPathComponent("end-rc.sock").path
        let quitter = try AgentProcess(
            executable: coplay, name: "frank",
            arguments: common + ["--player", "vlc", "--vlc-option", "vout=dummy", "--vlc-option", "aout=dummy"]
                + ["--vlc-option", "extraintf=oldrc", "--vlc-option", "rc-unix=\(rc)", "--vlc-option", "rc-fake-tty"]
                + vlcPath)
        #expect(quitter.waitForEvent(timeout: .seconds(15)) { $0.name == "session" } != nil)
        #expect(waitUntil(.seconds(5)) { FileManager.default.fileExists(atPath: rc) })
        try VlcObserver.remoteControl(rc, "quit")
        #expect(quitter.waitForExit(timeout: .seconds(5)) != nil, "frank left when its VLC was quit")
        #expect(quitter.diagnostics.contains { $0.contains("the player (vlc) closed") }, "\(quitter.diagnostics)")
        #expect(!quitter.diagnostics.contains { $0.contains("starts again") }, "\(quitter.diagnostics)")
        #expect(VlcObserver.pids(naming: rc).isEmpty)
        // Run as root with no --vlc-path, it is said plainly.
        if isRoot {
            let root = try AgentProcess(executable: coplay, name: "erin", arguments: common + ["--player", "vlc"])
            #expect(root.waitForExit(timeout: .seconds(5)) == 1)
            #expect(root.diagnostics.contains { $0.contains("VLC refuses to run as root") }, "\(root.diagnostics)")
        }
    }

    /// A folder of the test's own that VLC may read and write in as `nobody` (its remote-control
    /// socket is made there), and the `--vlc-path` that starts VLC as `nobody` when the tests run as
    /// root (VLC refuses root); none otherwise.
    static func folderForVLC(_ name: String) throws -> (URL, vlcPath: [String]) {
        let directory = URL(fileURLWithPath: "/tmp/coplay-vlc-\(name)-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o777)
        guard isRoot else { return (directory, []) }
        let wrapper = directory.appendingPathComponent("vlc-as-nobody").path
        try VlcObserver.writeLauncher(at: wrapper, asNobody: true)
        return (directory, ["--vlc-path", wrapper])
    }

    /// How many running VLCs have `text` in their command line.
    static func processes(naming text: String) -> Int { VlcObserver.pids(naming: text).count }
}

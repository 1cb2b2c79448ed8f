import CoplayHarness
import Foundation
import Testing

/// Each friend with a copy of their own: a film shared from alice's disk is known by its
/// content, and bob's mpv plays bob's own copy of it, under another name in another folder
/// (`--media`), in sync with alice's; carol, with no copy at all, says so in words and stands
/// aside as `cannotPlay:noCopy` while the others play on; erin's copy is the file her own mpv
/// has open when her agent attaches to it.
@Suite(.onALane, .enabled(if: MpvClient.isInstalled, "mpv is not installed (.ci/run installs it)"))
struct MpvOwnCopyTests {
    @Test func aFriendsOwnCopyUnderAnotherName_playsInSync_andNoCopyIsSaid() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("own-copy-\(getpid())")
        let (homeA, homeB) = (directory.appendingPathComponent("a"), directory.appendingPathComponent("b/Films/2026"))
        for home in [homeA, homeB] {
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        let film = homeA.appendingPathComponent("film.mkv").path
        try MpvClient.makeTestMedia(at: film, seconds: 60)
        let copy = homeB.appendingPathComponent("Our Film (2026).mkv").path
        try FileManager.default.copyItem(atPath: film, toPath: copy)

        let mpv = MpvAgentTests()
        let common = [
            "--interface", "lo", "--group", "239.255.77.1:\(privatePort(29))", "--session", "own-copy", "--player",
            "mpv", "--mpv-option", "vo=null", "--mpv-option", "ao=null",
        ]
        let sockets = ["a", "b"].map { directory.appendingPathComponent("\($0).sock").path }
        let alice = try AgentProcess(
            executable: coplay, name: "alice", arguments: common + ["--mpv-socket", sockets[0]])
        var agents = [alice]
        defer {
            for agent in agents {
                agent.closeInput()
                _ = agent.waitForExit(timeout: .seconds(5))
            }
        }
        let mpvA = try MpvClient(path: sockets[0])
        #expect(alice.waitForEvent(timeout: .seconds(10)) { $0.name == "session" } != nil)
        alice.send("share \(film)")  // its length read by ffprobe: the share carries it
        #expect(mpv.waitUntil(.seconds(10)) { mpvA.property("path") as? String == film }, "alice's mpv loaded it")
        let shared = try #require(alice.waitForEvent(timeout: .seconds(5)) { $0.name == "item-changed" })
        let item = try #require(shared["item"] as? String)
        let size = try fileSize(film)
        #expect(item.hasPrefix("v1-\(size)-") && item.count == "v1-\(size)-".count + 64, "\(item)")

        // alice's file moves away (her mpv holds it open): no other agent can find it by its path.
        try FileManager.default.moveItem(atPath: film, toPath: film + ".moved")
        let bob = try AgentProcess(
            executable: coplay, name: "bob",
            arguments: common + ["--mpv-socket", sockets[1], "--media", directory.appendingPathComponent("b").path])
        agents.append(bob)
        let homeC = directory.appendingPathComponent("c")
        try FileManager.default.createDirectory(at: homeC, withIntermediateDirectories: true)
        let carol = try AgentProcess(
            executable: coplay, name: "carol", arguments: Array(common.prefix(6)) + ["--media", homeC.path])
        agents.append(carol)
        let mpvB = try MpvClient(path: sockets[1])
        #expect(mpv.waitUntil(.seconds(10)) { mpvB.property("path") as? String == copy }, "bob's mpv plays his copy")
        #expect(
            bob.waitForDiagnostic(timeout: .seconds(2)) {
                $0.contains("playing your own copy of the group's item: \(copy)")
            })

        let said = carol.waitForEvent(timeout: .seconds(10)) { $0.name == "player-error" }
        let words = said?["message"] as? String ?? said?.line ?? ""
        #expect(
            words.contains("no copy of \"film.mkv\"") && words.contains("1:00"), "\(said?.line ?? "no player-error")")
        #expect(
            mpv.waitUntil(.seconds(5)) {
                (carol.status()?["suspensions"] as? [String])?.contains("cannotPlay:noCopy") == true
            }, "carol stands aside: \(carol.status()?.line ?? "-")")

        // Alice hears that carol stands aside before she presses play: a start waits for everyone
        // it does not know to be aside (on a busy machine, carol's word could come after the play).
        #expect(
            mpv.waitUntil(.seconds(5)) {
                alice.peers()?.first { $0["name"] as? String == "carol" }?["suspensions"] as? [String] == [
                    "cannotPlay:noCopy"
                ]
            }, "alice hears carol stand aside")
        // And that bob, playing his own copy, is ready with a synced clock: on a busy machine (CI
        // runs the fast tier two tests a core) his word came after the play, which then waited for
        // him past this test's patience.
        #expect(
            mpv.waitUntil(.seconds(10)) {
                guard let peer = alice.peers()?.first(where: { $0["name"] as? String == "bob" }) else { return false }
                return peer["ready"] as? Bool == true && peer["clockSynced"] as? Bool == true
            }, "alice hears bob ready")
        alice.send("play")
        #expect(mpv.waitUntil(.seconds(10)) { mpvB.property("pause") as? Bool == false }, "bob plays on")
        #expect(mpv.waitUntil(.seconds(2)) { mpvA.property("pause") as? Bool == false }, "alice plays on")
        usleep(3_000_000)
        var offsets: [Double] = []
        for _ in 0..<20 {
            if let offset = mpvA.audioOffset(of: mpvB)?.offset { offsets.append(abs(offset) * 1000) }
            usleep(100_000)
        }
        offsets.sort()
        let median = offsets.isEmpty ? Double.nan : offsets[offsets.count / 2]
        print("bob's own copy against alice's film: |offset| median \(median) ms, max \(offsets.last ?? .nan) ms")
        #expect(offsets.count >= 10 && median < 20, "alice − bob: \(offsets) ms")

        // carol puts a copy in her --media folder: found within `lookAgainEvery` (10 s), and she
        // plays it where the group is, no longer standing aside.
        let carolsCopy = homeC.appendingPathComponent("film.mkv").path
        try FileManager.default.copyItem(atPath: copy, toPath: carolsCopy)
        #expect(
            mpv.waitUntil(.seconds(15)) { plays(carol, item) }, "carol plays her copy: \(carol.status()?.line ?? "-")")
        #expect(
            carol.waitForDiagnostic(timeout: .seconds(2)) {
                $0.contains("found your own copy of the group's item: \(carolsCopy)")
            }, "carol is told: \(carol.diagnostics.suffix(4))")

        // dave has another encode of the film (other bytes, the same name and length): offered
        // in words, played once he accepts, and listed as another encode by the others.
        let homeD = directory.appendingPathComponent("d/Movies")
        try FileManager.default.createDirectory(at: homeD, withIntermediateDirectories: true)
        let encode = homeD.appendingPathComponent("Film.mkv").path
        try remux(film + ".moved", to: encode)
        let dave = try AgentProcess(
            executable: coplay, name: "dave", arguments: Array(common.prefix(6)) + ["--media", homeD.path])
        agents.append(dave)
        let offer = dave.waitForEvent(timeout: .seconds(10)) { $0.name == "player-error" }
        let offered = offer?["message"] as? String ?? offer?.line ?? ""
        #expect(
            offered.contains("another encode of it is here: \(encode)") && offered.contains("type `accept`"),
            "\(offered)")
        dave.send("accept")
        #expect(
            mpv.waitUntil(.seconds(5)) { plays(dave, item) }, "dave plays his encode: \(dave.status()?.line ?? "-")")
        #expect(
            mpv.waitUntil(.seconds(5)) {
                alice.peers()?.contains { $0["name"] as? String == "dave" && $0["copy"] as? String == "anotherEncode" }
                    == true
            }, "alice lists dave's copy as another encode")
        #expect(
            alice.peers()?.first { $0["name"] as? String == "dave" }?["suspensions"] as? [String] == [],
            "another encode is not a suspension: dave is waited for as anyone")

        // erin opened her copy in her own mpv before her agent attached to it (`--mpv-attach`),
        // in a folder no `--media` names: the file her player has open is her copy.
        let homeE = directory.appendingPathComponent("e/Downloads")
        try FileManager.default.createDirectory(at: homeE, withIntermediateDirectories: true)
        let erinsCopy = homeE.appendingPathComponent("film (1).mkv").path
        try FileManager.default.copyItem(atPath: copy, toPath: erinsCopy)
        let erinsSocket = directory.appendingPathComponent("e.sock").path
        let erinsMpv = Process()
        erinsMpv.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        erinsMpv.arguments = [
            "mpv", "--no-config", "--idle=yes", "--pause", "--vo=null", "--ao=null", "--no-terminal",
            "--input-ipc-server=\(erinsSocket)", erinsCopy,
        ]
        erinsMpv.standardOutput = FileHandle.nullDevice
        erinsMpv.standardError = FileHandle.nullDevice
        try erinsMpv.run()
        // (SIGKILL: a child of the test's thread inherits its blocked signals, SIGTERM among them.)
        defer { kill(erinsMpv.processIdentifier, SIGKILL) }
        let mpvE = try MpvClient(path: erinsSocket)
        #expect(mpv.waitUntil(.seconds(10)) { mpvE.property("path") as? String == erinsCopy }, "erin's mpv has it open")
        let erin = try AgentProcess(
            executable: coplay, name: "erin",
            arguments: Array(common.prefix(6)) + ["--player", "mpv", "--mpv-attach", "--mpv-socket", erinsSocket])
        agents.append(erin)
        #expect(
            mpv.waitUntil(.seconds(10)) { plays(erin, item) && mpvE.property("pause") as? Bool == false },
            "erin plays the copy her mpv has open: \(erin.status()?.line ?? "-")")
        #expect(mpvE.property("path") as? String == erinsCopy)
        #expect(
            erin.waitForDiagnostic(timeout: .seconds(2)) {
                // (before the group's item, or as mpv's word of it comes after: "found")
                $0.contains("own copy of the group's item: \(erinsCopy)")
            }, "erin is told: \(erin.diagnostics.suffix(4))")
        try? FileManager.default.moveItem(atPath: film + ".moved", toPath: film)
    }

    /// The agent has the item loaded and no longer stands aside for want of a copy.
    private func plays(_ agent: AgentProcess, _ item: String) -> Bool {
        guard let status = agent.status() else { return false }
        return status["item"] as? String == item
            && !((status["suspensions"] as? [String])?.contains("cannotPlay:noCopy") ?? true)
    }

    /// The same film in other bytes: its streams copied into a new container with another title.
    private func remux(_ source: String, to path: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffmpeg", "-y", "-loglevel", "error", "-i", source, "-map", "0", "-c", "copy", "-metadata",
            "title=another encode", path,
        ]
        try process.run()
        for _ in 0..<1000 where process.isRunning { usleep(10_000) }  // (waitUntilExit can hang on a lane)
        #expect(!process.isRunning && process.terminationStatus == 0, "ffmpeg remuxed the film")
    }

    private func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
    }
}

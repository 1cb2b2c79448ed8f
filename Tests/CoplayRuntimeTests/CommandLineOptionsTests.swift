import CoplayCore
import CoplayRuntime
import Foundation
import Testing

@Suite struct CommandLineOptionsTests {
    func configuration(_ arguments: [String]) throws -> AgentConfiguration {
        guard case .runAgent(let configuration) = try CommandLineOptions.parse(arguments, defaultName: "host").get()
        else {
            throw UsageError(message: "not an agent invocation")
        }
        return configuration
    }

    func error(_ arguments: [String]) -> String? {
        if case .failure(let error) = CommandLineOptions.parse(arguments, defaultName: "host") { return error.message }
        return nil
    }

    @Test func noArguments_runsAnAgentWithTheDocumentedDefaults() throws {
        let configuration = try configuration([])
        #expect(configuration.name == "host")
        #expect(configuration.sessionName == "default")
        #expect(configuration.interface == nil)
        #expect(configuration.group == Endpoint(address: 0xEFFF_4D01, port: 47_700))
        #expect(!configuration.json && configuration.clockSkewNanos == 0 && configuration.peerID == nil)
    }

    @Test func everyFlag_isParsed() throws {
        let configuration = try configuration([
            "--name", "alice", "--session", "movie night", "--interface", "lo", "--group", "239.1.2.3:5000", "--json",
            "--clock-skew-ms", "-500", "--id", "abc123",
        ])
        #expect(
            configuration.name == "alice" && configuration.sessionName == "movie night"
                && configuration.interface == "lo")
        #expect(configuration.group == Endpoint(address: 0xEF01_0203, port: 5000))
        #expect(
            configuration.json && configuration.clockSkewNanos == -500_000_000
                && configuration.peerID == PeerID(0xABC123))
    }

    @Test func helpAndVersion() throws {
        guard case .help = try CommandLineOptions.parse(["--help"]).get(),
            case .version = try CommandLineOptions.parse(["--version"]).get()
        else {
            Issue.record("--help or --version not recognised")
            return
        }
        #expect(CommandLineOptions.usage.contains("--clock-skew-ms") && CommandLineOptions.usage.contains("quit"))
    }

    @Test func badCommandLines_sayWhatIsWrong() {
        #expect(error(["--bogus"]) == "unknown option '--bogus'")
        #expect(error(["stray"]) == "unexpected argument 'stray'")
        #expect(error(["--name"]) == "--name needs a value")
        #expect(error(["--name", ""])?.contains("1 to 64 bytes") == true)
        #expect(error(["--name", String(repeating: "n", count: 65)])?.contains("not 65") == true)
        #expect(error(["--name", "a\u{7}b"])?.contains("control characters") == true)
        #expect(error(["--group", "10.0.0.1:5000"])?.contains("not a multicast address") == true)
        #expect(error(["--group", "239.1.1.1:0"])?.contains("1 to 65535") == true)
        #expect(error(["--group", "nonsense"])?.contains("ADDRESS:PORT") == true)
        #expect(error(["--clock-skew-ms", "1.5"])?.contains("whole milliseconds") == true)
        #expect(error(["--clock-skew-ms", "99999999"])?.contains("whole milliseconds") == true)
        #expect(error(["--id", "xyz"])?.contains("hexadecimal") == true)
        #expect(
            error(["--player", "totem"])
                == "--player takes simulated, mpv, vlc, kodi[:HOST[:PORT]] or socket:PATH, not 'totem'")
        #expect(error(["--player", "kodi:tv:99999"])?.contains("kodi:HOST:PORT") == true)
        #expect(error(["--player", "kodi:fe80::1"])?.contains("IPv6 address in") == true)
        #expect(error(["--vlc-option", "fullscreen"]) == "--vlc-option and --vlc-path need --player vlc")
        #expect(
            error(["--player", "vlc", "--vlc-option", "lua-intf=x"])
                == "--vlc-option lua-intf is coplay's own: its interface script needs it")
        #expect(error(["--player", "socket:"])?.contains("1 to 107 bytes") == true)
        #expect(error(["--mpv-option", "vo=null"])?.contains("need --player mpv") == true)
        #expect(error(["--player", "mpv", "--mpv-option", "novalue"])?.contains("NAME=VALUE") == true)
        #expect(error(["--player", "mpv", "--mpv-option", "--vo=null"])?.contains("NAME=VALUE") == true)
        #expect(error(["--player", "mpv", "--mpv-option", "input-ipc-server=/x"])?.contains("--mpv-socket") == true)
        #expect(error(["--player", "mpv", "--mpv-attach"])?.contains("needs --mpv-socket") == true)
        #expect(
            error(["--player", "mpv", "--mpv-socket", String(repeating: "s", count: 108)])?.contains("107") == true)
        #expect(error(["--key-file", "/nonexistent/coplay.key"])?.contains("cannot read the key file") == true)
        #expect(error(["--pause-snaps", "maybe"]) == "--pause-snaps takes on or off, not 'maybe'")
    }

    /// `--media DIR`, repeatable: folders only, each said wrong in words.
    @Test func mediaFolders_areFoldersThatExist() throws {
        let temporary = FileManager.default.temporaryDirectory.path
        #expect(try configuration(["--media", temporary, "--media", "/"]).mediaFolders == [temporary, "/"])
        #expect(error(["--media", "/nonexistent/films"]) == "--media /nonexistent/films: no such folder")
        #expect(error(["--media", "/etc/hostname"])?.contains("is not a folder") == true)
        #expect(error(["--media"]) == "--media needs a value")
        let many = Array(repeating: ["--media", temporary], count: AgentConfiguration.mediaFoldersMax + 1).flatMap {
            $0
        }
        #expect(error(many)?.contains("at most \(AgentConfiguration.mediaFoldersMax) folders") == true)
    }

    /// `--audio-latency MS`: milliseconds, 0 to a second, kept in seconds.
    @Test func audioLatency_isMillisecondsUpToASecond() throws {
        #expect(try configuration([]).audioLatency == 0)
        #expect(try configuration(["--audio-latency", "200"]).audioLatency == 0.2)
        #expect(try configuration(["--audio-latency", "37.5"]).audioLatency == 0.0375)
        #expect(try configuration(["--audio-latency", "1000"]).audioLatency == 1)
        for wrong in ["-1", "1001", "nan", "inf", "200ms", ""] {
            #expect(
                error(["--audio-latency", wrong])
                    == "--audio-latency takes milliseconds from 0 to 1000 (e.g. 200), not '\(wrong)'")
        }
        #expect(error(["--audio-latency"]) == "--audio-latency needs a value")
    }

    @Test func playerOptions_chooseMpvWithItsSocketAndOptions() throws {
        guard
            case .runAgent(let configuration) = try CommandLineOptions.parse([
                "--mpv-socket", "/run/mpv.sock", "--mpv-option", "vo=null", "--player", "mpv", "--mpv-option",
                "script-opts=a=b",
            ]).get(), case .mpv(let options) = configuration.player
        else {
            Issue.record("--player mpv not recognised")
            return
        }
        #expect(options.socketPath == "/run/mpv.sock")
        #expect(options.options == ["vo=null", "script-opts=a=b"])
        #expect(!options.attach)
        guard case .runAgent(let delegating) = try CommandLineOptions.parse(["--player", "socket:/run/p.sock"]).get()
        else { return }
        #expect(delegating.player == .socket(path: "/run/p.sock"))
        guard case .runAgent(let television) = try CommandLineOptions.parse(["--player", "kodi:tv.lan:8080"]).get()
        else { return }
        var kodiOptions = KodiOptions()
        (kodiOptions.host, kodiOptions.port) = ("tv.lan", 8080)
        #expect(television.player == .kodi(kodiOptions))
        guard case .runAgent(let simulated) = try CommandLineOptions.parse([]).get() else { return }
        #expect(simulated.player == .simulated)
    }

    /// A file that is not a key file says so: a binary one, a large one (once "Inappropriate ioctl
    /// for device", the error of an unrelated system call), a directory, a missing one.
    @Test func aFileThatIsNoKeyFile_saysWhatItIs() throws {
        let path = "/tmp/coplay-test-\(getpid())-big.key"
        _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 0xC3, count: 200_000))
        defer { try? FileManager.default.removeItem(atPath: path) }
        func refusal(_ file: String) -> String {
            guard case .failure(let error) = KeyFile.load(file) else { return "loaded" }
            return error.message
        }
        #expect(refusal(path).contains("larger than a key file"), "\(refusal(path))")
        #expect(!refusal(path).contains("ioctl"))
        let small = "/tmp/coplay-test-\(getpid())-bin.key"
        _ = FileManager.default.createFile(atPath: small, contents: Data((0..<64).map { UInt8($0 * 3 % 256) }))
        defer { try? FileManager.default.removeItem(atPath: small) }
        #expect(refusal(small).contains("is not a key"), "\(refusal(small))")
        #expect(refusal("/tmp").contains("Is a directory"))
        #expect(refusal("/no/such/coplay.key").contains("No such file"))
    }

    @Test func keygen_writesAKeyFileThatLoads() throws {
        guard case .keygen = try CommandLineOptions.parse(["keygen"]).get() else {
            Issue.record("keygen not recognised")
            return
        }
        let text = KeyFile.generate()
        let keys = try GroupKeys.parse(keyFile: text).get()
        #expect(keys.count == 1 && keys[0].count == 32)
        #expect(try GroupKeys.parse(keyFile: KeyFile.generate()).get() != keys, "fresh randomness each time")
        let path = "/tmp/coplay-test-\(getpid()).key"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try configuration(["--key-file", path]).keys == keys)
        guard
            case .dump(_, _, let dumpKeys) = try CommandLineOptions.parse(["dump", "x.pcap", "--key-file", path]).get()
        else {
            Issue.record("dump --key-file not recognised")
            return
        }
        #expect(dumpKeys == keys)
        // A viewer of a large party: only through the relay.
        let viewer = try configuration(["--audience", "--relay", "nats://127.0.0.1:4222", "--key-file", path])
        #expect(viewer.settings.audience.role == .viewer)
        // By default a seat on the stage if one is free; --stage names a stage member.
        #expect(
            try configuration(["--relay", "nats://127.0.0.1:4222", "--key-file", path]).settings.audience.role
                == .firstCome)
        #expect(
            try configuration(["--stage", "--relay", "nats://127.0.0.1:4222", "--key-file", path]).settings.audience
                .role == .stage)
        #expect(error(["--audience", "--key-file", path])?.contains("--audience needs --relay") == true)
        #expect(error(["--stage", "--key-file", path])?.contains("--stage needs --relay") == true)
        #expect(
            error(["--stage", "--audience", "--relay", "nats://127.0.0.1:4222", "--key-file", path])?.contains(
                "exclude each other") == true)
    }

    @Test func groupWithoutAPort_usesTheDocumentedDefaultPort() throws {
        #expect(try configuration(["--group", "239.1.2.3"]).group == Endpoint(address: 0xEF01_0203, port: 47_700))
        #expect(CommandLineOptions.usage.contains("an address alone uses port 47700"))
    }

    @Test func pauseSnaps_onOrOff() throws {
        #expect(try configuration([]).settings.pauseSnapsToOriginatorTime)
        #expect(try !configuration(["--pause-snaps", "off"]).settings.pauseSnapsToOriginatorTime)
        #expect(try configuration(["--pause-snaps", "on"]).settings.pauseSnapsToOriginatorTime)
    }

    @Test func operationsFlags_portPeerAndControl() throws {
        let configuration = try configuration([
            "--port", "47800", "--peer", "10.77.0.1:47800", "--peer", "localhost:5000", "--control", "/run/c.sock",
        ])
        #expect(configuration.port == 47_800)
        #expect(
            configuration.peers == [
                Endpoint(address: 0x0A4D_0001, port: 47_800), Endpoint(address: 0x7F00_0001, port: 5_000),
            ])
        #expect(configuration.controlPath == "/run/c.sock")
        #expect(error(["--port", "0"])?.contains("1 to 65535") == true)
        #expect(error(["--peer", "10.77.0.1"])?.contains("HOST:PORT") == true)
        #expect(error(["--peer", "239.255.77.1:47700"])?.contains("not a unicast address") == true)
        #expect(
            error(Array(repeating: ["--peer", "10.0.0.1:1"], count: 17).flatMap { $0 })?.contains("at most 16") == true)
    }

    @Test func ipv6_groupAndPeersInBrackets_ofOneFamily() throws {
        let configuration = try configuration(["--group", "[ff12::7c:1]:47701", "--peer", "[fd77::1]:47800"])
        #expect(configuration.group.description == "[ff12::7c:1]:47701")
        #expect(configuration.peers.map(\.description) == ["[fd77::1]:47800"])
        #expect(try self.configuration(["--group", "ff12::7c:1"]).group.port == 47_700, "a bare IPv6 address")
        #expect(error(["--group", "[fd77::1]:47700"])?.contains("not a multicast address") == true)
        #expect(error(["--group", "[ff12::7c:1"]) != nil)
        #expect(error(["--peer", "[fd77::1]:47800"])?.contains("not of one address family") == true)
        #expect(error(["--group", "[ff12::1]", "--peer", "10.0.0.1:1"])?.contains("not of one address family") == true)
    }

    @Test func ctl_takesAPathAndACommandOrAMode() throws {
        func request(_ arguments: [String]) throws -> ControlRequest? {
            guard case .control(let path, let request) = try CommandLineOptions.parse(["ctl"] + arguments).get()
            else { return nil }
            #expect(path == "/run/c.sock")
            return request
        }
        #expect(try request(["/run/c.sock", "seek", "30"]) == .command("seek 30"))
        #expect(try request(["/run/c.sock", "--follow"]) == .follow)
        #expect(try request(["/run/c.sock", "--watch"]) == .watch(times: nil))
        #expect(try request(["/run/c.sock", "--watch", "--times", "3"]) == .watch(times: 3))
        #expect(error(["ctl", "/run/c.sock"])?.contains("ctl takes PATH") == true)
        #expect(error(["ctl", "/run/c.sock", "--watch", "--times", "0"])?.contains("1 to 1000000") == true)
        #expect(error(["ctl", "/run/c.sock", "--bogus"])?.contains("unknown ctl option") == true)
    }

    @Test func watchTable_drawsWhateverTheRepliesHold_evenExtremeValues() throws {
        let status = try JSONParser.parse(
            #"{"event":"status","name":"wall-1","peer":"0123456789abcdef","session":"s","item":"film","rate":1,"position":1e300,"#
                + #""waiting":false,"suspensions":[],"player":{"sampleErrorMs":-0.25,"rateNudgePercent":0.1},"#
                + #""counters":{"datagramsReceived":9223372036854775807,"drops":{"badTag":2}}}"#)
        let peers = try JSONParser.parse(
            #"[{"name":"wall-2","id":"fedcba9876543210","item":"film","state":"alive","waiting":true,"ready":true,"#
                + #""suspensions":[],"offsetNanos":-1500000,"lastSeenMillis":120.4},{"name":"x","offsetNanos":"nan"}]"#)
        let table = WatchTable.render(status: status, peers: peers, atUnixNanos: 3_723_000_000_000)
        #expect(table.contains("session s, 3 participants, 01:02:03 UTC"), "\(table)")
        #expect(table.contains("wall-1 (this)") && table.contains("-0.25") && table.contains("1e+300"))
        #expect(table.contains("wall-2") && table.contains("ready") && table.contains("-1.500"))
        #expect(table.contains("badTag 2") && table.contains("received 9223372036854775807"))
    }

    /// A custom `--wait-for` reason is taken, and said to be custom (a typo of a built-in one
    /// waited for nobody without a word); built-in ones pass silently.
    @Test func aCustomWaitForReason_isTakenAndSaid() throws {
        guard
            case .success(.runAgent(let custom)) = CommandLineOptions.parse(["--wait-for", "nonsense,stallRecovery"]),
            case .success(.runAgent(let builtIn)) = CommandLineOptions.parse(["--wait-for", "stallRecovery"])
        else {
            Issue.record("--wait-for refused")
            return
        }
        #expect(custom.settings.suspensionReasonsThatTriggerWaiting == ["nonsense", "stallRecovery"])
        #expect(custom.notes.count == 1 && custom.notes[0].contains("--wait-for nonsense: not a built-in reason"))
        #expect(builtIn.notes.isEmpty)
    }
}

import CoplayCore
import Glibc

/// What the command line asks for.
public enum Invocation: Sendable {
    case runAgent(AgentConfiguration)
    /// `coplay demo`: a scripted session of several agents on loopback.
    case demo
    /// `coplay dump FILE|- [--json] [--key-file PATH]`: decode a capture (and check its tags).
    case dump(path: String, json: Bool, keys: [[UInt8]]?)
    /// `coplay keygen`: print a new random group key.
    case keygen
    /// `coplay ctl PATH COMMAND…|--follow|--watch`: talk to a running agent's control socket.
    case control(path: String, request: ControlRequest)
    /// `--help`, `coplay help [TOPIC]`, `coplay SUB --help`: the usage, or one subcommand's or
    /// console command's (exit 0).
    case help(topic: String?)
    case version
    /// `coplay web --listen ADDRESS:PORT [--root DIR] [--media PATH]…`: serve the browser page
    /// and media files.
    case web(host: String, port: UInt16, root: String, media: [String])
    /// `coplay party FILE|URL… [options]`: a watch party in one command.
    case party(PartyPlan)
    /// `coplay invite …`: print an invitation link and its QR code.
    case invite(Invitation, qr: Bool)
    /// `coplay hub …`: nats-server behind Caddy, for parties across homes.
    case hub(HubPlan)
}

/// A command line that cannot be run: printed with the usage, exit status 2.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

public enum CommandLineOptions {
    public static let usage = """
        coplay — keep media playback in sync across the machines of a LAN, with no server

        Usage:
          coplay party FILE|URL… [--listen ADDRESS] [--player mpv|none] [--no-qr]
                       [--relay WSURL] [--hub LINK] [--key-file PATH] [--web-port N]
                       [--root DIR] [options]
                                            host a watch party: serves the films and the page,
                                            starts the relay, prints a link and QR code for
                                            every phone in the room, and with --hub one for
                                            anywhere (coplay help party)
          coplay hub (--tls internal|--domain NAME|--cert F --key F) [--port N] [--listen A]
                     [--name HOST] [--state DIR] [--acme-ca URL [--acme-ca-root F]]
                                            a hub for parties across homes: nats-server behind
                                            Caddy, HTTPS and wss:// only (coplay help hub)
          coplay demo                       several agents on loopback run a scripted session
          coplay dump FILE|- [--json] [--key-file PATH]
                                            decode the coplay datagrams of a pcap/pcapng capture
                                            (with a key file: check each tag, mark forgeries)
          coplay keygen                     print a new random group key (save it as a key file)
          coplay web --listen ADDRESS:PORT [--root DIR] [--media PATH]…
                                            serve the browser page, for devices that join from
                                            a browser, and films from disk
          coplay invite --page URL --relay ws://[TOKEN@]HOST:PORT… [--session NAME]
                        --key-file PATH [--audience] [--no-qr]
                                            print an invitation link for a browser, and its QR
                                            code (--audience: to a large party's audience)
          coplay join LINK [options]        run an agent in the group of an invitation link
          coplay ctl PATH COMMAND…          send one command to the agent whose --control socket
                                            is PATH and print its reply (JSON lines); exit 1 if
                                            the command was refused
          coplay ctl PATH --follow          print every event of that agent as it happens
          coplay ctl PATH --watch [--times N]
                                            redraw a table of the group once a second (N times)
          coplay [options]                  run one agent; type commands on standard input
          coplay help [SUBCOMMAND|COMMAND]  one subcommand's usage, or one stdin command's
          coplay --help | --version
          (coplay-bench measures agents on loopback: coplay-bench --help)

        Options:
          --name NAME               participant name (default: this host's name)
          --session NAME            session name: agents of other sessions on the same group
                                    ignore each other (default: default)
          --interface NAME|ADDRESS  interface to use, e.g. lo or 192.168.1.20 (default: the
                                    kernel's choice, the interface of the default route)
          --group ADDRESS[:PORT]    multicast group (default: \(WireFormat.defaultGroupAddress):\(WireFormat.defaultPort));
                                    an address alone uses port \(WireFormat.defaultPort); IPv6 in
                                    brackets, e.g. [ff12::7c:1]:47700 (needs --interface)
          --port N                  the unicast port this agent listens on (default: any free
                                    one), so that other agents can name it with --peer
          --peer HOST:PORT          also reach the agent listening on PORT at HOST by unicast
                                    (repeatable, up to \(peersGivenMax)): for networks that do not
                                    carry multicast (VPNs, Wi-Fi that filters it). The peers it
                                    knows are passed on, so one --peer per agent forms the group
          --relay nats://[TOKEN@|USER:PASS@]HOST[:PORT]
                                    also carry the group's datagrams through a NATS cluster
                                    (nats-server), so that agents in other homes, on no
                                    shared network, form one group with this one. Repeatable
                                    (up to \(relaysGivenMax)): the servers of one cluster, tried in turn,
                                    with the ones the cluster announces. Needs --key-file: on
                                    the relay every datagram is sealed (ChaCha20-Poly1305)
                                    and its subject derived from the key and the session.
                                    ws://[TOKEN@]HOST:PORT: through the server's websocket
                                    listener, as the browsers reach it
          --audience                join a large party as a viewer (needs --relay): follow the
                                    stage through the relay at a viewer's cost, and never take
                                    a seat on it; a pause or seek typed here still moves all.
                                    Without --audience or --stage, an agent on a relay takes one
                                    of the stage's 32 seats if one is free, else it watches
          --stage                   on a relay, join the stage whatever its size (the host)
          --json                    one JSON object per output line, with an "event" field
          --control PATH            also take commands on the Unix socket PATH (coplay ctl);
                                    end of standard input then no longer ends the agent: it
                                    runs until quit, SIGTERM or SIGINT (as a service)
          --clock-skew-ms N         testing: behave as if this machine's clock were N ms off
                                    (-3600000..3600000); reported true times stay true
          --id HEX                  fixed participant id (1-16 hex digits) to keep across
                                    restarts; a restarted agent is still a new incarnation
          --wait-for R1,R2          this agent's waiting policy: hold coordinated starts while
                                    a participant is suspended for one of these reasons,
                                    whoever presses play (default: none)
          --wait-limit N            ...only while at most N participants are on the item
          --key-file PATH           the group key (coplay keygen writes one): sign every datagram
                                    and accept only authentic, fresh ones; SIGHUP rereads the
                                    file (a second, older key in it is accepted, never used)
          --pause-snaps on|off      on: a pause puts everyone at the originator's position
                                    (pauseSnapsToMediaTimeOfOriginator, the default); off:
                                    each player stops where it is
          --player simulated|mpv|vlc|kodi[:HOST[:PORT]]|socket:PATH
                                    the local player: simulated (the default: a model, for tests
                                    and demos); mpv, driven over its JSON IPC (pausing, seeking
                                    or changing speed in mpv is a group command); VLC 3, through
                                    coplay's interface script inside it (its keys and menus are
                                    group commands too); Kodi 19-21 over its JSON-RPC on TCP
                                    (127.0.0.1:9090 unless a host is named: the box under the
                                    television from any machine; Kodi's remote moves the group;
                                    Kodi asks no password, so name only a host of your own LAN);
                                    or any player that connects to the Unix socket PATH
                                    (PLAYERS.md)
          --mpv-socket PATH         an IPC socket for mpv to listen on too, so other tools can
                                    talk to the same mpv (mpv ends with the agent either way)
          --mpv-option NAME=VALUE   passed to the mpv coplay starts as --NAME=VALUE; repeatable
                                    (vo=null and ao=null for a headless mpv, fullscreen=yes …)
          --mpv-attach              drive an mpv already started with --input-ipc-server=PATH
                                    (give the PATH with --mpv-socket) instead of starting one
          --vlc-option NAME[=VALUE] passed to the VLC coplay starts as --NAME[=VALUE];
                                    repeatable (intf=qt for VLC's own window, fullscreen …)
          --vlc-path PROGRAM        start PROGRAM instead of vlc from PATH (VLC refuses to run
                                    as root: a wrapper that starts it as another user)
          --hub-ca FILE             trust this CA (PEM) for a hub's certificate besides the
                                    system's: a hub run with --tls internal (coplay join of a
                                    hub's link, coplay party --hub)
          --audio-latency MS        how late this machine's sound comes out (a Bluetooth
                                    headset: 150-300, 0 to 1000; default 0): the player runs
                                    that far ahead, so its sound is heard with everyone's
          --media DIR               a folder with your own copies of films; repeatable. An
                                    item shared from a file is known by its content, so your
                                    copy is played whatever its name or path (indexed at the
                                    first such item, by size first; subfolders too)

        Commands on standard input, one per line:
        \(ConsoleCommand.usages.map { CommandLineOptions.usageLine($0) }.joined(separator: "\n"))
          End of input (without --control), SIGINT and SIGTERM leave the session gracefully
          and exit 0. The same commands work through the control socket (coplay ctl PATH …).

        Exit status: 0 after a graceful exit, 1 if the network could not be set up, 2 on a bad
        command line.
        """

    /// Each subcommand's usage, for `coplay help SUB` and `coplay SUB --help`.
    public static let subcommandUsages: [(name: String, text: String)] =
        webUsages + [("hub", HubPlan.usage)] + [
            (
                "dump",
                """
                coplay dump FILE|- [--json] [--key-file PATH]
                  Decode the coplay datagrams of a pcap or pcapng capture (- reads standard input,
                  e.g. from tcpdump -U -w -): one line per datagram, or one JSON object with --json.
                  With --key-file: check each tag, open relay frames, show each datagram's age.
                  What is not coplay is skipped and counted; a summary goes to standard error.
                  Exit status: 0, or 1 if the file cannot be read.
                """
            ),
            (
                "ctl",
                """
                coplay ctl PATH COMMAND…          send one command to the agent whose --control
                                                  socket is PATH; print its reply (JSON lines)
                coplay ctl PATH --follow          print every event of that agent as it happens
                coplay ctl PATH --watch [--times N]
                                                  redraw a table of the group once a second
                  Exit status: 0, or 1 if the agent refused the command or cannot be reached.
                """
            ),
            (
                "keygen",
                """
                coplay keygen
                  Print a new random group key (64 hex digits) on standard output: save it as a
                  key file (chmod 600) and give it to every agent with --key-file.
                """
            ),
            (
                "demo",
                """
                coplay demo
                  Run four agents on loopback through a scripted session (share, play, seek, pause,
                  a late joiner, a queue) and print what each did and how far apart they were.
                """
            ),
        ]

    /// What `coplay help TOPIC` prints: a subcommand's usage, or a console command's (nil: the
    /// whole usage).
    public static func help(_ topic: String?) -> String {
        guard let topic else { return usage }
        if let sub = subcommandUsages.first(where: { $0.name == topic }) { return sub.text }
        let command = ConsoleCommand.usages.first { $0.name == topic }
        return command.map { EventFormatter.helpText([$0]).joined(separator: "\n") } ?? usage
    }

    /// One command of the usage text: the synopsis, then the summary in a column (on the next
    /// line when the synopsis is longer than the column).
    static func usageLine(_ usage: ConsoleCommand.Usage) -> String {
        let column = 26
        guard usage.synopsis.count < column - 2 else {
            return "  \(usage.synopsis)\n" + String(repeating: " ", count: column) + usage.summary
        }
        return "  " + usage.synopsis.padded(to: column - 2) + usage.summary
    }

    public static func parse(_ arguments: [String], defaultName: String = hostName()) -> Result<Invocation, UsageError>
    {
        var remaining = arguments[...]
        if remaining.first == "help" {
            guard remaining.count <= 2 else { return .failure(UsageError(message: "help takes at most one topic")) }
            guard let topic = remaining.dropFirst().first else { return .success(.help(topic: nil)) }
            let known =
                subcommandUsages.contains { $0.name == topic } || ConsoleCommand.usages.contains { $0.name == topic }
            guard known else {
                let subs = subcommandUsages.map(\.name).joined(separator: ", ")
                let message = "no help on '\(topic.prefix(40))': try \(subs), or a command (help)"
                return .failure(UsageError(message: message))
            }
            return .success(.help(topic: topic))
        }
        // `coplay SUB --help` (or -h, anywhere among its arguments): that subcommand's usage.
        if let sub = remaining.first, subcommandUsages.contains(where: { $0.name == sub }),
            remaining.contains(where: { $0 == "--help" || $0 == "-h" })
        {
            return .success(.help(topic: sub))
        }
        if remaining.first == "dump" {
            remaining.removeFirst()
            var json = false
            var keys: [[UInt8]]?
            var paths: [String] = []
            while let word = remaining.popFirst() {
                if word == "--json" {
                    json = true
                } else if word == "--key-file" {
                    guard let path = remaining.popFirst() else {
                        return .failure(UsageError(message: "--key-file needs a value"))
                    }
                    switch KeyFile.load(path) {
                    case .success(let loaded): keys = loaded
                    case .failure(let error): return .failure(error)
                    }
                } else {
                    paths.append(word)
                }
            }
            guard paths.count == 1, let path = paths.first, path == "-" || !path.hasPrefix("-") else {
                return .failure(
                    UsageError(
                        message: "dump takes one capture file (or - for standard input), --json and --key-file PATH"))
            }
            return .success(.dump(path: path, json: json, keys: keys))
        }
        if remaining.first == "keygen" {
            guard remaining.count == 1 else { return .failure(UsageError(message: "keygen takes no arguments")) }
            return .success(.keygen)
        }
        if remaining.first == "web" { return parseWeb(remaining.dropFirst()) }
        if remaining.first == "party" { return PartyPlan.parse(remaining.dropFirst()) }
        if remaining.first == "invite" { return parseInvite(remaining.dropFirst()) }
        if remaining.first == "join" { return parseJoin(remaining.dropFirst()) }
        if remaining.first == "hub" { return HubPlan.parse(remaining.dropFirst()) }
        if remaining.first == "ctl" {
            remaining.removeFirst()
            return parseControl(Array(remaining))
        }
        if remaining.first == "demo" {
            guard remaining.count == 1 else { return .failure(UsageError(message: "demo takes no arguments")) }
            return .success(.demo)
        }
        var configuration = AgentConfiguration(name: defaultName)
        while let argument = remaining.popFirst() {
            func value() -> Result<String, UsageError> {
                guard let next = remaining.popFirst() else {
                    return .failure(UsageError(message: "\(argument) needs a value"))
                }
                return .success(next)
            }
            do throws(UsageError) {
                switch argument {
                case "--help", "-h":
                    return .success(.help(topic: nil))
                case "--version":
                    return .success(.version)
                case "--json":
                    configuration.json = true
                case "--audience", "--stage":
                    let role: AudienceSettings.Role = argument == "--stage" ? .stage : .viewer
                    let given = configuration.settings.audience.role
                    guard given == .firstCome || given == role else {
                        throw UsageError(message: "--audience and --stage exclude each other: a viewer or the stage")
                    }
                    configuration.settings.audience.role = role
                case "--name":
                    configuration.name = try checkedName(
                        value().get(), flag: "--name", bytesMax: configuration.settings.nameBytesMax)
                case "--session":
                    configuration.sessionName = try checkedName(
                        value().get(), flag: "--session", bytesMax: configuration.settings.sessionNameBytesMax)
                case "--interface":
                    let text = try value().get()
                    guard !text.isEmpty else { throw UsageError(message: "--interface needs a name or an address") }
                    configuration.interface = text
                case "--group":
                    configuration.group = try parseGroup(value().get())
                case "--port":
                    let text = try value().get()
                    guard let port = UInt16(text), port > 0 else {
                        throw UsageError(message: "--port takes a UDP port from 1 to 65535, not '\(text)'")
                    }
                    configuration.port = port
                case "--peer":
                    guard configuration.peers.count < peersGivenMax else {
                        throw UsageError(message: "at most \(peersGivenMax) --peer (the others are learned from them)")
                    }
                    configuration.peers.append(try parsePeer(value().get()))
                case "--relay":
                    guard configuration.relays.count < relaysGivenMax else {
                        throw UsageError(
                            message: "at most \(relaysGivenMax) --relay (the cluster announces its other servers)")
                    }
                    configuration.relays.append(try parseRelay(value().get()))
                case "--clock-skew-ms":
                    let text = try value().get()
                    guard let millis = Int64(text), (-3_600_000...3_600_000).contains(millis) else {
                        throw UsageError(
                            message: "--clock-skew-ms takes whole milliseconds from -3600000 to 3600000, not '\(text)'")
                    }
                    configuration.clockSkewNanos = millis * 1_000_000
                case "--id":
                    let text = try value().get()
                    guard let id = PeerID(hex: text) else {
                        throw UsageError(message: "--id takes 1 to 16 hexadecimal digits, not '\(text)'")
                    }
                    configuration.peerID = id
                case "--wait-for":
                    let reasons = try value().get().split(separator: ",").map { String($0) }
                    guard !reasons.isEmpty,
                        reasons.allSatisfy({ !$0.isEmpty && $0.utf8.count <= Announcement.suspensionReasonBytesMax })
                    else {
                        throw UsageError(
                            message:
                                "--wait-for takes suspension reasons separated by commas (e.g. \(Suspension.builtInReasons[0]),playingInterstitial)"
                        )
                    }
                    configuration.settings.suspensionReasonsThatTriggerWaiting = Set(reasons)
                    // A custom reason is allowed (a group's own suspend reasons), but a typo of a
                    // built-in one would wait for nobody without a word: say which are custom.
                    let custom = reasons.filter { !Suspension.builtInReasons.contains($0) }
                    if !custom.isEmpty {
                        configuration.notes.append(
                            "--wait-for \(custom.joined(separator: ",")): not a built-in reason (\(Suspension.builtInReasons.joined(separator: ", "))); waiting only for participants suspended with that custom reason"
                        )
                    }
                case "--wait-limit":
                    let text = try value().get()
                    guard let limit = Int(text), limit >= 1 else {
                        throw UsageError(
                            message: "--wait-limit takes a number of participants (1 or more), not '\(text)'")
                    }
                    configuration.settings.participantLimitForWaiting = limit
                case "--pause-snaps":
                    let text = try value().get()
                    guard text == "on" || text == "off" else {
                        throw UsageError(message: "--pause-snaps takes on or off, not '\(text)'")
                    }
                    configuration.settings.pauseSnapsToOriginatorTime = text == "on"
                case "--key-file":
                    let path = try value().get()
                    configuration.keys = try KeyFile.load(path).get()
                    configuration.keyFile = path
                case "--player":
                    let text = try value().get()
                    switch text {
                    case "simulated": configuration.player = .simulated
                    case "mpv": configuration.player = .mpv(configuration.mpvOptions)
                    case "vlc": configuration.player = .vlc(configuration.vlcOptions)
                    case _ where text == "kodi" || text.hasPrefix("kodi:"):
                        guard let options = KodiOptions.parse(text) else {
                            throw UsageError(
                                message: "--player kodi takes kodi, kodi:HOST or kodi:HOST:PORT (an IPv6 address in"
                                    + " brackets), not '\(text)'")
                        }
                        configuration.player = .kodi(options)
                    case _ where text.hasPrefix("socket:"):
                        let path = String(text.dropFirst("socket:".count))
                        guard !path.isEmpty, path.utf8.count <= 107 else {
                            throw UsageError(message: "--player socket:PATH takes a socket path of 1 to 107 bytes")
                        }
                        configuration.player = .socket(path: path)
                    default:
                        throw UsageError(
                            message:
                                "--player takes simulated, mpv, vlc, kodi[:HOST[:PORT]] or socket:PATH, not '\(text)'")
                    }
                case "--mpv-socket":
                    let path = try value().get()
                    guard !path.isEmpty, path.utf8.count <= 107 else {
                        throw UsageError(message: "--mpv-socket takes a socket path of 1 to 107 bytes")
                    }
                    configuration.mpvOptions.socketPath = path
                case "--mpv-option":
                    let text = try value().get()
                    let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    guard parts.count == 2, !parts[0].isEmpty, !parts[0].hasPrefix("-"),
                        !parts[0].contains(where: { $0 == " " || $0 == "\n" })
                    else {
                        throw UsageError(message: "--mpv-option takes NAME=VALUE (e.g. vo=null), not '\(text)'")
                    }
                    guard parts[0] != "input-ipc-server", parts[0] != "input-ipc-client" else {
                        throw UsageError(message: "set mpv's IPC socket with --mpv-socket PATH, not --mpv-option")
                    }
                    configuration.mpvOptions.options.append(text)
                case "--vlc-option":
                    let text = try value().get()
                    let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    guard parts.count <= 2, !parts[0].isEmpty, !parts[0].hasPrefix("-"),
                        !text.contains(where: { $0.isNewline }), !parts[0].contains(" ")
                    else {
                        throw UsageError(
                            message:
                                "--vlc-option takes NAME=VALUE or NAME (e.g. vout=dummy, fullscreen), not '\(text)'")
                    }
                    guard !["lua-intf", "lua-config"].contains(String(parts[0])) else {
                        throw UsageError(
                            message: "--vlc-option \(parts[0]) is coplay's own: its interface script needs it")
                    }
                    configuration.vlcOptions.options.append(text)
                case "--vlc-path":
                    let path = try value().get()
                    guard !path.isEmpty, access(path, X_OK) == 0 else {
                        throw UsageError(message: "--vlc-path \(path): not a program this user may run")
                    }
                    configuration.vlcOptions.path = path
                case "--control":
                    let path = try value().get()
                    guard !path.isEmpty, path.utf8.count <= 107 else {
                        throw UsageError(message: "--control takes a socket path of 1 to 107 bytes")
                    }
                    configuration.controlPath = path
                case "--mpv-attach":
                    configuration.mpvOptions.attach = true
                case "--hub-ca":
                    let path = try value().get()
                    guard access(path, R_OK) == 0 else {
                        throw UsageError(message: "--hub-ca \(path): \(String(cString: strerror(errno)))")
                    }
                    configuration.hubCA = path
                case "--audio-latency":
                    let text = try value().get()
                    let limit = AgentConfiguration.audioLatencyMaxMilliseconds
                    guard let milliseconds = Double(text), milliseconds.isFinite, (0...limit).contains(milliseconds)
                    else {
                        throw UsageError(
                            message:
                                "--audio-latency takes milliseconds from 0 to \(Int(limit)) (e.g. 200), not '\(text)'")
                    }
                    configuration.audioLatency = milliseconds / 1000
                case "--media":
                    let path = try value().get()
                    var status = stat()
                    guard !path.isEmpty, stat(path, &status) == 0 else {
                        throw UsageError(message: "--media \(path): no such folder")
                    }
                    guard (status.st_mode & S_IFMT) == S_IFDIR else {
                        throw UsageError(
                            message:
                                "--media \(path) is not a folder: name the folder your copies are in (a file is shared with share PATH)"
                        )
                    }
                    guard configuration.mediaFolders.count < AgentConfiguration.mediaFoldersMax else {
                        throw UsageError(message: "--media: at most \(AgentConfiguration.mediaFoldersMax) folders")
                    }
                    configuration.mediaFolders.append(path)
                default:
                    throw UsageError(
                        message: argument.hasPrefix("-")
                            ? "unknown option '\(argument)'" : "unexpected argument '\(argument)'")
                }
            } catch {
                return .failure(error)
            }
        }
        if case .mpv = configuration.player {
            configuration.player = .mpv(configuration.mpvOptions)
        } else if configuration.mpvOptions != MpvOptions() {
            return .failure(UsageError(message: "--mpv-socket, --mpv-option and --mpv-attach need --player mpv"))
        }
        if case .vlc = configuration.player {
            configuration.player = .vlc(configuration.vlcOptions)
        } else if configuration.vlcOptions != VlcOptions() {
            return .failure(UsageError(message: "--vlc-option and --vlc-path need --player vlc"))
        }
        if let peer = configuration.peers.first(where: { $0.address.isIPv4 != configuration.group.address.isIPv4 }) {
            return .failure(
                UsageError(
                    message:
                        "--peer \(peer) and the group \(configuration.group) are not of one address family (an agent speaks IPv4 or IPv6, as its --group)"
                ))
        }
        if !configuration.relays.isEmpty, configuration.keys == nil {
            return .failure(
                UsageError(
                    message:
                        "--relay needs --key-file: across homes the group key seals every datagram on the relay and names the group's subjects (coplay keygen > group.key, then copy the file to every agent)"
                ))
        }
        if configuration.settings.audience.role != .firstCome, configuration.relays.isEmpty {
            let stage = configuration.settings.audience.role == .stage
            return .failure(
                UsageError(
                    message: stage
                        ? "--stage needs --relay: the stage and its audience meet through the relay's cluster (on a LAN alone every participant is on the stage)"
                        : "--audience needs --relay: a viewer follows the stage through the relay's cluster (on a LAN alone every participant is on the stage)"
                ))
        }
        if configuration.mpvOptions.attach, configuration.mpvOptions.socketPath == nil {
            return .failure(
                UsageError(message: "--mpv-attach needs --mpv-socket PATH (the socket mpv was started with)"))
        }
        if configuration.mpvOptions.attach, !configuration.mpvOptions.options.isEmpty {
            return .failure(UsageError(message: "--mpv-option applies to an mpv coplay starts, not with --mpv-attach"))
        }
        return .success(.runAgent(configuration))
    }

    /// `ctl PATH COMMAND…`, `ctl PATH --follow`, `ctl PATH --watch [--times N]`.
    static func parseControl(_ words: [String]) -> Result<Invocation, UsageError> {
        let usage = "ctl takes PATH then a command (e.g. status), --follow, or --watch [--times N]"
        guard let path = words.first, !path.hasPrefix("-"), path.utf8.count <= 107, words.count >= 2 else {
            return .failure(UsageError(message: usage))
        }
        let rest = Array(words.dropFirst())
        switch rest[0] {
        case "--follow":
            guard rest.count == 1 else { return .failure(UsageError(message: "--follow takes nothing after it")) }
            return .success(.control(path: path, request: .follow))
        case "--watch":
            guard rest.count == 1 || rest.count == 3 else {
                return .failure(UsageError(message: "--watch takes only --times N after it"))
            }
            guard rest.count == 3 else { return .success(.control(path: path, request: .watch(times: nil))) }
            guard rest[1] == "--times", let times = Int(rest[2]), (1...1_000_000).contains(times) else {
                return .failure(UsageError(message: "--watch --times takes a count from 1 to 1000000"))
            }
            return .success(.control(path: path, request: .watch(times: times)))
        case let word where word.hasPrefix("-"):
            return .failure(UsageError(message: "unknown ctl option '\(word)': \(usage)"))
        default:
            return .success(.control(path: path, request: .command(rest.joined(separator: " "))))
        }
    }

    /// Seeds on the command line: each is sent every group datagram, so a bound keeps a typo in a
    /// script from multiplying the agent's traffic; more peers are learned from these.
    public static let peersGivenMax = 16

    /// `HOST:PORT` or `[V6]:PORT`: an IPv4 or IPv6 address, or a host name (resolved now, to
    /// IPv4), and a port.
    static func parsePeer(_ text: String) throws(UsageError) -> Endpoint {
        let usage =
            "--peer takes HOST:PORT (e.g. 192.168.1.20:47800, [fd00::20]:47800 or media-pc.local:47800), not '\(text)'"
        guard let (host, portText) = splitHostPort(text), !host.isEmpty, let portText, let port = UInt16(portText),
            port > 0
        else { throw UsageError(message: usage) }
        let address = try hostAddress(host, flag: "--peer")
        let endpoint = Endpoint(address: address, port: port)
        guard endpoint.isUnicastDestination, !endpoint.isRelay else {
            throw UsageError(message: "--peer \(text) is not a unicast address (use --group for multicast)")
        }
        return endpoint
    }

    /// `--relay` URLs on the command line: seeds of one cluster; more are announced by it.
    public static let relaysGivenMax = 8

    /// `nats://[TOKEN@|USER:PASS@]HOST[:PORT]` (port 4222 by default); the user, password and
    /// token may be percent-encoded. The host is resolved now, to IPv4, as `--peer`'s is.
    static func parseRelay(_ text: String) throws(UsageError) -> RelayServer {
        let usage =
            "--relay takes nats://[TOKEN@|USER:PASS@]HOST[:PORT] (e.g. nats://s3cret@relay.example.org:4222), or ws://… for nats-server's websocket listener, not '\(text)'"
        let scheme: String
        if text.hasPrefix("nats://") {
            scheme = "nats://"
        } else if text.hasPrefix("ws://") {
            scheme = "ws://"
        } else {
            if text.hasPrefix("tls://") || text.hasPrefix("wss://") {
                throw UsageError(
                    message:
                        "--relay: coplay's relay does not speak TLS (every datagram is sealed with the group key); use the server's nats:// port, or its ws:// listener"
                )
            }
            throw UsageError(message: usage)
        }
        var rest = Substring(text.dropFirst(scheme.count))
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...].allSatisfy({ $0 == "/" }) else { throw UsageError(message: usage) }
            rest = rest[..<slash]
        }
        var credentials = NatsCommand.Credentials()
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard !userinfo.isEmpty else { throw UsageError(message: usage) }
            if let colon = userinfo.firstIndex(of: ":") {
                guard let user = percentDecoded(userinfo[..<colon]), !user.isEmpty,
                    let password = percentDecoded(userinfo[userinfo.index(after: colon)...])
                else { throw UsageError(message: usage) }
                (credentials.user, credentials.password) = (user, password)
            } else {
                guard let token = percentDecoded(userinfo) else { throw UsageError(message: usage) }
                credentials.token = token
            }
        }
        guard let (host, portText) = splitHostPort(String(rest)), !host.isEmpty else {
            throw UsageError(message: usage)
        }
        var port: UInt16 = scheme == "ws://" ? 80 : 4222
        if let portText {
            guard let parsed = UInt16(portText), parsed > 0 else {
                throw UsageError(message: "--relay port must be 1 to 65535, not '\(portText)'")
            }
            port = parsed
        }
        let address = try hostAddress(host, flag: "--relay")
        let endpoint = Endpoint(address: address, port: port)
        guard endpoint.isUnicastDestination, !endpoint.isRelay else {
            throw UsageError(message: "--relay \(host) is not a unicast address")
        }
        let name = address.isIPv4 ? "\(host):\(port)" : "[\(host)]:\(port)"
        return RelayServer(
            endpoint: endpoint, name: scheme == "ws://" ? "ws://" + name : name, credentials: credentials,
            webSocketHost: scheme == "ws://" ? name : nil)
    }

    /// `%XX` escapes decoded; nil for a malformed escape or bytes that are not UTF-8.
    private static func percentDecoded(_ text: Substring) -> String? { RelayServer.percentDecoded(text) }

    /// An IP address as written, or a host name resolved now, to IPv4.
    private static func hostAddress(_ host: String, flag: String) throws(UsageError) -> IPAddress {
        if let literal = IPAddress.parse(host) { return literal }
        guard let resolved = resolveIPv4(host) else {
            throw UsageError(message: "\(flag): cannot resolve '\(host)' to an IPv4 address")
        }
        return IPAddress(ipv4: resolved)
    }

    private static func resolveIPv4(_ host: String) -> UInt32? {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(result) }
        return first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
            UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
        }
    }

    static func checkedName(_ text: String, flag: String, bytesMax: Int) throws(UsageError) -> String {
        guard !text.isEmpty, text.utf8.count <= bytesMax else {
            throw UsageError(message: "\(flag) takes 1 to \(bytesMax) bytes of UTF-8, not \(text.utf8.count)")
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw UsageError(message: "\(flag) may not contain control characters")
        }
        return text
    }

    static func parseGroup(_ text: String) throws(UsageError) -> Endpoint {
        let usage =
            "--group takes ADDRESS:PORT or just ADDRESS (port \(WireFormat.defaultPort)), e.g. \(WireFormat.defaultGroupAddress):\(WireFormat.defaultPort) or [ff12::7c:1]:\(WireFormat.defaultPort), not '\(text)'"
        guard let (host, portText) = splitHostPort(text), let address = IPAddress.parse(host) else {
            throw UsageError(message: usage)
        }
        guard address.isMulticast else {
            throw UsageError(
                message:
                    "--group address \(host) is not a multicast address (224.0.0.0 to 239.255.255.255, or ff00::/8)")
        }
        var port = WireFormat.defaultPort
        if let portText {
            guard let parsed = UInt16(portText), parsed > 0 else {
                throw UsageError(message: "--group port must be 1 to 65535, not '\(portText)'")
            }
            port = parsed
        }
        return Endpoint(address: address, port: port)
    }

    /// `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT` (an IPv6 address alone may go without brackets);
    /// nil if the brackets do not match.
    static func splitHostPort(_ text: String) -> (host: String, port: String?)? { RelayServer.splitHostPort(text) }

    public static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "coplay" }
        // Host names are ASCII; keep at most 64 bytes, the name limit.
        let bytes = buffer.prefix { $0 != 0 }.prefix(64).map { UInt8(bitPattern: $0) }
        return bytes.isEmpty ? "coplay" : String(decoding: bytes, as: UTF8.self)
    }
}

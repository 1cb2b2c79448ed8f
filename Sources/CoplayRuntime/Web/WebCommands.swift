import Glibc

/// `coplay web` and `coplay invite`: the browser participant's two subcommands.
extension CommandLineOptions {
    static let webUsages: [(name: String, text: String)] = [
        (
            "web",
            """
            coplay web --listen ADDRESS:PORT [--root DIR] [--media PATH]…
              Serve the browser page and its WebAssembly module (HTTP/1.1 GET and HEAD of
              the files of DIR, held in memory) to the devices that will join, e.g.
              --listen 0.0.0.0:8080 on a home's LAN. DIR: the page's folder (default:
              /usr/share/coplay/web, else share/coplay/web beside the folder of this coplay,
              as /usr/local/share/coplay/web for /usr/local/bin/coplay, else the one
              Tools/wasm-core builds beside it).
              --media PATH (repeatable): a film, or a folder of films, served from disk at
              /media/NAME, of any size, with byte ranges (browsers and mpv seek with them).
              A bad request gets a 4xx and is counted. Runs until killed; exit status 1 if
              it cannot listen, 2 on a bad command line.
            """
        ),
        (
            "party",
            """
            coplay party FILE|URL… [--listen ADDRESS] [--player mpv|none] [--name NAME]
                         [--relay ws://[TOKEN@]HOST:PORT] [--key-file PATH] [--no-qr]
                         [--web-port N] [--root DIR] [agent options]
              Host a watch party in one command. It serves the page and the films (from
              disk, at URLs with a random part: nobody on the LAN fetches them without the
              link), starts nats-server as the relay the browsers join through (tied to
              this process: it ends with it, however it ends), makes a fresh group key,
              queues the files (the first is shared, the rest follow in the queue), prints
              the invitation link and its QR code, and runs this machine's agent with mpv.
              Open the link on each phone, tablet or laptop, type a name, press Join; type
              play (or press space in mpv) to start. Ctrl-C, quit or SIGTERM ends the party
              for everyone (each tab says so; an agent joined from the link exits) and
              leaves nothing behind.
                --listen ADDRESS  the IPv4 address the room's devices reach (default: the
                                  address of the interface of the default route)
                --player none     the host only hosts: no mpv window here
                --relay URL       a nats-server that already runs (its ws:// listener)
                --key-file PATH   keep one group across parties (default: a fresh key)
                --web-port N      the page's port (default: any free one)
              Any other agent option (--mpv-option, --interface, --json, …) is the agent's.
              Needs nats-server (apt install nats-server) unless --relay names one. Exit
              status 1 if the party cannot start, 2 on a bad command line.
            """
        ),
        (
            "join",
            """
            coplay join LINK [options]
              Run an agent in the group an invitation link names (coplay invite prints
              one): its relay (the ws:// listener, as the browsers use it), its session and
              its group key, with any other agent option (--name, --player mpv,
              --interface …). A link without a key, or a mangled one, is refused with what
              is wrong (exit status 2). When the party ends (its host's Ctrl-C, or anyone's
              end), the agent says who ended it and exits 0.
            """
        ),
        (
            "invite",
            """
            coplay invite --page URL --relay ws://[TOKEN@]HOST:PORT [--session NAME]
                          --key-file PATH [--no-qr]
              Print an invitation link on the first line, then the same link as a QR code:
              the page's URL with a fragment that carries the relay's WebSocket address
              (nats-server's websocket listener; wss:// with TLS), the session (default:
              default) and the group key. --relay may be given once per server of a cluster
              (up to 8): the page and `coplay join` try them in turn, and fail over among
              them. A browser never sends a fragment to a server, but whoever holds the link
              holds the key: send it as you would the key file.
              Exit status 2 on a bad command line.
            """
        ),
    ]

    /// The page's folder when --root is not given: where the Debian package puts it, then where
    /// Tools/wasm-core builds it beside a coplay built in the repository.
    static func defaultWebRoot() -> String {
        var candidates = ["/usr/share/coplay/web"]
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if count > 0 {
            let executable = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var directory = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            for _ in 0..<3 {
                candidates.append(directory.joined(separator: "/") + "/wasm/web")
                candidates.append(directory.joined(separator: "/") + "/share/coplay/web")
                directory = directory.dropLast()
            }
        }
        return candidates.first { access($0 + "/index.html", R_OK) == 0 } ?? candidates[0]
    }

    static func parseWeb(_ arguments: ArraySlice<String>) -> Result<Invocation, UsageError> {
        var remaining = arguments
        var listen: (String, UInt16)?
        var root: String?
        var media: [String] = []
        while let word = remaining.popFirst() {
            guard let value = remaining.popFirst() else {
                return .failure(UsageError(message: "\(word) needs a value"))
            }
            switch word {
            case "--listen":
                let parts = value.split(separator: ":")
                guard parts.count == 2, let port = UInt16(parts[1]), port > 0 else {
                    return .failure(
                        UsageError(
                            message:
                                "--listen takes ADDRESS:PORT (IPv4), e.g. 127.0.0.1:8080, not '\(value.prefix(60))'"))
                }
                listen = (String(parts[0]), port)
            case "--root": root = value
            case "--media": media.append(value)
            default:
                return .failure(
                    UsageError(
                        message:
                            "web takes --listen ADDRESS:PORT, --root DIR and --media PATH, not '\(word.prefix(40))'"))
            }
        }
        guard let listen else { return .failure(UsageError(message: "web needs --listen ADDRESS:PORT")) }
        return .success(.web(host: listen.0, port: listen.1, root: root ?? defaultWebRoot(), media: media))
    }

    /// `coplay join LINK [options]`: the agent the options describe, in the link's group.
    static func parseJoin(_ arguments: ArraySlice<String>) -> Result<Invocation, UsageError> {
        guard let link = arguments.first, !link.hasPrefix("-") else {
            return .failure(UsageError(message: "join needs an invitation link first (coplay invite prints one)"))
        }
        let options = Array(arguments.dropFirst())
        for flag in ["--relay", "--session", "--key-file"] where options.contains(flag) {
            return .failure(UsageError(message: "join takes \(flag) from the link; leave it out"))
        }
        let invitation: Invitation
        switch Invitation.parse(link) {
        case .success(let parsed): invitation = parsed
        case .failure(let error): return .failure(error)
        }
        guard case .runAgent(var configuration) = try? parse(options).get() else {
            return parse(options)  // its error, or --help and --version
        }
        do throws(UsageError) {
            // A link for anywhere names a hub's wss://: the agent reaches it through a
            // nats-server of its own, the hub's leaf node (it speaks no TLS itself).
            if let first = invitation.relays.first, first.hasPrefix("wss://"),
                case .success(let hub) = HubLink.parse(first)
            {
                configuration.hub = hub
                configuration.relays = []
            } else {
                configuration.relays = try invitation.relays.map { relay throws(UsageError) in try parseRelay(relay) }
            }
            configuration.sessionName = try checkedName(
                invitation.session, flag: "the link's session", bytesMax: configuration.settings.sessionNameBytesMax)
        } catch {
            return .failure(error)
        }
        configuration.keys = [invitation.key]
        configuration.keyFile = nil
        if invitation.audience { configuration.settings.audience.role = .viewer }
        configuration.exitsWhenEnded = true
        return .success(.runAgent(configuration))
    }

    static func parseInvite(_ arguments: ArraySlice<String>) -> Result<Invocation, UsageError> {
        var remaining = arguments
        var page: String?
        var relays: [String] = []
        var keys: [[UInt8]]?
        var session = "default"
        var qr = true
        var audience = false
        while let word = remaining.popFirst() {
            if word == "--no-qr" {
                qr = false
                continue
            }
            if word == "--audience" {
                audience = true
                continue
            }
            guard let value = remaining.popFirst() else {
                return .failure(UsageError(message: "\(word) needs a value"))
            }
            switch word {
            case "--page": page = value
            case "--relay": relays.append(value)
            case "--session":
                guard !value.isEmpty, value.utf8.count <= 64 else {
                    return .failure(UsageError(message: "--session must be 1 to 64 bytes"))
                }
                session = value
            case "--key-file":
                switch KeyFile.load(value) {
                case .success(let loaded): keys = loaded
                case .failure(let error): return .failure(error)
                }
            default:
                return .failure(
                    UsageError(
                        message:
                            "invite takes --page, --relay, --session, --key-file, --audience and --no-qr, not '\(word.prefix(40))'"
                    )
                )
            }
        }
        guard let page else {
            return .failure(UsageError(message: "invite needs --page URL: where the page is served (coplay web)"))
        }
        guard !relays.isEmpty else {
            return .failure(
                UsageError(
                    message:
                        "invite needs --relay ws://[TOKEN@]HOST:PORT: nats-server's WebSocket listener (repeat it for each server of a cluster)"
                ))
        }
        guard let key = keys?.first else {
            return .failure(UsageError(message: "invite needs --key-file PATH: the group's key travels in the link"))
        }
        return Invitation.make(page: page, relays: relays, session: session, key: key).map {
            var invitation = $0
            invitation.audience = audience
            return .invite(invitation, qr: qr)
        }
    }

    /// Prints the link, then its QR code (with colours on a terminal).
    public static func runInvite(_ invitation: Invitation, qr: Bool) -> Int32 {
        let link = invitation.link
        StandardStreams.writeOutput(link)
        guard qr else { return 0 }
        do {
            let code = try QRCode(bytes: Array(link.utf8))
            StandardStreams.writeOutput("\n" + code.terminalText(ansi: isatty(STDOUT_FILENO) == 1))
        } catch {
            StandardStreams.writeError("coplay invite: the link is too long for a QR code; send the link itself")
        }
        return 0
    }

    public static func runWeb(host: String, port: UInt16, root: String, media paths: [String]) -> Int32 {
        var media = MediaLibrary()
        for path in paths {
            if case .failure(let error) = media.add(path) {
                StandardStreams.writeError("coplay web: --media \(error.message)")
                return 1
            }
        }
        switch WebServer.load(root: root) {
        case .failure(let error):
            StandardStreams.writeError("coplay web: \(error.message)")
            return 1
        case .success(let files):
            var server = WebServer(files: files, media: paths.isEmpty ? nil : media)
            return server.serve(host: host, port: port)
        }
    }
}

import CoplayCore
import Glibc

/// How `coplay hub` gets the certificate of its HTTPS front door.
public enum HubTLS: Sendable, Equatable {
    /// Caddy's own CA (`tls internal`): for a private network, or a test; every device must
    /// trust the CA's root (kept in the state folder), and a party's server is given it with
    /// `--hub-ca FILE`.
    case internalCA
    /// A certificate Caddy obtains and renews for this DNS name (Let's Encrypt or ZeroSSL, through
    /// the TLS-ALPN challenge on the hub's port, or HTTP on port 80).
    case domain(String)
    /// A certificate and key of the operator's own (PEM files).
    case files(certificate: String, key: String)
}

/// What `coplay hub` was asked for.
public struct HubPlan: Sendable, Equatable {
    public var tls: HubTLS
    /// The IPv4 address Caddy listens on (0.0.0.0: every interface).
    public var listen: String
    public var port: UInt16
    /// The host named in the link: the domain, `--name`, else the listening address (or the
    /// default route's address when that is 0.0.0.0).
    public var name: String?
    /// Where the hub keeps its secret and Caddy its certificates and CA, across restarts.
    public var state: String
    public var webRoot: String
    public var qr: Bool
    public var json: Bool
    /// Folders whose films the hub serves itself (`--media DIR`), for a friend with a phone and
    /// no copy: over HTTPS, with byte ranges, under a path nobody guesses.
    public var media: [String] = []
    /// With a domain: the ACME directory to obtain its certificate from (`--acme-ca URL`: Let's
    /// Encrypt's staging, ZeroSSL, a company's own CA; default Caddy's, Let's Encrypt then
    /// ZeroSSL), and a root to trust for that directory's own HTTPS (`--acme-ca-root FILE`).
    public var acmeCA: String?
    public var acmeCARoot: String?

    /// An ACME directory's URL: a person types it; Caddy takes it quoted.
    static let acmeURLBytesMax = 2048

    /// A person names a few folders; each is one route of Caddy's.
    public static let mediaFoldersMax = 16

    static let usage = """
        coplay hub (--tls internal | --domain NAME | --cert FILE --key FILE) [--listen ADDRESS]
                   [--port N] [--name HOST] [--state DIR] [--media DIR]… [--root DIR] [--no-qr] [--json]
                   [--acme-ca URL [--acme-ca-root FILE]]
          Run a hub for parties across homes, on a machine every home reaches (a VPS, a
          friend's server): nats-server, its client port on loopback only, behind Caddy,
          which serves the page over HTTPS and carries wss:// for the tabs and for parties'
          own servers (their leaf nodes) on one port. It prints the hub link and its QR
          code: give it to coplay party --hub LINK in the host's home. Nothing reaches the
          hub in clear, and the hub's operator reads no title, name, URL or message: every
          frame is sealed with the group's key, which the hub never sees.
            --tls internal    Caddy's own CA (a private network, a test): each device must
                              trust its root, STATE/caddy/pki/authorities/local/root.crt
            --domain NAME     a certificate obtained and renewed for NAME (its DNS must
                              point here, and the port be reachable); the hub says when
                              it is obtained, or why not
            --acme-ca URL     with --domain: the ACME directory to obtain it from (default
                              Let's Encrypt, then ZeroSSL); --acme-ca-root FILE trusts a
                              root (PEM) for that directory's own HTTPS
            --cert/--key      PEM files of your own
            --listen ADDRESS  the IPv4 address to listen on (default 0.0.0.0)
            --port N          the HTTPS port (default 443)
            --name HOST       the host the link names (default: the domain, else the
                              address listened on, else the default route's)
            --state DIR       the hub's secret and Caddy's certificates, kept across
                              restarts so that links stay good (default: $STATE_DIRECTORY,
                              else ~/.local/state/coplay/hub)
            --media DIR       serve the films of DIR from the hub's own disk (repeatable), over
                              HTTPS with byte ranges, at https://HOST/media/TOKEN/NAME (TOKEN
                              made from the hub's secret: nobody guesses it); it lists each
                              film's URL, naming its content after the #: share one with
                              coplay party URL --hub LINK, for friends with no copy of their own
                              (a friend with a copy plays their own)
          Needs nats-server and caddy (apt install nats-server caddy); both end with the
          hub however it ends. Ctrl-C or SIGTERM stops it. Exit status 1 if it cannot
          start, 2 on a bad command line.
        """

    static func parse(_ arguments: ArraySlice<String>) -> Result<Invocation, UsageError> {
        var remaining = arguments
        var tls: HubTLS?
        var certificate: String?
        var key: String?
        var plan = HubPlan(
            tls: .internalCA, listen: "0.0.0.0", port: 443, name: nil, state: defaultState(),
            webRoot: CommandLineOptions.defaultWebRoot(), qr: true, json: false)
        func choose(_ chosen: HubTLS) throws(UsageError) {
            guard tls == nil else {
                throw UsageError(message: "hub: give one of --tls internal, --domain, --cert/--key")
            }
            tls = chosen
        }
        do throws(UsageError) {
            while let word = remaining.popFirst() {
                switch word {
                case "--help", "-h": return .success(.help(topic: "hub"))
                case "--no-qr":
                    plan.qr = false
                    continue
                case "--json":
                    plan.json = true
                    continue
                default: break
                }
                guard let value = remaining.popFirst() else { throw UsageError(message: "\(word) needs a value") }
                switch word {
                case "--tls":
                    guard value == "internal" else {
                        throw UsageError(message: "--tls takes internal (or give --domain NAME, or --cert and --key)")
                    }
                    try choose(.internalCA)
                case "--domain":
                    guard HubLink.isHost(value),
                        value.contains(where: { $0.isLetter })
                    else { throw UsageError(message: "--domain takes a DNS name, not '\(value)'") }
                    try choose(.domain(value.lowercased()))
                case "--cert": certificate = value
                case "--key": key = value
                case "--listen":
                    var address = in_addr()
                    guard inet_pton(AF_INET, value, &address) == 1 else {
                        throw UsageError(message: "--listen takes an IPv4 address, not '\(value)'")
                    }
                    plan.listen = value
                case "--port":
                    guard let port = UInt16(value), port > 0 else {
                        throw UsageError(message: "--port takes a TCP port from 1 to 65535, not '\(value)'")
                    }
                    plan.port = port
                case "--name":
                    guard HubLink.isHost(value) else {
                        throw UsageError(message: "--name takes a host name or an IPv4 address, not '\(value)'")
                    }
                    plan.name = value
                case "--state": plan.state = value
                case "--root": plan.webRoot = value
                case "--media":
                    var status = stat()
                    guard stat(value, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
                        throw UsageError(
                            message: "--media \(value): not a folder (the hub serves the films of a folder)")
                    }
                    guard plan.media.count < HubPlan.mediaFoldersMax else {
                        throw UsageError(message: "--media: at most \(HubPlan.mediaFoldersMax) folders")
                    }
                    plan.media.append(value)
                case "--acme-ca":
                    guard value.hasPrefix("https://"), value.utf8.count <= HubPlan.acmeURLBytesMax,
                        value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C })
                    else {
                        throw UsageError(
                            message:
                                "--acme-ca takes an ACME directory's https:// URL (at most \(HubPlan.acmeURLBytesMax) bytes), not '\(value.prefix(200))'"
                        )
                    }
                    plan.acmeCA = value
                case "--acme-ca-root":
                    guard access(value, R_OK) == 0 else {
                        throw UsageError(message: "--acme-ca-root \(value): \(String(cString: strerror(errno)))")
                    }
                    plan.acmeCARoot = value
                default: throw UsageError(message: "hub: unknown option '\(word)'")
                }
            }
            switch (certificate, key) {
            case (nil, nil): break
            case (let certificate?, let key?): try choose(.files(certificate: certificate, key: key))
            default: throw UsageError(message: "--cert and --key go together")
            }
            guard let tls else {
                throw UsageError(
                    message:
                        "hub needs its certificate: --domain NAME (obtained for you), --tls internal (a private CA), or --cert FILE --key FILE"
                )
            }
            plan.tls = tls
            if case .domain = tls {
                if plan.acmeCARoot != nil, plan.acmeCA == nil {
                    throw UsageError(message: "--acme-ca-root goes with --acme-ca URL")
                }
            } else if plan.acmeCA != nil || plan.acmeCARoot != nil {
                throw UsageError(message: "--acme-ca and --acme-ca-root go with --domain NAME")
            }
        } catch {
            return .failure(error)
        }
        return .success(.hub(plan))
    }

    /// systemd's `StateDirectory=` for the unit, else the user's state folder.
    static func defaultState() -> String {
        if let systemd = getenv("STATE_DIRECTORY").map({ String(cString: $0) }), !systemd.isEmpty { return systemd }
        if let state = getenv("XDG_STATE_HOME").map({ String(cString: $0) }), !state.isEmpty {
            return state + "/coplay/hub"
        }
        let home = getenv("HOME").map { String(cString: $0) } ?? "/root"
        return home + "/.local/state/coplay/hub"
    }

    /// The host the link names.
    var linkHost: String? {
        if case .domain(let domain) = tls { return name ?? domain }
        if let name { return name }
        return listen == "0.0.0.0" ? NetworkInterface.defaultRouteAddress() : listen
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}

/// `coplay hub`: nats-server behind Caddy, tied to this process, until Ctrl-C or SIGTERM.
public enum Hub {
    public static func run(_ plan: HubPlan) -> Int32 {
        switch start(plan) {
        case .failure(let error):
            StandardStreams.writeError("coplay hub: \(error.message)")
            return 1
        case .success(let running):
            StandardStreams.writeOutput(running.announcement)
            let status = waitForTheEnd(running, plan: plan)
            running.caddy.stop()
            running.nats.stop()
            return status
        }
    }

    struct Running {
        var nats: TiedServer
        var caddy: TiedServer
        var link: HubLink
        var announcement: String
        /// Where Caddy answers, to watch it.
        var probe: (host: String, port: UInt16)
        var natsPorts: [UInt16]
    }

    /// The bounds of a hub's nats-server: a party's frames are at most 1,231 bytes sealed, and
    /// NATS adds its subject (as the party's own server).
    static let maxPayloadBytes = PartyRelay.maxPayloadBytes

    static func start(_ plan: HubPlan) -> Result<Running, UsageError> {
        guard let nats = TiedServer.programPath("nats-server") else {
            return .failure(UsageError(message: "a hub needs nats-server: apt install nats-server"))
        }
        guard let caddy = TiedServer.programPath("caddy") else {
            return .failure(UsageError(message: "a hub needs caddy, its HTTPS front door: apt install caddy"))
        }
        guard let host = plan.linkHost else {
            return .failure(
                UsageError(message: "this machine has no default route: give --name HOST, the name every home reaches"))
        }
        guard access(plan.webRoot + "/index.html", R_OK) == 0 else {
            return .failure(
                UsageError(
                    message:
                        "no page at \(plan.webRoot) (index.html): build it with Tools/wasm-core, or give --root DIR"))
        }
        let secret: String
        switch HubState.secret(in: plan.state) {
        case .success(let read): secret = read
        case .failure(let error): return .failure(error)
        }
        let link = HubLink(host: host, port: plan.port, secret: secret)
        do {
            let folder = try TiedServer.makePrivateFolder("coplay-hub")
            defer { rmdir(folder) }
            let (client, webSocket, leaf) = (
                try TiedServer.freePort("127.0.0.1"), try TiedServer.freePort("127.0.0.1"),
                try TiedServer.freePort("127.0.0.1")
            )
            let natsConfig = folder + "/nats.conf"
            let natsLog = folder + "/nats.log"
            defer {
                unlink(natsConfig)
                unlink(natsLog)
            }
            let configuration = """
                # written by coplay hub; removed once read
                server_name: coplay-hub
                listen: "127.0.0.1:\(client)"
                authorization { token: "\(secret)" }
                max_payload: \(maxPayloadBytes)
                websocket { host: "127.0.0.1", port: \(webSocket), no_tls: true, same_origin: false }
                leafnodes { host: "127.0.0.1", port: \(leaf), authorization { user: "leaf", password: "\(secret)" } }
                """
            guard TiedServer.writePrivateFile(natsConfig, configuration) else {
                return .failure(UsageError(message: "cannot write \(natsConfig): \(String(cString: strerror(errno)))"))
            }
            let natsServer = try TiedServer.start(
                [nats, "-c", natsConfig], name: "coplay-hub-nats", log: natsLog,
                listening: {
                    TiedServer.canConnect("127.0.0.1", client) && TiedServer.canConnect("127.0.0.1", webSocket)
                        && TiedServer.canConnect("127.0.0.1", leaf)
                }, fatal: TiedServer.natsFatal)
            let caddyfile = folder + "/Caddyfile"
            let caddyLog = plan.state + "/caddy.log"
            defer { unlink(caddyfile) }
            guard
                TiedServer.writePrivateFile(
                    caddyfile, Self.caddyfile(plan, host: host, webSocketPort: webSocket, secret: secret))
            else {
                natsServer.stop()
                return .failure(UsageError(message: "cannot write \(caddyfile): \(String(cString: strerror(errno)))"))
            }
            let probeHost = plan.listen == "0.0.0.0" ? "127.0.0.1" : plan.listen
            let front: TiedServer
            do {
                front = try TiedServer.start(
                    [
                        "/usr/bin/env", "HOME=\(plan.state)", "XDG_DATA_HOME=\(plan.state)/data",
                        "XDG_CONFIG_HOME=\(plan.state)/config", caddy, "run", "--config", caddyfile, "--adapter",
                        "caddyfile",
                    ],
                    name: "coplay-hub-caddy", log: caddyLog,
                    listening: { TiedServer.canConnect(probeHost, plan.port) },
                    fatal: { log in
                        // Not a certificate not obtained yet: Caddy retries, and the hub says so.
                        log.split(separator: "\n").first {
                            $0.hasPrefix("Error:")
                                || ($0.contains("\"level\":\"error\"") && !$0.contains(CertificateWatch.obtainLogger))
                        }
                        .map { String($0.suffix(400)) }
                    })
            } catch {
                natsServer.stop()
                throw error
            }
            let running = Running(
                nats: natsServer, caddy: front, link: link,
                announcement: announcement(link, plan: plan, films: films(in: plan.media)),
                probe: (probeHost, plan.port),
                natsPorts: [client, webSocket, leaf])
            return .success(running)
        } catch {
            return .failure(UsageError(message: "\(error)"))
        }
    }

    /// Caddy's configuration: the page's files and, for a WebSocket upgrade (a tab, a party's
    /// leaf node), the hub's nats-server on loopback; no admin endpoint, no HTTP listener but
    /// the ACME challenge's with a domain.
    static func caddyfile(_ plan: HubPlan, host: String, webSocketPort: UInt16, secret: String) -> String {
        // HTTP/1.1 and 2 only: every connection to the hub is TCP with TLS, which a capture can check.
        var global = [
            "admin off", "storage file_system \(quoted(plan.state + "/caddy"))", "https_port \(plan.port)",
            "servers {\n\t\tprotocols h1 h2\n\t}",
        ]
        let tls: String
        switch plan.tls {
        case .internalCA:
            global += ["auto_https disable_redirects", "skip_install_trust", "local_certs"]
            tls = "tls internal"
        case .files(let certificate, let key):
            global += ["auto_https disable_redirects"]
            tls = "tls \(quoted(certificate)) \(quoted(key))"
        case .domain:
            if let directory = plan.acmeCA { global.append("acme_ca \(quoted(directory))") }
            if let root = plan.acmeCARoot { global.append("acme_ca_root \(quoted(root))") }
            tls = ""
        }
        // Each folder under its token: its files by name, with byte ranges; no listing, no
        // hidden file.
        let media = plan.media.enumerated().map { index, folder in
            "\thandle_path \(mediaPath(secret: secret, index: index))* {\n\t\troot * \(quoted(folder))\n"
                + "\t\tfile_server {\n\t\t\thide .*\n\t\t}\n\t}\n"
        }.joined()
        return """
            # written by coplay hub; removed once read
            {
            \(global.map { "\t" + $0 }.joined(separator: "\n"))
            }
            https://\(host):\(plan.port) {
            \tbind \(plan.listen)
            \t\(tls)
            \t@nats header Upgrade websocket
            \treverse_proxy @nats 127.0.0.1:\(webSocketPort)
            \theader {
            \t\tCross-Origin-Opener-Policy same-origin
            \t\tCross-Origin-Embedder-Policy credentialless
            \t\tCache-Control no-cache
            \t\tX-Content-Type-Options nosniff
            \t\tReferrer-Policy no-referrer
            \t}
            \(media)\troot * \(quoted(plan.webRoot))
            \tfile_server
            }
            """
    }

    /// Where the films of the `index`th `--media` folder are served: under a token made from the
    /// hub's secret, so that it is the same after a restart and guessed by nobody.
    static func mediaPath(secret: String, index: Int) -> String {
        "/media/" + Hex.encode(Array(SHA256.hash(Array("coplay hub media \(index) \(secret)".utf8)).prefix(16))) + "/"
    }

    /// A film of a `--media` folder, as the hub lists it: its name in the folder, and its
    /// fingerprint, which its URL carries in the fragment (`ContentIdentity.named`), so that a
    /// party sharing it has it known by its content, and a friend with a copy plays that copy.
    struct Film: Equatable {
        var folder: Int
        var name: String
        var fingerprint: String

        func url(_ link: HubLink) -> String {
            String(link.page.dropLast()) + Hub.mediaPath(secret: link.secret, index: folder)
                + MediaLibrary.percentEncoded(name) + "#" + fingerprint
        }
    }

    /// The films listed per folder: its top level, media files by name, at most this many (each
    /// is fingerprinted as the hub starts, 16 reads of 64 KiB). Others are served all the same.
    static let filmsListedMax = 64
    /// Entries of a folder looked at for them: a folder of a million files is not read whole.
    static let folderEntriesMax = 10_000

    /// The films of each folder, by name, that can be fingerprinted.
    static func films(in folders: [String]) -> [Film] {
        var films: [Film] = []
        for (index, folder) in folders.enumerated() {
            guard let directory = opendir(folder) else { continue }
            var names: [String] = []
            var entries = 0
            while entries < folderEntriesMax, let entry = readdir(directory) {
                entries += 1
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                guard !name.hasPrefix("."), ContentIdentity.container(of: name) != nil else { continue }
                names.append(name)
            }
            closedir(directory)
            var listed = 0
            for name in names.sorted() where listed < filmsListedMax {
                var status = stat()
                let path = folder + "/" + name
                guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
                    let fingerprint = try? FileFingerprint.of(path: path)
                else { continue }
                films.append(Film(folder: index, name: name, fingerprint: fingerprint.text))
                listed += 1
            }
        }
        return films
    }

    private static func quoted(_ text: String) -> String {
        var quoted = "\""
        for character in text {
            if character == "\\" || character == "\"" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "\""
    }

    static func announcement(_ link: HubLink, plan: HubPlan, films: [Film] = []) -> String {
        if plan.json {
            var fields: [(String, JSONValue)] = [
                ("event", "hub"), ("link", .string(link.text)), ("page", .string(link.page)),
            ]
            if plan.tls == .internalCA { fields.append(("ca", .string(HubState.caRoot(in: plan.state)))) }
            if !plan.media.isEmpty {
                let bases = plan.media.indices.map {
                    JSONValue.string(String(link.page.dropLast()) + mediaPath(secret: link.secret, index: $0))
                }
                fields.append(("media", .array(bases)))
                fields.append(
                    (
                        "films",
                        .array(films.map { .object([("name", .string($0.name)), ("url", .string($0.url(link)))]) })
                    ))
            }
            return JSONValue.object(fields).serialized
        }
        var text = "coplay hub: listening on \(plan.listen):\(plan.port)\n\n  \(link.text)\n"
        if plan.qr, let code = try? QRCode(bytes: Array(link.text.utf8)) {
            text += "\n" + code.terminalText(ansi: isatty(STDOUT_FILENO) == 1)
        }
        text += "\nIn the host's home: coplay party FILM --hub '\(link.text)'\n"
        for (index, folder) in plan.media.enumerated() {
            text +=
                "Films of \(folder), for friends with no copy: \(link.page.dropLast())\(mediaPath(secret: link.secret, index: index))NAME\n"
            let listed = films.filter { $0.folder == index }
            if !listed.isEmpty {
                text +=
                    "  each known by its content (a friend with a copy plays their own): coplay party URL --hub LINK\n"
                for film in listed { text += "  \(film.url(link))\n" }
            }
        }
        if case .domain(let domain) = plan.tls {
            text +=
                "The certificate for \(domain) comes from \(plan.acmeCA ?? "Let's Encrypt (else ZeroSSL)"): the hub says when it is obtained.\n"
        }
        if plan.tls == .internalCA {
            text +=
                "The certificate is of this hub's own CA: every device must trust \(HubState.caRoot(in: plan.state)) (a party: --hub-ca FILE).\n"
        }
        return text + "Ctrl-C stops the hub.\n"
    }

    /// Until SIGINT or SIGTERM, or one of the servers is gone (said, exit 1). With a domain, says
    /// when Caddy has its certificate, or why not yet.
    static func waitForTheEnd(_ running: Running, plan: HubPlan) -> Int32 {
        var watch: CertificateWatch?
        if case .domain(let domain) = plan.tls { watch = CertificateWatch(domain: domain, json: plan.json) }
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        var timeout = timespec(tv_sec: 1, tv_nsec: 0)
        while true {
            let signal = sigtimedwait(&signals, nil, &timeout)
            if signal == SIGINT || signal == SIGTERM { return 0 }
            if var certificate = watch, !certificate.obtained {
                let log = WebServer.readWholeFile(plan.state + "/caddy.log", bytesMax: CertificateWatch.logBytesMax)
                for notice in certificate.read(String(decoding: log ?? [], as: UTF8.self)) {
                    if notice.isError {
                        StandardStreams.writeError(notice.text)
                    } else {
                        StandardStreams.writeOutput(notice.text)
                    }
                }
                watch = log == nil ? nil : certificate
            }
            if !TiedServer.canConnect(running.probe.host, running.probe.port) {
                StandardStreams.writeError("coplay hub: caddy stopped answering on \(running.probe.port); stopping")
                return 1
            }
            if !running.natsPorts.allSatisfy({ TiedServer.canConnect("127.0.0.1", $0) }) {
                StandardStreams.writeError("coplay hub: nats-server stopped answering; stopping")
                return 1
            }
        }
    }
}

/// What Caddy's log says of a domain's certificate, said once to the hub's operator: that it is
/// obtained, or the first reason it is not yet (Caddy retries on its own, for up to 30 days).
struct CertificateWatch {
    var domain: String
    var json: Bool
    private(set) var obtained = false
    private var failureSaid = false

    static let obtainLogger = "\"logger\":\"tls.obtain\""
    /// Caddy's log is read whole each second until the certificate is there: its first minutes
    /// are a few kilobytes; one grown past this is no longer read.
    static let logBytesMax = 1 << 20
    /// How much of Caddy's reason is said.
    static let reasonBytesMax = 300

    init(domain: String, json: Bool) {
        self.domain = domain
        self.json = json
    }

    struct Notice: Equatable {
        var text: String
        var isError: Bool
    }

    /// The notices `log` (Caddy's whole log so far) gives that were not given before.
    mutating func read(_ log: String) -> [Notice] {
        var notices: [Notice] = []
        for line in log.split(separator: "\n") where line.contains(Self.obtainLogger) {
            guard case .object(let fields)? = try? JSONParser.parse(String(line)) else { continue }
            func field(_ name: String) -> String? {
                fields.first { $0.0 == name }.flatMap { if case .string(let text) = $0.1 { text } else { nil } }
            }
            if field("msg") == "certificate obtained successfully", field("identifier") == domain {
                obtained = true
                notices.append(
                    Notice(
                        text: json
                            ? JSONValue.object([("event", "certificate"), ("domain", .string(domain))]).serialized
                            : "coplay hub: the certificate for \(domain) is obtained",
                        isError: false))
                return notices
            }
            if !failureSaid, field("msg") == "could not get certificate from issuer",
                let error = field("error")
            {
                failureSaid = true
                let reason = String(error.prefix(Self.reasonBytesMax))
                notices.append(
                    Notice(
                        text: json
                            ? JSONValue.object([
                                ("event", "certificate-failed"), ("domain", .string(domain)),
                                ("error", .string(reason)),
                            ]).serialized
                            : "coplay hub: no certificate for \(domain) yet (Caddy tries again): \(reason)",
                        isError: !json))
            }
        }
        return notices
    }
}

/// What a hub keeps across restarts, in its state folder (0700): its secret (so that its link
/// stays good), and Caddy's certificates and CA.
enum HubState {
    static func secret(in folder: String) -> Result<String, UsageError> {
        guard makeFolders(folder) else {
            return .failure(
                UsageError(message: "cannot make the state folder \(folder): \(String(cString: strerror(errno)))"))
        }
        let path = folder + "/secret"
        if let bytes = WebServer.readWholeFile(path, bytesMax: 256) {
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: " \n\t")
            guard HubLink.isSecret(text) else {
                return .failure(
                    UsageError(
                        message: "\(path) is not a hub's secret (32 lowercase hex digits): remove it for a new one"))
            }
            return .success(text)
        }
        var random = SystemRandomNumberGenerator()
        let secret = Hex.encode(
            (0..<(HubLink.secretHexDigits / 2)).map { _ in UInt8.random(in: 0...255, using: &random) })
        guard TiedServer.writePrivateFile(path, secret + "\n") else {
            return .failure(UsageError(message: "cannot write \(path): \(String(cString: strerror(errno)))"))
        }
        return .success(secret)
    }

    static func caRoot(in folder: String) -> String { folder + "/caddy/pki/authorities/local/root.crt" }

    /// `folder` and its parents, the last 0700.
    private static func makeFolders(_ folder: String) -> Bool {
        var path = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0, errno != EEXIST { return false }
        }
        return chmod(folder, 0o700) == 0
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}

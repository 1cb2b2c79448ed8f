import CoplayCore
import Glibc

/// `coplay party FILE…`: a watch party in one command. It serves the page and the films on the
/// address the room's devices reach, starts the relay the browsers join through (nats-server,
/// tied to this process as mpv is), makes a fresh group key, queues the films, prints the
/// invitation link and its QR code, and runs the host's agent with its player. Ctrl-C, `quit` or
/// SIGTERM ends it all; so does `kill -9`, for the relay and mpv (the web server is a thread of
/// this process).
public enum Party {
    /// Why the session ends when the party does (Ctrl-C, `quit`, SIGTERM): every tab and every
    /// joined agent is told, by the session's `end`, and says so.
    static let overReason = "the party is over"

    /// The name a film given by its URL goes by: the last part of its path, percent-decoded
    /// ("Our Film (2026).mp4"), without the query or fragment; "" when the path names none. A
    /// party given a URL showed its id on every phone ("01e77e-48947-1 · you are in the group").
    /// A path on this machine's disk goes by its file's name too.
    static func filmName(of url: String) -> String {
        let parts = url.prefix { $0 != "?" && $0 != "#" }.split(separator: "/", omittingEmptySubsequences: true)
        let isPath = url.hasPrefix("/")
        guard isPath || parts.first?.hasSuffix(":") == true else { return "" }  // `scheme:` then the host
        let path = isPath ? parts[...] : parts.dropFirst(parts.first == "file:" ? 1 : 2)
        guard let last = path.last else { return "" }  // the host alone: no name
        var name = OwnCopies.fileName(String(last))  // decoded as an own copy's name is
        while name.utf8.count > WireFormat.metadataBytesMax { name.removeLast() }  // a title's bound
        return name
    }
    public static func run(_ plan: PartyPlan) async -> Int32 {
        switch prepare(plan) {
        case .failure(let error):
            StandardStreams.writeError("coplay party: \(error.message)")
            return 1
        case .success(let prepared):
            let status = await prepared.shell.run()
            prepared.relay?.stop()
            return status
        }
    }

    private struct Prepared {
        var shell: AgentShell
        var relay: PartyRelay?
    }

    private static func prepare(_ plan: PartyPlan) -> Result<Prepared, UsageError> {
        guard let host = plan.listen ?? NetworkInterface.defaultRouteAddress() else {
            return .failure(
                UsageError(
                    message:
                        "this machine has no default route: give --listen ADDRESS, the address the room's devices reach"
                ))
        }
        let page: [String: WebServer.File]
        switch WebServer.load(root: plan.webRoot) {
        case .success(let files): page = files
        case .failure(let error): return .failure(error)
        }
        let listening: (descriptor: Int32, port: UInt16)
        switch WebServer.listen(host: host, port: plan.webPort) {
        case .success(let bound): listening = bound
        case .failure(let error): return .failure(error)
        }
        let base = "http://\(host):\(listening.port)"
        var random = SystemRandomNumberGenerator()
        // The media's path carries 128 random bits: the LAN fetches no film without the link.
        let secret = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &random) })
        var media = MediaLibrary(prefix: "/media/\(secret)/")
        var urls: [(url: String, title: String)] = []
        // A film from disk is known to the group by its content, not by its URL here: an agent
        // in another home plays its own copy of it (`ContentIdentity`).
        // Its length too (ffprobe), so that whoever lacks it hears how long it is and another
        // encode of it is known.
        var ids: [String?] = []
        var lengths: [Double?] = []
        // The host's player plays them from disk, not from the party's server: mpv finds a
        // film's subtitles beside it (sub-auto), and a film is read once, not through HTTP.
        var ownFiles: [String] = []
        for item in plan.items {
            if item.hasPrefix("http://") || item.hasPrefix("https://") {
                // A film the hub serves, named with its fingerprint: known by its content too.
                let named = ConsoleCommand.contentNamed(item)
                let url = named?.url ?? item
                urls.append((url, filmName(of: url)))  // its title: what a person calls it
                ids.append(named?.fingerprint.text)
                lengths.append(nil)
                continue
            }
            switch media.add(item) {
            case .success(let name?):
                urls.append((media.url(base: base, name: name), name))
                ids.append((try? FileFingerprint.of(path: item))?.text)
                if let absolute = realpath(item, nil) {
                    ownFiles.append(String(cString: absolute))
                    free(absolute)
                }
                lengths.append(MediaDuration.probe(item))
                // Its own subtitle streams, extracted meanwhile for the tabs (ffmpeg reads the film).
                EmbeddedSubtitles.shared.prepare(item)
            case .success(nil): return .failure(UsageError(message: "\(item) is a folder: name its films"))
            case .failure(let error): return .failure(error)
            }
        }
        let server = WebServer(files: page, media: media)
        BackgroundThread.start {
            var server = server
            server.serve(listener: listening.descriptor, log: false)
        }

        var configuration = plan.agent
        if configuration.interface == nil { configuration.interface = host }
        if configuration.sessionName == "default" { configuration.sessionName = "party" }
        configuration.endsSessionOnQuit = Self.overReason
        configuration.ownFiles = ownFiles
        // The host is named on the stage: it joins it at once, and grants the seats that follow.
        if configuration.settings.audience.role == .firstCome { configuration.settings.audience.role = .stage }
        if configuration.keys == nil {
            configuration.keys = [(0..<GroupKeys.keyBytesMin).map { _ in UInt8.random(in: 0...255, using: &random) }]
        }
        let relay: PartyRelay?
        let browserRelay: String
        do {
            if let given = plan.relay {
                relay = nil
                browserRelay = given
                configuration.relays = [try CommandLineOptions.parseRelay(given)]
            } else {
                let started = try PartyRelay.start(host: host, hub: plan.hub?.leaf(caFile: configuration.hubCA))
                relay = started
                browserRelay = "ws://\(started.token)@\(host):\(started.webSocketPort)"
                configuration.relays = [
                    try CommandLineOptions.parseRelay("nats://\(started.token)@\(host):\(started.clientPort)")
                ]
            }
        } catch let error as UsageError {
            return .failure(error)
        } catch {
            return .failure(UsageError(message: "\(error)"))
        }
        configuration.startupLines = zip(zip(urls, ids), lengths).map { pair, length in
            let (item, id) = pair
            // A URL given with a space stays one word in double quotes (the console's rule).
            let url = item.url.contains(" ") && !item.url.contains("\"") ? "\"\(item.url)\"" : item.url
            return "queue add \(url)" + (id.map { " id=\($0)" } ?? "")
                + (length.map { " duration=\(String(format3: $0))" } ?? "")
                + (item.title.isEmpty ? "" : " title=\"\(consoleSafe(item.title))\"")
        }
        let invitation: Invitation
        switch Invitation.make(
            page: base + "/", relay: browserRelay, session: configuration.sessionName, key: configuration.keys![0])
        {
        case .success(let made): invitation = made
        case .failure(let error):
            relay?.stop()
            return .failure(error)
        }
        // With a hub: a second link, for anywhere, whose page and relay are the hub's.
        var anywhere: Invitation?
        if let hub = plan.hub {
            switch Invitation.make(
                page: hub.page, relay: hub.relay, session: configuration.sessionName, key: configuration.keys![0])
            {
            case .success(let made): anywhere = made
            case .failure(let error):
                relay?.stop()
                return .failure(error)
            }
        }
        configuration.startupOutput = announcement(
            invitation, anywhere: anywhere, items: urls, json: configuration.json, qr: plan.qr)
        let shell: AgentShell
        do {
            shell = try AgentShell(configuration: configuration)
        } catch {
            relay?.stop()
            return .failure(UsageError(message: "cannot start the host's agent: \(error)"))
        }
        return .success(Prepared(shell: shell, relay: relay))
    }

    /// The link, its QR code and one line saying what to do with it (with `--json`: one `party`
    /// event line that carries the link and the media's URLs). The agent prints it once it
    /// handles Ctrl-C.
    static func announcement(
        _ invitation: Invitation, anywhere: Invitation? = nil, items: [(url: String, title: String)], json: Bool,
        qr: Bool
    ) -> String {
        let link = invitation.link
        if json {
            var fields: [(String, JSONValue)] = [
                ("event", "party"), ("link", .string(link)), ("page", .string(invitation.page)),
                ("relay", .string(invitation.relay)), ("session", .string(invitation.session)),
                ("items", .array(items.map { .string($0.url) })),
            ]
            if let anywhere { fields.append(("anywhere", .string(anywhere.link))) }
            return JSONValue.object(fields).serialized
        }
        // `PartyPlan` refuses a party with nothing to watch: there is a first item.
        let what =
            (items.first.map { $0.title.isEmpty ? $0.url : $0.title } ?? "")
            + (items.count > 1 ? " and \(items.count - 1) more in the queue" : "")
        var text = "coplay party: \(what)\n\n  \(link)\n"
        if qr, let code = try? QRCode(bytes: Array(link.utf8)) {
            text += "\n" + code.terminalText(ansi: isatty(STDOUT_FILENO) == 1)
        }
        if let anywhere {
            text +=
                "\nFor friends in other homes (a phone, a laptop, or coplay join on Linux), through the hub:\n\n  \(anywhere.link)\n"
        }
        text +=
            "\nOpen the link on every phone, tablet or laptop in the room (or scan the code), type a name, press Join.\n"
            + "Type play to start; Ctrl-C (or quit) ends the party.\n"
        return text
    }

    /// A file's name as a console value in double quotes: no quote, no control byte.
    static func consoleSafe(_ text: String) -> String {
        String(text.unicodeScalars.map { $0 == "\"" || $0.value < 0x20 || $0.value == 0x7F ? "'" : Character($0) })
    }
}

extension NetworkInterface {
    /// The IPv4 address of the interface the default route goes out of (`/proc/net/route`), the
    /// address the devices of the room reach; nil without a default route.
    public static func defaultRouteAddress() -> String? {
        guard let bytes = Dump.readAll("/proc/net/route", bytesMax: 1 << 20) else { return nil }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").dropFirst()
        for line in lines {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count > 2, fields[1] == "00000000",
                let interface = all().first(where: { $0.name == fields[0] }),
                interface.address != 0
            else { continue }
            return Endpoint(address: interface.address, port: 0).addressText
        }
        return nil
    }
}

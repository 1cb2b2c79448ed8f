import CoplayCore
import Glibc

/// `coplay party FILE|URL… [options]`: what a watch party is started with, from the command
/// line. The party's own options are read here; every other option is the agent's, read by the
/// agent's parser, so that `--mpv-option`, `--interface` and the rest mean what they mean there.
public struct PartyPlan: Sendable {
    /// The host's agent: its player, name, key and the agent options given.
    public var agent: AgentConfiguration
    /// The files (paths) and URLs to watch, in order: the first is shared, the rest queued.
    public var items: [String]
    /// The address the room's devices reach (`--listen`); nil: the default route's interface's.
    public var listen: String?
    /// A nats-server that already runs, as the browsers reach it (`--relay ws://…`); nil: the
    /// party starts its own.
    public var relay: String?
    /// A hub whose leaf node the party's own nats-server becomes (`--hub LINK`): the other
    /// homes reach the party through it.
    public var hub: HubLink?
    /// The web server's port (`--web-port`); 0: any free one.
    public var webPort: UInt16 = 0
    /// The page's folder (`--root`).
    public var webRoot: String
    /// Print the link's QR code (`--no-qr` turns it off).
    public var qr = true

    /// The most items one party is given on its command line (the queue holds more, added later).
    public static let itemsMax = 64

    /// Agent flags that take no value: everything else that starts with `--` takes one.
    static let agentFlagsWithoutValue: Set<String> = ["--json", "--mpv-attach"]

    static func parse(_ arguments: ArraySlice<String>) -> Result<Invocation, UsageError> {
        var remaining = arguments
        var agentArguments: [String] = []
        var items: [String] = []
        var listen: String?
        var relay: String?
        var hub: HubLink?
        var webPort: UInt16 = 0
        var root: String?
        var qr = true
        var playerGiven = false
        while let word = remaining.popFirst() {
            func value() throws(UsageError) -> String {
                guard let next = remaining.popFirst() else { throw UsageError(message: "\(word) needs a value") }
                return next
            }
            do throws(UsageError) {
                switch word {
                case "--no-qr": qr = false
                case "--listen":
                    let text = try value()
                    guard !text.contains(":"), Endpoint.parseAddress(text) != nil else {
                        throw UsageError(
                            message:
                                "--listen takes the IPv4 address the room's devices reach (e.g. 192.168.1.20), not '\(text.prefix(60))'"
                        )
                    }
                    listen = text
                case "--relay":
                    let text = try value()
                    guard text.hasPrefix("ws://") || text.hasPrefix("wss://") else {
                        throw UsageError(
                            message:
                                "party --relay takes the WebSocket address of a nats-server that runs, as the browsers reach it (ws://[TOKEN@]HOST:PORT), not '\(text.prefix(60))'"
                        )
                    }
                    relay = text
                case "--hub":
                    hub = try HubLink.parse(try value()).get()
                case "--web-port":
                    let text = try value()
                    guard let port = UInt16(text) else {
                        throw UsageError(
                            message: "--web-port takes a TCP port from 0 (any free) to 65535, not '\(text)'")
                    }
                    webPort = port
                case "--root": root = try value()
                case "--player":
                    let text = try value()
                    switch text {
                    case "mpv": agentArguments += ["--player", "mpv"]
                    case "none": agentArguments += ["--player", "simulated"]
                    default:
                        throw UsageError(
                            message:
                                "party takes --player mpv (the host watches in mpv) or none (the host only hosts), not '\(text.prefix(40))'"
                        )
                    }
                    playerGiven = true
                case "--peer", "--port", "--group":
                    // Allowed: the host's agent still meets native agents on its LAN.
                    agentArguments += [word, try value()]
                case let flag where flag.hasPrefix("-"):
                    agentArguments.append(flag)
                    if !agentFlagsWithoutValue.contains(flag), flag.hasPrefix("--") {
                        agentArguments.append(try value())
                    }
                default:
                    guard items.count < itemsMax else {
                        throw UsageError(
                            message: "at most \(itemsMax) files on the command line (queue add takes more)")
                    }
                    items.append(word)
                }
            } catch {
                return .failure(error)
            }
        }
        if !playerGiven { agentArguments += ["--player", "mpv"] }
        // Said before anything else is looked for (the page's folder was, and a person who forgot
        // the film read about a folder): a party is for watching something.
        if items.isEmpty, !agentArguments.contains("--version") {
            return .failure(
                UsageError(
                    message:
                        "party needs a film to watch: coplay party FILE|URL… (the first is shared, the rest follow in the queue)"
                ))
        }
        for item in items {
            if let problem = Self.problem(with: item) { return .failure(UsageError(message: problem)) }
        }
        let agent: AgentConfiguration
        switch CommandLineOptions.parse(agentArguments) {  // every word is a flag: the agent's options
        case .success(.runAgent(let configuration)): agent = configuration
        case .success(let other): return .success(other)  // --help, --version
        case .failure(let error): return .failure(error)
        }
        if hub != nil, relay != nil {
            return .failure(
                UsageError(
                    message:
                        "party takes --hub or --relay, not both: with a hub the party runs its own relay, the hub's leaf node"
                ))
        }
        var plan = PartyPlan(
            agent: agent, items: items, listen: listen, relay: relay, webPort: webPort,
            webRoot: root ?? CommandLineOptions.defaultWebRoot(), qr: qr)
        plan.hub = hub
        return .success(.party(plan))
    }

    /// Why an item cannot be watched by the room, if it cannot: a URL every device can fetch
    /// (http or https) or a file the party serves.
    static func problem(with item: String) -> String? {
        if item.hasPrefix("http://") || item.hasPrefix("https://") { return nil }
        if let colon = item.firstIndex(of: ":"), item[..<colon].allSatisfy({ $0.isLetter }),
            item[colon...].hasPrefix("://")
        {
            return "\(item.prefix(80)): a party shares files, or http:// and https:// URLs every device can fetch"
        }
        var status = stat()
        guard stat(item, &status) == 0 else {
            return "\(item.prefix(200)): no such file (\(String(cString: strerror(errno))))"
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            return "\(item.prefix(200)) is not a file: name the films themselves (a folder: coplay web --media)"
        }
        guard access(item, R_OK) == 0 else {
            return "\(item.prefix(200)) cannot be read: \(String(cString: strerror(errno)))"
        }
        return nil
    }
}

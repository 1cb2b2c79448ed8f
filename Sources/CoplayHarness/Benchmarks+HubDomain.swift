import Foundation
import Glibc

extension Benchmarks {
    /// What `hubDomain` saw.
    public struct HubDomainFigures: Sendable {
        /// `coplay hub --domain` started → it said its certificate is obtained, ms.
        public var certificateObtained: Double?
        /// A home fetched the hub's page by its name, trusting only the ACME CA's root: the
        /// certificate is the one obtained, for that name.
        public var pageByName = false
        /// Home B's agent, joined from the party's link for anywhere, heard home A's through the
        /// hub, and followed a pause made there.
        public var heardThroughHub = false
        public var followedPause = false
        /// The film the hub listed (`--media`), its URL naming its fingerprint.
        public var filmListed: String?
        /// Home B played its own copy of it (another name, another folder), not the hub's.
        public var ownCopyOfHubFilm = false
        /// What a capture on the internet's bridge saw: TCP segments with a payload (every one
        /// between a home's router and the hub, after the homes' NATs), and for each string that
        /// must never cross in clear, how many held it.
        public var capturedSegments = 0
        /// Frames on the internet carrying a home's private address (none, through the NATs).
        public var homeAddressesOnInternet = 0
        public var inClear: [String: Int] = [:]
        /// A hub pointed at an ACME directory that does not answer said why it has no certificate.
        public var failureSaid: String?
    }

    /// `coplay hub --domain NAME` as on a VPS, with an ACME CA of the test's own (Debian's pebble,
    /// `PEBBLE_VA_ALWAYS_VALID`: the test's internet has no DNS a public CA could check). The hub
    /// and pebble on the internet; home A's party (`--hub LINK`, sharing the hub's own film by the
    /// URL the hub lists) and home B's `coplay join` of the party's link for anywhere, with its own
    /// copy of that film, each on a LAN behind its router's NAT (`behindNATs`); the hub's name is
    /// in each home's own `/etc/hosts` (`ip netns exec` binds `/etc/netns/NS/hosts`). The homes trust pebble's issuing root only, as a device
    /// trusts Let's Encrypt's.
    public static func hubDomain(executable: String, bench: String) throws -> HubDomainFigures {
        guard getuid() == 0 else { throw BenchError(description: "the domain check makes namespaces: run it as root") }
        for program in ["caddy", "nats-server", "pebble", "openssl", "nft", "curl", "tcpdump", "tshark"]
        where Locations.onPath(program) == nil {
            throw BenchError(
                description:
                    "the domain check needs \(program) (apt-get install \(program == "nft" ? "nftables" : program))")
        }
        let domain = "hub.coplay.test"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-hub-domain-\(getpid())")
        let page = directory.appendingPathComponent("page")
        try FileManager.default.createDirectory(at: page, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("<!doctype html><title>coplay</title>".utf8).write(to: page.appendingPathComponent("index.html"))
        // The hub's film (--media), and home B's own copy of it under another name, in a folder
        // of its own.
        let hubFilms = directory.appendingPathComponent("hub-films")
        let homeB = directory.appendingPathComponent("home-b/Films")
        for folder in [hubFilms, homeB] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        let film = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try film.write(to: hubFilms.appendingPathComponent("Our Film.mkv"))
        let copy = homeB.appendingPathComponent("our.film.2026.mkv").path
        try film.write(to: URL(fileURLWithPath: copy))
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        // Pebble's own HTTPS, from a CA made here: what --acme-ca-root trusts.
        for arguments in [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=coplay test ACME CA", "-addext",
                "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("acme.key"),
                "-out", path("acme.csr"), "-subj", "/CN=localhost",
            ],
        ] {
            let (status, output) = try Locations.run("/usr/bin/openssl", arguments)
            guard status == 0 else { throw BenchError(description: "openssl: \(output.suffix(300))") }
        }
        try Data("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".utf8)
            .write(to: directory.appendingPathComponent("acme.ext"))
        let (signed, signing) = try Locations.run(
            "/usr/bin/openssl",
            [
                "x509", "-req", "-in", path("acme.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path("acme.pem"), "-days", "2", "-extfile", path("acme.ext"),
            ])
        guard signed == 0 else { throw BenchError(description: "openssl: \(signing.suffix(300))") }
        try Data(
            """
            {"pebble":{"listenAddress":"127.0.0.1:14000","managementListenAddress":"127.0.0.1:15000",\
            "certificate":"\(path("acme.pem"))","privateKey":"\(path("acme.key"))","httpPort":5002,\
            "tlsPort":5001,"ocspResponderURL":"","externalAccountBindingRequired":false}}
            """.utf8
        ).write(to: directory.appendingPathComponent("pebble.json"))

        var figures = HubDomainFigures()
        try behindNATs(homes: 2) { prefix in
            let netns = URL(fileURLWithPath: "/etc/netns")
            for home in 2...3 {
                let folder = netns.appendingPathComponent("\(prefix)-h\(home)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Data("127.0.0.1 localhost\n\(internetSubnet).1 \(domain)\n".utf8)
                    .write(to: folder.appendingPathComponent("hosts"))
            }
            defer {
                for home in 2...3 {
                    try? FileManager.default.removeItem(at: netns.appendingPathComponent("\(prefix)-h\(home)"))
                }
            }
            let capture = path("internet.pcap")
            let dump = Process()
            dump.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            dump.arguments = [
                "netns", "exec", "\(prefix)-inet", "tcpdump", "-i", "br0", "-U", "-s", "0", "-w", capture, "tcp",
            ]
            dump.standardOutput = FileHandle.nullDevice
            let dumpLog = path("tcpdump.log")
            _ = FileManager.default.createFile(atPath: dumpLog, contents: nil)
            dump.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: dumpLog))
            try dump.run()
            defer {
                if dump.isRunning {
                    dump.terminate()
                    waitForExit(dump)
                }
            }
            // Listening before anything crosses (tcpdump says so on its standard error).
            let listening = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < listening,
                !((try? String(contentsOfFile: dumpLog, encoding: .utf8))?.contains("listening on") ?? false)
            {
                usleep(20_000)
            }
            let pebble = Process()
            pebble.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            pebble.arguments = [
                "netns", "exec", "\(prefix)-h1", "/usr/bin/env", "PEBBLE_VA_ALWAYS_VALID=1", "PEBBLE_VA_NOSLEEP=1",
                "PEBBLE_WFE_NONCEREJECT=0", "pebble", "-config", path("pebble.json"),
            ]
            pebble.standardOutput = FileHandle.nullDevice
            pebble.standardError = FileHandle.nullDevice
            try pebble.run()
            defer {
                if pebble.isRunning {
                    pebble.terminate()
                    waitForExit(pebble)
                }
            }
            func curl(_ host: Int, _ arguments: [String]) throws -> (status: Int32, output: String) {
                try Locations.run(
                    "/usr/sbin/ip",
                    ["netns", "exec", "\(prefix)-h\(host)", "curl", "-sS", "--max-time", "5"] + arguments)
            }
            let pebbleUp = ContinuousClock.now + .seconds(10)
            while try curl(1, ["-o", "/dev/null", "--cacert", path("ca.pem"), "https://127.0.0.1:14000/dir"]).status
                != 0
            {
                guard ContinuousClock.now < pebbleUp else { throw BenchError(description: "pebble did not start") }
                usleep(100_000)
            }

            // A directory that does not answer: the hub starts, and says why it has no certificate.
            var failing = try HubProcess(
                executable: executable, namespace: "\(prefix)-h1",
                arguments: [
                    "--domain", domain, "--acme-ca", "https://127.0.0.1:14999/dir", "--listen", "\(internetSubnet).1",
                    "--state",
                    path("failing-state"), "--json", "--no-qr", "--root", page.path,
                ])
            _ = failing.link(timeout: .seconds(10))
            figures.failureSaid =
                failing.line(containing: "\"certificate-failed\"", timeout: .seconds(10))?.line
            failing.stop()

            let started = MpvClient.unixNanos()
            var hub = try HubProcess(
                executable: executable, namespace: "\(prefix)-h1",
                arguments: [
                    "--domain", domain, "--acme-ca", "https://127.0.0.1:14000/dir", "--acme-ca-root", path("ca.pem"),
                    "--listen", "\(internetSubnet).1", "--state", path("hub-state"), "--json", "--no-qr", "--root",
                    page.path,
                    "--media", hubFilms.path,
                ])
            defer { hub.stop() }
            guard let link = hub.link(timeout: .seconds(10)) else {
                throw BenchError(description: "the hub printed no link: \(hub.output)")
            }
            guard link.hasPrefix("https://\(domain)/#hub=") else {
                throw BenchError(description: "the link names another host: \(link)")
            }
            guard let obtained = hub.line(containing: "\"event\":\"certificate\"", timeout: .seconds(30)) else {
                throw BenchError(description: "the hub said no certificate obtained: \(hub.output.suffix(600))")
            }
            figures.certificateObtained = Double(obtained.at - started) / 1e6
            print("  domain: the certificate for \(domain) obtained in \(Int(figures.certificateObtained!)) ms")
            let root = path("issuing-root.pem")
            guard
                try curl(1, ["-o", root, "--cacert", path("ca.pem"), "https://127.0.0.1:15000/roots/0"]).status == 0
            else { throw BenchError(description: "pebble gave no issuing root") }
            figures.pageByName =
                try curl(2, ["-o", "/dev/null", "-w", "%{http_code}", "--cacert", root, "https://\(domain)/"]).output
                == "200"

            // The party shares the hub's film by the URL the hub lists, which names its content.
            guard let announcedHub = hub.line(containing: "\"event\":\"hub\"", timeout: .seconds(1)),
                let object = try? JSONSerialization.jsonObject(with: Data(announcedHub.line.utf8)) as? [String: Any],
                let listed = (object["films"] as? [[String: Any]])?.first?["url"] as? String
            else { throw BenchError(description: "the hub listed no film: \(hub.output)") }
            figures.filmListed = listed
            let party = try AgentProcess(
                executable: executable, name: "ann", subcommand: ["party", listed],
                arguments: [
                    "--hub", link, "--hub-ca", root, "--listen", "\(homeSubnet).2", "--interface", "eth0", "--no-qr",
                    "--root",
                    page.path, "--player", "none",
                ], namespace: "\(prefix)-h2")
            var agents = [party]
            defer {
                for agent in agents { agent.closeInput() }
                for agent in agents { _ = agent.waitForExit(timeout: .seconds(5)) }
            }
            guard let announced = party.waitForEvent(timeout: .seconds(15), where: { $0.name == "party" }),
                let anywhere = announced["anywhere"] as? String
            else { throw BenchError(description: "the party printed no link for anywhere: \(party.diagnostics)") }
            let friend = try AgentProcess(
                executable: executable, name: "ben", subcommand: ["join", anywhere],
                arguments: [
                    "--hub-ca", root, "--interface", "eth0", "--player", "simulated", "--media", homeB.path,
                ],
                namespace: "\(prefix)-h3")
            agents.append(friend)
            let heard = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < heard, !figures.heardThroughHub {
                figures.heardThroughHub =
                    friend.peers(timeout: .seconds(1))?.contains {
                        ($0["name"] as? String) == "ann"
                            && (($0["lastSeenMillis"] as? NSNumber)?.doubleValue ?? .infinity) < 1000
                    } == true
                if !figures.heardThroughHub { usleep(200_000) }
            }
            guard figures.heardThroughHub else {
                throw BenchError(
                    description:
                        "home B never heard home A through the hub: peers \(friend.peers(timeout: .seconds(1)) ?? []); \(friend.diagnostics.suffix(8)) / \(party.diagnostics.suffix(8))"
                )
            }
            figures.ownCopyOfHubFilm = friend.waitForDiagnostic(timeout: .seconds(10)) {
                $0.contains("own copy") && $0.contains(copy)
            }
            if !figures.ownCopyOfHubFilm {
                print("  home B, its last words:")
                for line in friend.diagnostics.suffix(8) { print("    \(line.prefix(300))") }
                for event in friend.allEvents.suffix(6) { print("    \(event.line.prefix(300))") }
            }
            let mark = friend.allEvents.count
            party.send("pause")
            figures.followedPause =
                friend.waitForEvent(from: mark, timeout: .seconds(5), where: { $0.name == "paused" }) != nil
            usleep(300_000)
            dump.terminate()
            waitForExit(dump)
            // Through the NATs: no home's own address on the internet, only its router's.
            let (counted, addresses) = try Locations.run(
                "/usr/bin/tshark",
                [
                    "-r", capture, "-Y", "ip.addr == \(homeSubnet).0/24", "-T", "fields", "-e", "frame.number", "-e",
                    "ip.src", "-e", "ip.dst", "-e", "tcp.flags.str", "-e", "frame.time_relative",
                ])
            guard counted == 0 else { throw BenchError(description: "tshark: \(addresses.prefix(300))") }
            // (tshark's own warnings share the output: a frame's line starts with its number.)
            let frames = addresses.split(separator: "\n").filter { $0.first?.isNumber == true }
            figures.homeAddressesOnInternet = frames.count
            if figures.homeAddressesOnInternet > 0 {
                print("  a home's own address on the internet:\n\(frames.joined(separator: "\n"))")
            }
            (figures.capturedSegments, figures.inClear) = try inspect(
                capture,
                forbidden: [
                    "CONNECT ", "PUB ", "MSG ", "SUB ", "INFO {", "PING\r\n",
                    link.components(separatedBy: "#hub=").last ?? "",
                    anywhere.components(separatedBy: "key=").last ?? "", "Our Film", "our.film", "party",
                ])
            if figures.capturedSegments == 0 {
                print("  tcpdump said: \((try? String(contentsOfFile: dumpLog, encoding: .utf8)) ?? "nothing")")
            }
        }
        return figures
    }

    /// The "internet" of `behindNATs`, and each home's own LAN (the same private range in every
    /// home, as home routers hand out).
    static let internetSubnet = "10.78.0"
    static let homeSubnet = "192.168.1"

    /// An internet and homes behind NAT, in namespaces of their own: `PREFIX-inet` holds the
    /// internet's bridge; `PREFIX-h1`, the hub host, is on it at `internetSubnet.1`; home `i`
    /// (2…homes+1) is a router `PREFIX-ri` on the internet at `internetSubnet.i`, masquerading
    /// (`nft`) what its LAN sends out, and a host `PREFIX-hi` at `homeSubnet.2` behind it, its
    /// default route the router. Nothing reaches a home from outside but answers to what it
    /// sent; the homes reach each other only through the hub. Taken down however `body` ends.
    static func behindNATs<T>(homes: Int, _ body: (String) throws -> T) throws -> T {
        let prefix = "cpn\(getpid() % 10_000)"
        let home = (2...(homes + 1)).map(String.init).joined(separator: " ")
        let up = """
            set -e
            p=\(prefix) inet=\(internetSubnet) lan=\(homeSubnet)
            ip netns add $p-inet
            ip -n $p-inet link set lo up
            ip -n $p-inet link add br0 type bridge
            ip -n $p-inet link set br0 up
            ip netns add $p-h1
            ip -n $p-h1 link set lo up
            ip -n $p-inet link add p1 type veth peer name eth0 netns $p-h1
            ip -n $p-inet link set p1 master br0 up
            ip -n $p-h1 addr add $inet.1/24 dev eth0
            ip -n $p-h1 link set eth0 up
            for i in \(home); do
              ip netns add $p-r$i
              ip netns add $p-h$i
              ip -n $p-r$i link set lo up
              ip -n $p-h$i link set lo up
              ip -n $p-inet link add p$i type veth peer name wan netns $p-r$i
              ip -n $p-inet link set p$i master br0 up
              ip -n $p-r$i addr add $inet.$i/24 dev wan
              ip -n $p-r$i link set wan up
              ip -n $p-r$i link add lan type veth peer name eth0 netns $p-h$i
              ip -n $p-r$i addr add $lan.1/24 dev lan
              ip -n $p-r$i link set lan up
              ip -n $p-h$i addr add $lan.2/24 dev eth0
              ip -n $p-h$i link set eth0 up
              ip -n $p-h$i route add default via $lan.1
              ip -n $p-h$i route add 224.0.0.0/4 dev eth0
              ip netns exec $p-r$i sysctl -qw net.ipv4.ip_forward=1
              ip netns exec $p-r$i nft 'add table ip coplaynat; add chain ip coplaynat outward { type nat hook postrouting priority 100; }; add rule ip coplaynat outward oifname "wan" masquerade; add chain ip coplaynat through { type filter hook forward priority 0; policy drop; }; add rule ip coplaynat through iifname "lan" accept; add rule ip coplaynat through ct state established,related accept'
            done
            """
        let down = """
            p=\(prefix)
            for ns in $p-inet $p-h1 \((2...(homes + 1)).map { "$p-r\($0) $p-h\($0)" }.joined(separator: " ")); do
              ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null
              ip netns del $ns 2>/dev/null
            done
            true
            """
        let (status, output) = try Locations.run("/bin/sh", ["-c", up])
        defer { _ = try? Locations.run("/bin/sh", ["-c", down]) }
        guard status == 0 else { throw BenchError(description: "the homes behind NAT: \(output.suffix(400))") }
        return try body(prefix)
    }

    /// Two NATs: each of `homes` hears the hub (host 1), never another home.
    static func separateHomes(prefix: String, homes: [Int]) throws {
        for home in homes {
            let drops = homes.filter { $0 != home }.map { "add rule inet coplaynat input ip saddr 10.77.0.\($0) drop" }
            let (status, output) = try Locations.run(
                "/usr/sbin/ip",
                [
                    "netns", "exec", "\(prefix)-h\(home)", "nft",
                    ([
                        "add table inet coplaynat",
                        "add chain inet coplaynat input { type filter hook input priority 0; policy accept; }",
                    ] + drops)
                    .joined(separator: "; "),
                ])
            guard status == 0 else { throw BenchError(description: "nft in home \(home): \(output)") }
        }
    }

    public static func printHubDomain(_ figures: HubDomainFigures) {
        print("hub --domain: a certificate from an ACME CA (pebble) for a hub two homes reach by its name")
        print(
            "  coplay hub --domain → certificate obtained: "
                + (figures.certificateObtained.map { String(format: "%.0f ms", $0) } ?? "never"))
        print("  the hub's page fetched by its name, trusting the CA's root only: \(figures.pageByName ? "yes" : "no")")
        print(
            "  home B heard home A through the hub: \(figures.heardThroughHub ? "yes" : "no"); followed a pause: \(figures.followedPause ? "yes" : "no")"
        )
        print("  the hub's film, as listed: \(figures.filmListed ?? "none")")
        print("  home B plays its own copy of the hub's film: \(figures.ownCopyOfHubFilm ? "yes" : "no")")
        let clear = figures.inClear.filter { $0.value > 0 }
        print(
            "  captured on the internet's bridge: \(figures.capturedSegments) TCP segments with a payload; in clear: "
                + (clear.isEmpty ? "nothing (no NATS verb, secret, key, film name or session)" : "\(clear)")
                + "; frames with a home's own address: \(figures.homeAddressesOnInternet)")
        print("  a directory that does not answer → said: \(figures.failureSaid ?? "nothing")")
    }
}

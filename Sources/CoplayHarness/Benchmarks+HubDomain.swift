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
        /// A hub pointed at an ACME directory that does not answer said why it has no certificate.
        public var failureSaid: String?
    }

    /// `coplay hub --domain NAME` as on a VPS, with an ACME CA of the test's own (Debian's pebble,
    /// `PEBBLE_VA_ALWAYS_VALID`: the test LAN has no DNS a public CA could check). On a `Tools/lan`
    /// bridge: the hub and pebble on host 1, home A's party (`--hub LINK`) on host 2, home B's
    /// `coplay join` of the party's link for anywhere on host 3, each home hearing only the hub
    /// (`nft`, as two NATs); the hub's name is in each home's own `/etc/hosts` (`ip netns exec`
    /// binds `/etc/netns/NS/hosts`). The homes trust pebble's issuing root only, as a device
    /// trusts Let's Encrypt's.
    public static func hubDomain(executable: String, bench: String) throws -> HubDomainFigures {
        guard getuid() == 0 else { throw BenchError(description: "the domain check makes namespaces: run it as root") }
        for program in ["caddy", "nats-server", "pebble", "openssl", "nft", "curl"]
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
        try onLAN(hosts: 3, link: nil, dtim: 1, bench: bench) { prefix in
            try separateHomes(prefix: prefix, homes: [2, 3])
            let netns = URL(fileURLWithPath: "/etc/netns")
            for home in 2...3 {
                let folder = netns.appendingPathComponent("\(prefix)-h\(home)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Data("127.0.0.1 localhost\n10.77.0.1 \(domain)\n".utf8)
                    .write(to: folder.appendingPathComponent("hosts"))
            }
            defer {
                for home in 2...3 {
                    try? FileManager.default.removeItem(at: netns.appendingPathComponent("\(prefix)-h\(home)"))
                }
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
                    "--domain", domain, "--acme-ca", "https://127.0.0.1:14999/dir", "--listen", "10.77.0.1", "--state",
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
                    "--listen", "10.77.0.1", "--state", path("hub-state"), "--json", "--no-qr", "--root", page.path,
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
                    "--hub", link, "--hub-ca", root, "--listen", "10.77.0.2", "--interface", "eth0", "--no-qr",
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
        }
        return figures
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
        print("  a directory that does not answer → said: \(figures.failureSaid ?? "nothing")")
    }
}

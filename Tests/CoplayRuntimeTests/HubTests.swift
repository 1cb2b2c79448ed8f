import CoplayCore
import Testing

@testable import CoplayRuntime

/// `coplay hub`'s link, its command line and the configuration it gives Caddy and the leaf nodes.
@Suite struct HubTests {
    let secret = "0123456789abcdef0123456789abcdef"

    @Test func aHubLink_readsBackAsPrinted_andAsAnInvitationsRelay() throws {
        let link = HubLink(host: "hub.example.org", port: 443, secret: secret)
        #expect(link.text == "https://hub.example.org/#hub=\(secret)")
        #expect(try HubLink.parse(link.text).get() == link)
        // nats-server reads a wss:// remote with no port as its leaf port, 7422: 443 is named.
        #expect(link.leaf(caFile: nil).url == "wss://leaf:\(secret)@hub.example.org:443")
        let other = HubLink(host: "10.77.0.1", port: 8443, secret: secret)
        #expect(other.relay == "wss://\(secret)@10.77.0.1:8443" && other.page == "https://10.77.0.1:8443/")
        #expect(try HubLink.parse(other.text).get() == other)
        #expect(try HubLink.parse(other.relay).get() == other)
        #expect(other.leaf(caFile: nil).url == "wss://leaf:\(secret)@10.77.0.1:8443")
        #expect(
            other.leaf(caFile: "/ca.crt").configuration
                == "leafnodes { reconnect: 1, remotes [ { url: \"wss://leaf:\(secret)@10.77.0.1:8443\", tls { ca_file: \"/ca.crt\" } } ] }"
        )
    }

    @Test func aMangledHubLink_isRefusedInWords() {
        func refusal(_ text: String) -> String? {
            if case .failure(let error) = HubLink.parse(text) { return error.message }
            return nil
        }
        #expect(refusal("http://hub.example.org/#hub=\(secret)")?.contains("https://") == true)
        #expect(refusal("https://hub.example.org/")?.contains("no #hub=") == true)
        #expect(refusal("https://hub.example.org/#key=\(secret)")?.contains("not hub=") == true)
        #expect(refusal("https://hub.example.org/#hub=abc")?.contains("32 lowercase hex") == true)
        #expect(refusal("https://hub.example.org/#hub=\(secret.uppercased())")?.contains("lowercase") == true)
        #expect(refusal("https://hub.example.org:0/#hub=\(secret)")?.contains("port") == true)
        #expect(refusal("https://hub.example.org:99999/#hub=\(secret)")?.contains("port") == true)
        #expect(refusal("https://hub\"x/#hub=\(secret)")?.contains("host") == true)
        #expect(refusal("https://:443/#hub=\(secret)")?.contains("host") == true)
    }

    func plan(_ arguments: [String]) -> Result<Invocation, UsageError> { HubPlan.parse(arguments[...]) }

    @Test func theCommandLine_needsOneCertificate_andSaysWhatIsWrong() throws {
        guard
            case .success(.hub(let internalCA)) = plan(["--tls", "internal", "--listen", "10.0.0.5", "--port", "8443"])
        else {
            Issue.record("--tls internal")
            return
        }
        #expect(internalCA.tls == .internalCA && internalCA.port == 8443 && internalCA.linkHost == "10.0.0.5")
        guard case .success(.hub(let domain)) = plan(["--domain", "Hub.Example.org"]) else {
            Issue.record("--domain")
            return
        }
        #expect(domain.tls == .domain("hub.example.org") && domain.port == 443 && domain.linkHost == "hub.example.org")
        guard case .success(.hub(let files)) = plan(["--cert", "/c.pem", "--key", "/k.pem", "--name", "friend.lan"])
        else {
            Issue.record("--cert --key")
            return
        }
        #expect(files.tls == .files(certificate: "/c.pem", key: "/k.pem") && files.linkHost == "friend.lan")
        func refusal(_ arguments: [String]) -> String? {
            if case .failure(let error) = plan(arguments) { return error.message }
            return nil
        }
        #expect(refusal([])?.contains("needs its certificate") == true)
        #expect(refusal(["--tls", "internal", "--domain", "a.example"])?.contains("give one of") == true)
        #expect(refusal(["--cert", "/c.pem"]) == "--cert and --key go together")
        #expect(refusal(["--tls", "acme"])?.contains("--tls takes internal") == true)
        #expect(refusal(["--tls", "internal", "--listen", "::1"])?.contains("IPv4") == true)
        #expect(refusal(["--tls", "internal", "--port", "0"])?.contains("1 to 65535") == true)
        #expect(refusal(["--domain", "10.0.0.1"])?.contains("DNS name") == true)
        #expect(refusal(["--tls", "internal", "--bogus", "x"]) == "hub: unknown option '--bogus'")
        #expect(refusal(["--tls"]) == "--tls needs a value")
        #expect(refusal(["--tls", "internal", "--media", "/nonexistent"])?.contains("not a folder") == true)
        #expect(plan(["--help"]).isSuccess)
        #expect(
            refusal(["--tls", "internal", "--acme-ca", "https://ca.example/dir"])?.contains("go with --domain") == true)
        #expect(refusal(["--domain", "a.example", "--acme-ca", "http://ca.example/dir"])?.contains("https://") == true)
        #expect(
            refusal(["--domain", "a.example", "--acme-ca", "https://ca.example/\"x"])?.contains("https://") == true)
        #expect(refusal(["--domain", "a.example", "--acme-ca-root", "/"]) == "--acme-ca-root goes with --acme-ca URL")
        #expect(refusal(["--domain", "a.example", "--acme-ca-root", "/nonexistent"])?.contains("No such file") == true)
    }

    /// With a domain, the ACME directory a person names and the root that directory's HTTPS is
    /// trusted by go to Caddy as they were given.
    @Test func aDomainsCertificate_comesFromTheACMEDirectoryNamed() throws {
        guard
            case .success(.hub(let hub)) = plan([
                "--domain", "hub.example.org", "--acme-ca", "https://acme-staging-v02.api.letsencrypt.org/directory",
                "--acme-ca-root", "/",
            ])
        else {
            Issue.record("plan")
            return
        }
        let text = Hub.caddyfile(hub, host: "hub.example.org", webSocketPort: 4567, secret: secret)
        #expect(text.contains("acme_ca \"https://acme-staging-v02.api.letsencrypt.org/directory\""), "\(text)")
        #expect(text.contains("acme_ca_root \"/\""), "\(text)")
        #expect(text.contains("https://hub.example.org:443 {") && !text.contains("local_certs"))
    }

    /// Caddy's log, as Caddy 2.6 writes it: the first reason a certificate is not obtained is
    /// said once (Caddy retries), and its arrival once; other domains' and other loggers' lines
    /// are not the hub's news.
    @Test func theCertificatesArrival_andTheFirstReasonItDidNot_areSaidOnce() {
        let failed =
            #"{"level":"error","ts":1796297471.26,"logger":"tls.obtain","msg":"could not get certificate from issuer","identifier":"hub.example.org","issuer":"acme","error":"registering account [] with server: connection refused"}"#
        let retry =
            #"{"level":"error","ts":1796297471.27,"logger":"tls.obtain","msg":"will retry","error":"[hub.example.org] Obtain: connection refused","attempt":1}"#
        let other =
            #"{"level":"info","ts":1796297441.90,"logger":"tls.obtain","msg":"certificate obtained successfully","identifier":"other.example.org"}"#
        let obtained =
            #"{"level":"info","ts":1796297531.90,"logger":"tls.obtain","msg":"certificate obtained successfully","identifier":"hub.example.org"}"#
        var watch = CertificateWatch(domain: "hub.example.org", json: false)
        var log = [failed, retry, other, "not json", #"{"logger":"tls.obtain""#].joined(separator: "\n")
        let first = watch.read(log)
        #expect(
            first == [
                .init(
                    text:
                        "coplay hub: no certificate for hub.example.org yet (Caddy tries again): registering account [] with server: connection refused",
                    isError: true)
            ])
        log += "\n" + failed
        #expect(watch.read(log).isEmpty && !watch.obtained, "said once")
        log += "\n" + obtained
        #expect(
            watch.read(log) == [
                .init(text: "coplay hub: the certificate for hub.example.org is obtained", isError: false)
            ])
        #expect(watch.obtained)
        var json = CertificateWatch(domain: "hub.example.org", json: true)
        #expect(
            json.read(obtained).map(\.text) == [#"{"event":"certificate","domain":"hub.example.org"}"#])
    }

    /// Caddy carries the WebSocket upgrades to nats-server on loopback and serves the page; it
    /// speaks HTTP/1.1 and 2 over TCP only, with no admin endpoint, and with its own CA, no HTTP
    /// listener at all.
    @Test func caddysConfiguration() throws {
        guard
            case .success(.hub(var hub)) = plan([
                "--tls", "internal", "--port", "8443", "--state", "/var/lib/hub", "--media", "/",
            ])
        else {
            Issue.record("plan")
            return
        }
        hub.webRoot = "/usr/share/coplay/web"
        let text = Hub.caddyfile(hub, host: "10.0.0.5", webSocketPort: 4567, secret: secret)
        let media = Hub.mediaPath(secret: secret, index: 0)
        #expect(media.count == "/media/".count + 32 + 1 && media != Hub.mediaPath(secret: secret, index: 1))
        #expect(media != Hub.mediaPath(secret: String(secret.reversed()), index: 0), "made from the secret")
        #expect(text.contains("handle_path \(media)* {\n\t\troot * \"/\"\n\t\tfile_server {\n\t\t\thide .*"), "\(text)")
        for part in [
            "admin off", "storage file_system \"/var/lib/hub/caddy\"", "https_port 8443", "protocols h1 h2",
            "auto_https disable_redirects", "https://10.0.0.5:8443 {", "bind 0.0.0.0", "tls internal",
            "@nats header Upgrade websocket", "reverse_proxy @nats 127.0.0.1:4567", "root * \"/usr/share/coplay/web\"",
            "Cross-Origin-Embedder-Policy credentialless",
        ] {
            #expect(text.contains(part), "\(part) in:\n\(text)")
        }
        hub.tls = .domain("hub.example.org")
        let acme = Hub.caddyfile(hub, host: "hub.example.org", webSocketPort: 4567, secret: secret)
        #expect(!acme.contains("tls internal") && !acme.contains("disable_redirects"))
    }
}

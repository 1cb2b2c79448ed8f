import Testing

@testable import CoplayCore

/// The relay's client as the core runs it for every shell: the connection's life (open, the
/// handshake, keep-alive, a silent server given up, failover across what a cluster announces)
/// as outputs a shell carries out, with no socket.
@Suite struct NatsClientTests {
    private let info =
        #"INFO {"server_id":"A","version":"2.10.0","max_payload":1048576,"connect_urls":["10.0.0.2:4222"],"ws_connect_urls":["10.0.0.2:8080","relay-b.example:8080"]}"#
        + "\r\n"

    private func at(_ millis: Int64) -> MonotonicInstant { MonotonicInstant(nanos: millis * 1_000_000) }

    private func webClient(_ seeds: [String], settings: Settings = Settings()) -> NatsClient {
        NatsClient(
            seeds: seeds.compactMap(RelayServer.webSocket), subjects: ["coplay.s.x"], clientName: "coplay-web",
            settings: settings, seed: 7, resolve: nil)
    }

    private func sent(_ outputs: [NatsClient.Output]) -> String {
        outputs.compactMap { if case .send(let bytes) = $0 { String(decoding: bytes, as: UTF8.self) } else { nil } }
            .joined()
    }

    /// Opens, reads INFO and the PONG: returns what the handshake said.
    private func establish(_ client: inout NatsClient, at now: MonotonicInstant) -> [NatsClient.Output] {
        var out = client.opened(now: now)
        out += client.received(Array(info.utf8), now: now)
        out += client.received(Array("PONG\r\n".utf8), now: now)
        return out
    }

    @Test func invitationRelaysParse_withTheirTokens_andBadOnesAreRefused() {
        let plain = RelayServer.webSocket("ws://s%40cret@10.79.0.1:8080/")
        #expect(plain?.webSocketURL == "ws://10.79.0.1:8080/")
        #expect(plain?.credentials == NatsCommand.Credentials(token: "s@cret"))
        #expect(plain?.endpoint == nil, "a browser resolves the host itself")
        #expect(RelayServer.webSocket("wss://relay.example")?.webSocketURL == "wss://relay.example:443/")
        #expect(RelayServer.webSocket("ws://[::1]:9")?.webSocketURL == "ws://[::1]:9/")
        for bad in [
            "nats://10.0.0.1", "ws://", "ws://@host", "ws://host:0", "ws://host:70000", "ws://host/path",
            "ws://a%zz@host", "ws://t%0A@host", "http://host",
        ] {
            #expect(RelayServer.webSocket(bad) == nil, "\(bad)")
        }
    }

    @Test func connects_subscribes_andIsEstablishedAtThePONG() {
        var client = webClient(["ws://tok@10.0.0.1:8080"])
        let start = client.start(now: at(0))
        #expect(start == [.open(client.server)])
        #expect(client.server.webSocketURL == "ws://10.0.0.1:8080/")
        let out = establish(&client, at: at(10))
        let hello = sent(out)
        #expect(hello.hasPrefix("CONNECT {"))
        #expect(hello.contains(#""auth_token":"tok""#))
        #expect(hello.contains("SUB coplay.s.x 1\r\nPING\r\n"))
        #expect(out.contains(.connected(server: "ws://10.0.0.1:8080", first: true)))
        #expect(client.isEstablished && client.statistics.connected)
        // A frame arrives as a frame, and one published goes out as a PUB.
        let arrived = client.received(Array("MSG coplay.s.x 1 3\r\nabc\r\n".utf8), now: at(20))
        #expect(arrived == [.frame(subject: "coplay.s.x", payload: Array("abc".utf8))])
        #expect(
            sent(client.publish([1, 2], subject: "coplay.s.x", buffered: 0, now: at(20)))
                == "PUB coplay.s.x 2\r\n\u{1}\u{2}\r\n")
        // Behind a full buffer it is dropped, counted.
        #expect(client.publish([1, 2], subject: "coplay.s.x", buffered: 262_140, now: at(20)).isEmpty)
        #expect(client.statistics.framesDropped == 1 && client.statistics.framesPublished == 1)
    }

    /// Subjects that change on a live connection (a seat taken, the speaker's hellos begun and
    /// given up) are a SUB for each one added and an UNSUB for each dropped, with no reconnection;
    /// an id given up is used again, so the table never outgrows the subjects held at once, and a
    /// message still on its way on a dropped subject is stray, not delivered.
    @Test func subjectsChangedOnALiveConnection_areSubscribedAndUnsubscribedInPlace() {
        var client = webClient(["ws://10.0.0.1:8080"])
        _ = client.start(now: at(0))
        _ = establish(&client, at: at(10))
        let relay = Settings().relay
        let seated = client.subscriptionsChanged(to: ["coplay.s.x", "s.stage", "s.speaker"], relay: relay, now: at(20))
        #expect(sent(seated) == "SUB s.stage 2\r\nSUB s.speaker 3\r\n")
        #expect(
            client.received(Array("MSG s.speaker 3 1\r\nh\r\n".utf8), now: at(21))
                == [.frame(subject: "s.speaker", payload: [0x68])])
        let stopped = client.subscriptionsChanged(to: ["coplay.s.x", "s.stage"], relay: relay, now: at(30))
        #expect(sent(stopped) == "UNSUB 3\r\n")
        #expect(client.received(Array("MSG s.speaker 3 1\r\nh\r\n".utf8), now: at(31)).isEmpty, "stray")
        #expect(sent(client.subscriptionsChanged(to: ["coplay.s.x", "s.stage"], relay: relay, now: at(32))).isEmpty)
        for round in 0..<50 {
            let subjects = ["coplay.s.x", "s.stage"] + (round.isMultiple(of: 2) ? ["s.speaker"] : [])
            #expect(!sent(client.subscriptionsChanged(to: subjects, relay: relay, now: at(40))).isEmpty)
        }
        #expect(
            sent(client.subscriptionsChanged(to: ["coplay.s.x", "s.stage", "s.speaker"], relay: relay, now: at(50)))
                == "SUB s.speaker 3\r\n", "the id given up is the one used again")
        // A connection made again subscribes to the subjects as they are, each once.
        _ = client.reconnectNow(now: at(60))
        _ = client.opened(now: at(60))
        let again = sent(client.received(Array(info.utf8), now: at(70)))
        #expect(again.contains("SUB coplay.s.x 1\r\nSUB s.stage 2\r\nSUB s.speaker 3\r\nPING"))
    }

    /// A server that refuses the credentials (a stale link's token) is said to have refused
    /// them, as a state a display shows; a server that drops the connection is not.
    @Test func aRefusalOfTheCredentials_isSaid_andAClosedConnectionIsNot() {
        var client = webClient(["ws://stale@10.0.0.1:8080"])
        _ = client.start(now: at(0))
        _ = client.opened(now: at(1))
        let out = client.received(Array((info + "-ERR 'Authorization Violation'\r\n").utf8), now: at(2))
        #expect(out.contains(.refused(server: "ws://10.0.0.1:8080")))
        #expect(
            out.contains {
                if case .diagnose(let text) = $0 { text.contains("Authorization Violation") } else { false }
            })
        var other = webClient(["ws://tok@10.0.0.1:8080"])
        _ = other.start(now: at(0))
        _ = establish(&other, at: at(1))
        let closed = other.closed("the connection was reset", now: at(5))
        #expect(!closed.contains { if case .refused = $0 { true } else { false } })
        #expect(closed.contains { if case .lost = $0 { true } else { false } })
    }

    /// No server reached for `unreachableNotice` is said once, by the client (the page has no timer
    /// of its own for it): at 5 s after the start while every attempt fails, and again 5 s after
    /// a connection that was up is lost; a connection made before then says nothing.
    @Test func noServerReachedForFiveSeconds_isSaidOnce_andAFailoverIsNot() {
        func unreachable(_ outputs: [NatsClient.Output]) -> [Bool] {
            outputs.compactMap { if case .unreachable(_, let ever) = $0 { ever } else { nil } }
        }
        /// Runs the client's timer to `until` ms, each attempt failing as the transport closes;
        /// the instants (ms) at which it said unreachable, and whether it had been connected.
        func run(_ client: inout NatsClient, from: Int64, until: Int64) -> [(Int64, Bool)] {
            var said: [(Int64, Bool)] = []
            var now = from
            while now < until {
                guard let wake = client.nextWake?.nanos else { break }
                now = max(now, (wake + 999_999) / 1_000_000)  // the next whole ms at or after it
                let out = client.tick(now: at(now))
                said += unreachable(out).map { (now, $0) }
                // A server that answers nothing: the transport closes at once.
                if out.contains(where: { if case .open = $0 { true } else { false } }) {
                    said += unreachable(client.closed("refused", now: at(now))).map { (now, $0) }
                }
            }
            return said
        }
        var client = webClient(["ws://tok@10.0.0.1:8080"])
        #expect(unreachable(client.start(now: at(0))).isEmpty)
        _ = client.closed("connection refused", now: at(0))
        let never = run(&client, from: 0, until: 12_000)
        #expect(never.map(\.0) == [5_000] && never.map(\.1) == [false], "once, at 5 s: \(never)")

        var other = webClient(["ws://tok@10.0.0.1:8080"])
        _ = other.start(now: at(0))
        _ = establish(&other, at: at(1))
        _ = other.closed("the connection was reset", now: at(3_000))
        let lost = run(&other, from: 3_000, until: 20_000)
        #expect(lost.map(\.0) == [8_000] && lost.map(\.1) == [true], "5 s after the loss: \(lost)")

        var quick = webClient(["ws://tok@10.0.0.1:8080"])
        _ = quick.start(now: at(0))
        _ = quick.closed("connection refused", now: at(0))
        _ = run(&quick, from: 0, until: 4_000)
        _ = quick.reconnectNow(now: at(4_000))
        _ = establish(&quick, at: at(4_100))
        var quiet: [Bool] = []
        for now in stride(from: Int64(4_200), through: 12_000, by: 100) {
            quiet += unreachable(quick.received(Array("PONG\r\n".utf8), now: at(now)))  // a live server
            quiet += unreachable(quick.tick(now: at(now)))
        }
        #expect(quick.isEstablished && quiet.isEmpty, "reached within the notice: nothing said")
    }

    /// The tab whose server froze: a PING after `pingInterval` of silence, the server given up
    /// at `deadAfter` (said as lost), and the next server the cluster announced tried at once.
    @Test func aSilentServer_isGivenUpWithinASecond_forOneTheClusterAnnounced() {
        var client = webClient(["ws://tok@10.0.0.1:8080"])
        _ = client.start(now: at(0))
        _ = establish(&client, at: at(0))
        #expect(
            client.servers.servers.map(\.name) == [
                "ws://10.0.0.1:8080", "ws://10.0.0.2:8080", "ws://relay-b.example:8080",
            ],
            "a WebSocket client learns ws_connect_urls, names and all")
        var now: Int64 = 0
        var pinged: Int64?
        var lost: Int64?
        var opened: RelayServer?
        while now < 2_000, opened == nil {
            now = (client.nextWake.map { $0.nanos / 1_000_000 } ?? now + 10)
            for output in client.tick(now: at(now)) {
                switch output {
                case .send(let bytes) where bytes == NatsCommand.ping: pinged = pinged ?? now
                case .lost: lost = now
                case .open(let server): opened = server
                default: continue
                }
            }
        }
        #expect(pinged == 250)
        #expect(lost == 700, "the page is told within a second")
        #expect(opened?.name == "ws://10.0.0.2:8080", "the next server of the cluster, at once")
        // That one answers: connected again, not for the first time, with the same subscriptions.
        let again = establish(&client, at: at(now + 5))
        #expect(again.contains(.connected(server: "ws://10.0.0.2:8080", first: false)))
        #expect(sent(again).contains("SUB coplay.s.x 1"))
        #expect(client.statistics.reconnections == 1)
    }

    /// A whole round of servers failed: the wait doubles from 100 ms to 5 s, jittered by a
    /// quarter, and a connection that never opens is given up at `connectTimeout`.
    @Test func aRoundOfFailures_backsOffWithJitter_andANeverOpenedConnectionTimesOut() {
        var settings = Settings()
        settings.relay.unreachableNotice = .seconds(3_600)  // its wake is not an attempt's
        var client = webClient(["ws://10.0.0.1:8080"], settings: settings)
        _ = client.start(now: at(0))
        let timedOut = client.tick(now: at(1_000))
        #expect(
            timedOut.contains {
                if case .diagnose(let text) = $0 { text.contains("no connection within") } else { false }
            })
        var waits: [Int64] = []
        var now = at(1_000)
        for _ in 0..<10 {
            guard let wake = client.nextWake else { break }
            waits.append((wake - now).nanoseconds / 1_000_000)
            now = wake
            let opened = client.tick(now: now)
            #expect(opened.contains { if case .open = $0 { true } else { false } })
            _ = client.closed("refused", now: now)
        }
        #expect(waits.count == 10)
        #expect(waits[0] >= 75 && waits[0] <= 125)
        #expect(waits[1] >= 150 && waits[1] <= 250)
        #expect(waits.suffix(3).allSatisfy { $0 >= 3_750 && $0 <= 6_250 })
        #expect(Set(waits.suffix(3)).count > 1, "jittered, not in step")
    }

    /// The shell says its path changed (a page restored from a freeze): the connection is made
    /// again at once, and said lost while it is.
    @Test func reconnectNow_closesAndOpensAtOnce() {
        var client = webClient(["ws://10.0.0.1:8080"])
        _ = client.start(now: at(0))
        _ = establish(&client, at: at(0))
        let out = client.reconnectNow(now: at(50))
        #expect(out.first == .close)
        #expect(out.contains { if case .lost = $0 { true } else { false } })
        #expect(out.last == .open(client.server))
        #expect(client.publish([1], subject: "coplay.s.x", buffered: 0, now: at(51)).isEmpty, "not connected")
        #expect(client.close() == [.close])
        #expect(client.tick(now: at(10_000)).isEmpty && client.nextWake == nil)
    }

    /// What nats-server 2.9.10 sends a WebSocket client: its cluster's WebSocket listeners in
    /// `connect_urls`, its own among them.
    @Test func aWebSocketClient_readsTheListenersInConnectURLs() {
        var client = webClient(["ws://tok@127.0.0.1:49105"])
        _ = client.start(now: at(0))
        _ = client.opened(now: at(0))
        _ = client.received(
            Array(#"INFO {"version":"2.9.10","connect_urls":["127.0.0.1:49105","127.0.0.1:49102"]}"#.utf8) + [13, 10],
            now: at(0))
        _ = client.received(Array("PONG\r\n".utf8), now: at(0))
        #expect(client.servers.servers.map(\.name) == ["ws://127.0.0.1:49105", "ws://127.0.0.1:49102"])
    }

    /// A native shell connects to addresses: an announced host name is not kept.
    @Test func aNativeClientLearnsAddressesOnly() {
        var client = NatsClient(
            seeds: [
                RelayServer(
                    endpoint: Endpoint(address: 0x0A00_0001, port: 4222), name: "10.0.0.1:4222", credentials: .init())
            ],
            subjects: ["s"], clientName: "coplay", settings: Settings(), seed: 1)
        _ = client.start(now: at(0))
        _ = client.opened(now: at(0))
        _ = client.received(
            Array(
                #"INFO {"connect_urls":["10.0.0.2:4222","relay-b.example:4222"],"ws_connect_urls":["10.0.0.2:8080"]}"#
                    .utf8) + [13, 10],
            now: at(0))
        _ = client.received(Array("PONG\r\n".utf8), now: at(0))
        #expect(client.servers.servers.map(\.name) == ["10.0.0.1:4222", "10.0.0.2:4222"])
        #expect(client.servers.servers[1].endpoint == Endpoint(address: 0x0A00_0002, port: 4222))
    }
}

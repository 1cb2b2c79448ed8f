import Testing

@testable import CoplayCore
@testable import CoplayRuntime

/// The NATS client's parser and session against the exchanges of the protocol's documentation
/// (docs.nats.io, "Client Protocol"), and against a server that is broken or hostile.
@Suite struct NatsProtocolTests {
    private func parser(payloadMax: Int = 1229) -> NatsParser {
        NatsParser(lineBytesMax: 4096, payloadBytesMax: payloadMax)
    }

    private let documentedInfo =
        #"INFO {"server_id":"Zk0GQ3JBSrg3oyxCRRlE09","version":"2.9.10","go":"go1.19","host":"0.0.0.0","port":4222,"headers":true,"max_payload":1048576,"proto":1,"auth_required":true,"connect_urls":["10.0.0.184:4333","192.168.129.1:4333","192.168.192.1:4333"]}"#
        + "\r\n"

    @Test func readsTheDocumentedServerMessages() throws {
        var parser = parser()
        let stream =
            documentedInfo + "MSG FOO.BAR 9 11\r\nHello World\r\n" + "MSG FOO.BAR 9 GREETING.34 11\r\nHello World\r\n"
            + "PING\r\n" + "pong\r\n" + "+OK\r\n" + "-ERR 'Authorization Violation'\r\n" + "MSG A 1 0\r\n\r\n"
        let messages = try parser.feed(Array(stream.utf8))
        guard messages.count == 8, case .info(let info) = messages[0] else {
            Issue.record("expected INFO and seven more, got \(messages)")
            return
        }
        #expect(info.serverID == "Zk0GQ3JBSrg3oyxCRRlE09")
        #expect(info.version == "2.9.10")
        #expect(info.maxPayload == 1_048_576)
        #expect(info.authRequired)
        #expect(!info.tlsRequired)
        #expect(info.connectURLs == ["10.0.0.184:4333", "192.168.129.1:4333", "192.168.192.1:4333"])
        #expect(messages[1] == .msg(subject: "FOO.BAR", sid: "9", replyTo: nil, payload: Array("Hello World".utf8)))
        #expect(
            messages[2]
                == .msg(subject: "FOO.BAR", sid: "9", replyTo: "GREETING.34", payload: Array("Hello World".utf8)))
        #expect(Array(messages[3...6]) == [.ping, .pong, .ok, .err("Authorization Violation")])
        #expect(messages[7] == .msg(subject: "A", sid: "1", replyTo: nil, payload: []))
    }

    /// TCP cuts the stream anywhere: every split gives the same messages.
    @Test func givesTheSameMessagesWhereverTheStreamIsCut() throws {
        let stream = Array(
            ("PING\r\nMSG S.all 1 5\r\n\u{0}\r\n\u{1}x\r\n" + documentedInfo + "MSG S.p.1 2 3\r\nabc\r\n").utf8)
        var whole = parser()
        let expected = try whole.feed(stream)
        #expect(expected.count == 4)
        for cut in 0...stream.count {
            var split = parser()
            let messages = try split.feed(stream[..<cut]) + split.feed(stream[cut...])
            #expect(messages == expected, "cut at \(cut)")
        }
        var bytewise = parser()
        var messages: [NatsServerMessage] = []
        for byte in stream { messages += try bytewise.feed([byte]) }
        #expect(messages == expected)
    }

    @Test func readsPastAMessageTooLargeToBeAFrameAndCountsIt() throws {
        var parser = parser(payloadMax: 8)
        let big = [UInt8](repeating: 0x41, count: 5000)
        var stream = Array("MSG S 1 5000\r\n".utf8) + big + Array("\r\nMSG S 1 3\r\nabc\r\n".utf8)
        var messages: [NatsServerMessage] = []
        while !stream.isEmpty {
            messages += try parser.feed(stream.prefix(700))
            stream.removeFirst(min(700, stream.count))
        }
        #expect(messages == [.msg(subject: "S", sid: "1", replyTo: nil, payload: Array("abc".utf8))])
        #expect(parser.oversizedSkipped == 1)
    }

    @Test func cutsABrokenOrHostileServer() {
        let hostile: [(String, [UInt8])] = [
            ("an endless line", [UInt8](repeating: 0x41, count: 5000)),
            ("an unknown operation", Array("HELLO there\r\n".utf8)),
            ("a MSG beyond max_payload", Array("MSG S 1 9223372036854775807\r\n".utf8)),
            ("a MSG size that is no number", Array("MSG S 1 -5\r\n".utf8)),
            ("a MSG with too few fields", Array("MSG S\r\n".utf8)),
            ("a payload not ended by CRLF", Array("MSG S 1 2\r\nabXY".utf8)),
            ("an INFO that is not JSON", Array("INFO {\"a\":\r\n".utf8)),
            ("an INFO that is an array", Array("INFO []\r\n".utf8)),
            ("a control byte", Array("PI\u{1}NG\r\n".utf8)),
            ("max_payload of zero", Array("INFO {\"max_payload\":0}\r\n".utf8)),
        ]
        for (what, bytes) in hostile {
            var parser = parser()
            #expect(throws: NatsParser.Failure.self, "\(what)") { _ = try parser.feed(bytes) }
        }
        // A max_payload and a MSG size at Int's end: cut, not an overflow.
        var huge = parser()
        #expect(throws: NatsParser.Failure.self) {
            _ = try huge.feed(
                Array("INFO {\"max_payload\":9223372036854775807}\r\nMSG S 1 9223372036854775806\r\n".utf8))
        }
        // A capture whose TCP sequence number jumps by 2^31 (Int32.min ahead): no trap.
        var streams = RelayStreams()
        let endpoint = Endpoint(address: 0x7F00_0001, port: 4222)
        for sequence: UInt32 in [1, 7 &+ (1 << 31)] {  // 7: the next byte expected after the first
            _ = streams.add(
                CapturedSegment(
                    timestampNanos: 0, source: endpoint, destination: endpoint, sequence: sequence, isSyn: false,
                    payload: Array("PING\r\n".utf8)[...]))
        }
    }

    /// A server's `max_payload` bounds what it accepts in a PUB, not what it delivers: in a
    /// cluster, a message published through a server with a larger limit arrives whole. Within
    /// a frame's bound it is read (it was cut, and an agent on a server with `max_payload` 256
    /// reconnected 26 times in 13 s); beyond it, read past; beyond any server's limit, cut.
    @Test func aMessageOverTheServersOwnLimit_isRead_notCut() throws {
        var parser = parser()
        let messages = try parser.feed(Array("INFO {\"max_payload\":4}\r\nMSG S 1 5\r\nabcde\r\nPING\r\n".utf8))
        #expect(messages.count == 3)
        #expect(messages[1] == .msg(subject: "S", sid: "1", replyTo: nil, payload: Array("abcde".utf8)))
        var skipping = self.parser()
        let skipped = try skipping.feed(
            Array("MSG S 1 5000\r\n".utf8) + [UInt8](repeating: 0x61, count: 5000) + Array("\r\nPONG\r\n".utf8))
        #expect(skipped == [.pong] && skipping.oversizedSkipped == 1)
        var cut = self.parser()
        #expect(throws: NatsParser.Failure.self) { _ = try cut.feed(Array("MSG S 1 67108865\r\n".utf8)) }
    }

    /// Random bytes and mutations of a real exchange: an error or messages, never a trap, and
    /// the parser's buffer stays within its bound.
    @Test func survivesRandomAndMutatedInput() {
        var random = SplitMix64(seed: 28)
        let valid = Array((documentedInfo + "MSG coplay.x.all 1 4\r\nabcd\r\nPING\r\n").utf8)
        for round in 0..<3000 {
            var parser = parser(payloadMax: 64)
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            } else {
                bytes = valid
                for _ in 0..<(1 + random.next() % 4) {
                    bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            var offset = 0
            while offset < bytes.count {
                let count = 1 + Int(random.next() % 64)
                do {
                    _ = try parser.feed(bytes[offset..<min(bytes.count, offset + count)])
                } catch {
                    break
                }
                offset += count
            }
        }
    }

    @Test func writesTheDocumentedClientCommands() throws {
        #expect(
            String(decoding: NatsCommand.pub("FOO", payload: Array("Hello NATS!".utf8)), as: UTF8.self)
                == "PUB FOO 11\r\nHello NATS!\r\n")
        #expect(String(decoding: NatsCommand.sub("FOO", sid: 1), as: UTF8.self) == "SUB FOO 1\r\n")
        let connect = String(decoding: NatsCommand.connect(.init(token: "s3cr\"et"), name: "coplay A"), as: UTF8.self)
        #expect(connect.hasPrefix("CONNECT {") && connect.hasSuffix("}\r\n"))
        let json = try JSONParser.parse(Array(connect.utf8.dropFirst("CONNECT ".count).dropLast(2)))
        #expect(json["verbose"] == .bool(false))
        #expect(json["pedantic"] == .bool(false))
        #expect(json["echo"] == .bool(false))
        #expect(json["auth_token"]?.string == "s3cr\"et")
        #expect(json["user"] == nil)
        let userPass = String(
            decoding: NatsCommand.connect(.init(user: "alice", password: "p w"), name: "x"), as: UTF8.self)
        let credentials = try JSONParser.parse(Array(userPass.utf8.dropFirst("CONNECT ".count).dropLast(2)))
        #expect(credentials["user"]?.string == "alice")
        #expect(credentials["pass"]?.string == "p w")
    }

    // MARK: The session

    private func session(now: MonotonicInstant = MonotonicInstant(nanos: 0)) -> NatsSession {
        NatsSession(
            credentials: .init(token: "t"), subjects: ["coplay.x.all", "coplay.x.p.1"], clientName: "coplay test",
            settings: Settings(), now: now)
    }

    private func text(_ outputs: [NatsSession.Output]) -> String {
        outputs.compactMap { if case .send(let bytes) = $0 { String(decoding: bytes, as: UTF8.self) } else { nil } }
            .joined()
    }

    @Test func sessionSubscribesAfterINFOAndIsEstablishedAtThePONG() {
        var session = session()
        let t0 = MonotonicInstant(nanos: 0)
        let hello = session.received(Array(documentedInfo.utf8), now: t0)
        let sent = text(hello)
        #expect(sent.hasPrefix("CONNECT {"))
        #expect(sent.contains("SUB coplay.x.all 1\r\nSUB coplay.x.p.1 2\r\nPING\r\n"))
        #expect(session.phase == .awaitingPong)
        let established = session.received(Array("PONG\r\n".utf8), now: t0 + .milliseconds(1))
        guard case .established(let info)? = established.first else {
            Issue.record("expected established, got \(established)")
            return
        }
        #expect(info.maxPayload == 1_048_576)
        #expect(session.phase == .established)
        let message = session.received(
            Array("MSG coplay.x.p.1 2 3\r\nabc\r\nMSG coplay.x.all 7 1\r\nz\r\nMSG other 1 1\r\nq\r\nPING\r\n".utf8),
            now: t0 + .milliseconds(2))
        #expect(message.first == .message(subject: "coplay.x.p.1", payload: Array("abc".utf8)))
        #expect(message.count == 2)  // the MSG on a sid never made, and on a subject not its sid's, are stray
        #expect(text(message) == "PONG\r\n")
        #expect(session.strayMessages == 2)
    }

    @Test func sessionRefusesBadCredentialsAndTLS() {
        var refused = session()
        _ = refused.received(Array(documentedInfo.utf8), now: MonotonicInstant(nanos: 0))
        let outputs = refused.received(
            Array("-ERR 'Authorization Violation'\r\n".utf8), now: MonotonicInstant(nanos: 1))
        #expect(outputs == [.failed("the server said: Authorization Violation", refused: true)])
        var tls = session()
        let tlsOutputs = tls.received(
            Array("INFO {\"tls_required\":true}\r\n".utf8), now: MonotonicInstant(nanos: 0))
        // A server that requires TLS gets its own message, not the credentials' (they were not
        // refused: the connection never got that far).
        guard case .failed(let reason, false)? = tlsOutputs.first else {
            Issue.record("expected a failure that is no refusal of credentials, got \(tlsOutputs)")
            return
        }
        #expect(reason.contains("TLS"))
    }

    /// Keep-alive: a PING after `relayPingInterval` of silence, given up after `relayDeadAfter`;
    /// anything heard resets both. A handshake that never ends is given up too.
    @Test func sessionFindsADeadServerWithinASecond() {
        let settings = Settings()
        let t0 = MonotonicInstant(nanos: 0)
        var session = session(now: t0)
        _ = session.received(Array(documentedInfo.utf8), now: t0)
        _ = session.received(Array("PONG\r\n".utf8), now: t0)
        #expect(session.tick(now: t0 + settings.relay.pingInterval - .milliseconds(1)).isEmpty)
        #expect(session.nextWake == t0 + settings.relay.pingInterval)
        #expect(text(session.tick(now: t0 + settings.relay.pingInterval)) == "PING\r\n")
        #expect(session.tick(now: t0 + settings.relay.pingInterval + .milliseconds(1)).isEmpty)  // one PING at a time
        let heard = t0 + settings.relay.pingInterval + .milliseconds(5)
        _ = session.received(Array("PONG\r\n".utf8), now: heard)
        #expect(text(session.tick(now: heard + settings.relay.pingInterval)) == "PING\r\n")
        let dead = session.tick(now: heard + settings.relay.deadAfter)
        guard case .failed(let reason, false)? = dead.first else {
            Issue.record("expected the server given up, got \(dead)")
            return
        }
        #expect(reason.contains("silent"))
        #expect(settings.relay.deadAfter <= .seconds(1))

        var mute = self.session(now: t0)
        #expect(mute.tick(now: t0 + settings.relay.connectTimeout - .milliseconds(1)).isEmpty)
        #expect(mute.tick(now: t0 + settings.relay.connectTimeout).count == 1)
    }

    // MARK: Servers

    @Test func failoverTriesTheNextServerAtOnceAndBacksOffOnlyAfterAWholeRound() {
        var settings = Settings()
        settings.relay.serversMax = 4
        let seeds = (1...2).map {
            RelayServer(
                endpoint: Endpoint(address: 0x7F00_0001, port: UInt16(4221 + $0)), name: "s\($0)",
                credentials: .init(token: "t"))
        }
        var servers = RelayServers(seeds: seeds, settings: settings)
        var random = SplitMix64(seed: 1)
        #expect(servers.server.name == "s1")
        #expect(servers.failed(random: &random) == .zero)
        #expect(servers.server.name == "s2")
        let first = servers.failed(random: &random)
        #expect(servers.server.name == "s1")
        #expect(first >= settings.relay.backoffMin * 0.75 && first <= settings.relay.backoffMin * 1.25)
        var waits: [Duration] = []
        for _ in 0..<40 { waits.append(servers.failed(random: &random)) }
        #expect(waits.max()! <= settings.relay.backoffMax * (1 + settings.relay.backoffJitterFraction))
        #expect(waits.suffix(4).contains { $0 >= settings.relay.backoffMax * 0.75 })
        servers.succeeded()
        #expect(servers.failed(random: &random) == .zero)

        // The cluster's announced servers join, with the announcer's credentials, up to the bound;
        // names (which would need resolving) and duplicates do not.
        let added = servers.learn([
            "127.0.0.1:4222", "127.0.0.2:4300", "relay.example:4222", "[::1]:4400", "10.0.0.1:1",
        ])
        #expect(added.added == 2)
        #expect(servers.servers.map(\.name) == ["s1", "s2", "127.0.0.2:4300", "[::1]:4400"])
        #expect(servers.servers[3].credentials == NatsCommand.Credentials(token: "t"))
        #expect(!servers.servers[3].isSeed)
    }

    /// The list follows the cluster: a server it stops announcing leaves, one that keeps failing
    /// leaves, a port out of range names no server (it was dialled on 4222), and a server whose
    /// max_payload cannot carry a frame is passed over while another can.
    @Test func announcedServers_comeAndGoWithTheCluster() {
        let seed = RelayServer(
            endpoint: Endpoint(address: 0x7F00_0001, port: 4222), name: "seed", credentials: .init(token: "t"))
        var servers = RelayServers(seeds: [seed], settings: Settings())
        var random = SplitMix64(seed: 2)
        #expect(RelayServers.endpoint("127.0.0.2:99999") == nil && RelayServers.endpoint("127.0.0.2:0") == nil)
        #expect(RelayServers.endpoint("127.0.0.2:+42") == nil && RelayServers.endpoint("127.0.0.2") != nil)
        let first = servers.learn(["127.0.0.1:4222", "127.0.0.2:4222", "127.0.0.3:4222", "127.0.0.4:99999"])
        #expect(first.added == 2 && first.dropped == 0)
        let second = servers.learn(["127.0.0.1:4222", "127.0.0.3:4222"])
        #expect(second.added == 0 && second.dropped == 1, "127.0.0.2 is no longer announced")
        #expect(servers.servers.map(\.name) == ["seed", "127.0.0.3:4222"])
        // The announced server fails three times in a row: it leaves; the seed stays.
        for _ in 0..<6 { _ = servers.failed(random: &random) }
        #expect(servers.servers.map(\.name) == ["seed"])
        // Too small a max_payload: passed over while another server may carry frames.
        _ = servers.learn(["127.0.0.5:4222"])
        let another = servers.markTooSmall()
        #expect(another, "127.0.0.5 may")
        _ = servers.failed(random: &random)
        #expect(servers.server.name == "127.0.0.5:4222")
        _ = servers.failed(random: &random)
        #expect(servers.server.name == "127.0.0.5:4222", "the seed is passed over")
        let none = servers.markTooSmall()
        #expect(!none, "no server left that may")
    }

    @Test func relayURLsParseWithTheirCredentials() throws {
        let token = try CommandLineOptions.parseRelay("nats://s3cret@127.0.0.1:14222")
        #expect(token.endpoint == Endpoint(address: 0x7F00_0001, port: 14222))
        #expect(token.credentials == NatsCommand.Credentials(token: "s3cret"))
        let user = try CommandLineOptions.parseRelay("nats://alice:p%40ss%3Aw@[::1]")
        #expect(user.endpoint?.port == 4222)
        #expect(user.credentials == NatsCommand.Credentials(user: "alice", password: "p@ss:w"))
        let bare = try CommandLineOptions.parseRelay("nats://127.0.0.1/")
        #expect(bare.credentials == NatsCommand.Credentials())
        for bad in [
            "127.0.0.1:4222", "tls://127.0.0.1", "nats://", "nats://@127.0.0.1", "nats://127.0.0.1:0",
            "nats://127.0.0.1:70000", "nats://a:%zz@127.0.0.1", "nats://224.0.0.1", "nats://[100::5]:4222",
            "nats://127.0.0.1/path",
        ] {
            #expect(throws: UsageError.self, "\(bad)") { _ = try CommandLineOptions.parseRelay(bad) }
        }
    }
}

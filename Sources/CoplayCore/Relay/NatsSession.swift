/// One connection to a NATS server, as a machine without a socket: bytes in, bytes out, timers.
/// It answers INFO with CONNECT, its subscriptions and a PING, and counts the connection
/// established at the PONG (the server accepted the credentials: a refusal arrives as -ERR
/// before it). Then it delivers MSGs, answers the server's PINGs, and keeps the connection
/// alive on its own: with nothing heard for `relayPingInterval` it sends a PING, and with
/// nothing heard for `relayDeadAfter` it gives the server up. (NATS clients keep the protocol's
/// two-minute PING interval by default, and have been seen to take minutes to notice a server
/// that vanished; an agent must move within a second, before its peers give it up.)
struct NatsSession {
    enum Output: Equatable {
        /// Bytes to write to the server.
        case send([UInt8])
        /// The server accepted the connection and the subscriptions.
        case established(NatsServerInfo)
        /// A message on one of the subscriptions (by its subject as subscribed).
        case message(subject: String, payload: [UInt8])
        /// The connection is over: the reason, and whether the server refused the credentials
        /// (trying again with the same ones will not help soon).
        case failed(String, refused: Bool)
        /// Something the user should know that does not end the connection.
        case notice(String)
    }

    enum Phase: Equatable {
        case awaitingInfo
        /// CONNECT, the SUBs and a PING sent; the PONG says they were accepted.
        case awaitingPong
        case established
        case failed
    }

    /// The relay's bounds alone: a whole `Settings` in each copy of this value cost the browser's
    /// build some 20 KB of copying code.
    private var settings: Settings.Relay
    private let credentials: NatsCommand.Credentials
    /// The subjects subscribed, by subscription id less one; empty where one was unsubscribed (its
    /// id is used again for the next subject: the table holds no more slots than subjects at once).
    private var subjects: [String]
    private let clientName: String
    private var parser: NatsParser
    private(set) var phase = Phase.awaitingInfo
    private(set) var info: NatsServerInfo?
    private var lastHeard: MonotonicInstant
    private var pingSentAt: MonotonicInstant?
    /// When the connection started: the handshake must end within `relayConnectTimeout`.
    private let startedAt: MonotonicInstant
    /// MSGs on a subscription id this session never made.
    private(set) var strayMessages = 0

    init(
        credentials: NatsCommand.Credentials, subjects: [String], clientName: String, settings: Settings,
        now: MonotonicInstant
    ) {
        self.init(
            credentials: credentials, subjects: subjects, clientName: clientName, relay: settings.relay,
            frameBytesMax: settings.datagramBytesMax + RelaySeal.overheadBytes, now: now)
    }

    /// `frameBytesMax`: the largest MSG kept (a sealed datagram at its bound).
    init(
        credentials: NatsCommand.Credentials, subjects: [String], clientName: String, relay: Settings.Relay,
        frameBytesMax: Int, now: MonotonicInstant
    ) {
        settings = relay
        self.credentials = credentials
        self.subjects = subjects
        self.clientName = clientName
        parser = NatsParser(lineBytesMax: relay.lineBytesMax, payloadBytesMax: frameBytesMax)
        lastHeard = now
        startedAt = now
    }

    var oversizedSkipped: Int { parser.oversizedSkipped }

    /// The subjects are now `wanted`, on the connection as it is (a SUB for each new one and an
    /// UNSUB for each dropped, now or with the handshake), and the keep-alive's bounds from now
    /// on: a viewer took a seat on the stage, or a stage member began or stopped speaking for it.
    /// A message already on its way on a subject dropped is counted as stray.
    mutating func subscriptions(changedTo wanted: [String], relay: Settings.Relay) -> [Output] {
        settings = relay
        var commands: [UInt8] = []
        for (index, subject) in subjects.enumerated() where !subject.isEmpty && !wanted.contains(subject) {
            subjects[index] = ""
            commands += NatsCommand.unsub(sid: index + 1)
        }
        for subject in wanted where !subjects.contains(subject) {
            let slot = subjects.firstIndex(of: "") ?? subjects.count
            if slot == subjects.count { subjects.append(subject) } else { subjects[slot] = subject }
            commands += NatsCommand.sub(subject, sid: slot + 1)
        }
        guard phase == .awaitingPong || phase == .established, !commands.isEmpty else { return [] }
        return [.send(commands)]
    }

    /// The largest frame the server accepts in a PUB, once its INFO is read.
    var maxPayload: Int? { info?.maxPayload }

    mutating func received(_ bytes: some Collection<UInt8>, now: MonotonicInstant) -> [Output] {
        guard phase != .failed else { return [] }
        lastHeard = now
        pingSentAt = nil
        let messages: [NatsServerMessage]
        do {
            messages = try parser.feed(bytes)
        } catch {
            return fail("the server sent \(error.reason)")
        }
        var out: [Output] = []
        for message in messages {
            switch message {
            case .info(let info):
                guard phase == .awaitingInfo else {
                    // A later INFO (the cluster changed) updates what the client knows.
                    self.info = info
                    out.append(.established(info))
                    continue
                }
                if info.tlsRequired {
                    return out
                        + fail(
                            "the server requires TLS, which coplay's relay does not speak (the datagrams are sealed; use a server or leaf node that accepts plain connections)",
                            refused: false)
                }
                self.info = info
                var hello = NatsCommand.connect(credentials, name: clientName)
                for (index, subject) in subjects.enumerated() where !subject.isEmpty {
                    hello += NatsCommand.sub(subject, sid: index + 1)
                }
                hello += NatsCommand.ping
                out.append(.send(hello))
                phase = .awaitingPong
            case .ping:
                out.append(.send(NatsCommand.pong))
            case .pong:
                if phase == .awaitingPong, let info {
                    phase = .established
                    out.append(.established(info))
                }
            case .ok:
                continue
            case .err(let text):
                let lowered = String(
                    decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
                let refused = Self.mentions(lowered, "authorization") || Self.mentions(lowered, "authentication")
                // Every -ERR the server sends after CONNECT closes the connection, but for
                // permission and subject errors, which a relay's own subjects never draw.
                if lowered.hasPrefix("permissions violation") || lowered.hasPrefix("invalid subject") {
                    out.append(.notice("the server refused: \(text)"))
                    continue
                }
                return out + fail("the server said: \(text)", refused: refused)
            case .msg(let subject, let sid, _, let payload):
                guard phase == .established || phase == .awaitingPong, let index = Int(sid), index >= 1,
                    index <= subjects.count, !subject.isEmpty, subjects[index - 1] == subject
                else {
                    strayMessages += 1
                    continue
                }
                out.append(.message(subject: subject, payload: payload))
            }
        }
        return out
    }

    /// Keep-alive and the handshake's deadline.
    mutating func tick(now: MonotonicInstant) -> [Output] {
        switch phase {
        case .failed:
            return []
        case .awaitingInfo, .awaitingPong:
            guard now - startedAt >= settings.connectTimeout else { return [] }
            return fail("no answer to the handshake within \(settings.connectTimeout.nanoseconds / 1_000_000) ms")
        case .established:
            if now - lastHeard >= settings.deadAfter {
                return fail("silent for \(settings.deadAfter.nanoseconds / 1_000_000) ms")
            }
            guard pingSentAt == nil, now - lastHeard >= settings.pingInterval else { return [] }
            pingSentAt = now
            return [.send(NatsCommand.ping)]
        }
    }

    /// When `tick` next has something to do.
    var nextWake: MonotonicInstant? {
        switch phase {
        case .failed: nil
        case .awaitingInfo, .awaitingPong: startedAt + settings.connectTimeout
        case .established:
            pingSentAt == nil ? lastHeard + settings.pingInterval : lastHeard + settings.deadAfter
        }
    }

    /// Whether `text` holds `word` (without Foundation's search, which the browser's build lacks).
    static func mentions(_ text: String, _ word: String) -> Bool {
        let haystack = Array(text.utf8)
        let needle = Array(word.utf8)
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    private mutating func fail(_ reason: String, refused: Bool = false) -> [Output] {
        phase = .failed
        return [.failed(reason, refused: refused)]
    }
}

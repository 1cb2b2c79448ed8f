import CoplayCore
import Glibc

/// The relay's socket: one non-blocking TCP connection to a server of a NATS cluster, on the
/// agent's event loop. It connects (`RelayServers` says where and when), runs a `NatsSession`
/// over the connection, writes PUBs from a bounded buffer, and hands what arrives on the
/// subscriptions to the shell. It decides nothing about the protocol: the core says what to
/// subscribe to and publish, and opens what arrives (`RelayCarriage`).
///
/// Used only on the event loop's thread, by the shell (its owner), like the shell's own state.
/// What `ctl status` shows of the relay's connection (the frames that did not open are the
/// core's count, `Counters.relayFramesRefused`).
public struct RelayStatistics: Sendable {
    /// The server connected to or being tried (`host:port`).
    public var server: String?
    public var connected = false
    /// Connections established after the first (fail-overs and reconnections).
    public var reconnections = 0
    public var framesPublished = 0
    public var framesReceived = 0
    public var bytesWritten = 0
    public var bytesRead = 0
    /// Frames not published: no connection, or the write buffer full, or over `max_payload`.
    public var framesDropped = 0
    /// MSGs too large to be a frame, read past.
    public var oversized = 0
    public init() {}
}

final class RelayClient {
    enum Event {
        /// A frame arrived on `subject`.
        case frame(subject: String, payload: [UInt8])
        case diagnose(String)
        /// The server accepted the connection and the subscriptions (the first time, or again).
        case connected
    }

    private let loop: EventLoop
    private let settings: Settings
    private var subjects: [String]
    private let clientName: String
    private var servers: RelayServers
    private var random: SplitMix64
    /// The socket, while connecting or connected.
    private var socket: Int32?
    /// Made when the TCP connection is up.
    private var session: NatsSession?
    /// With a `ws://` server: the WebSocket the session's bytes travel in.
    private var webSocket: WebSocketFraming?
    private var connectStartedAt = MonotonicInstant(nanos: 0)
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    private var reconnectAt: MonotonicInstant?
    private var everEstablished = false
    /// The last refusal's reason, so that a server refusing again and again is said once.
    private var lastFailure: String?
    /// A frame over the server's `max_payload` was said, on this connection.
    private var oversizeSaid = false
    /// The largest frame: a datagram at its bound, sealed.
    private var frameBytesMax: Int { settings.datagramBytesMax + RelaySeal.overheadBytes }
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)
    private(set) var statistics = RelayStatistics()
    private let handlers: (readable: @Sendable () -> Void, writable: @Sendable () -> Void)

    init(
        seeds: [RelayServer], subjects: [String], clientName: String, settings: Settings, seed: UInt64,
        loop: EventLoop, readable: @escaping @Sendable () -> Void, writable: @escaping @Sendable () -> Void
    ) {
        servers = RelayServers(seeds: seeds, settings: settings)
        self.subjects = subjects
        self.clientName = clientName
        self.settings = settings
        self.loop = loop
        random = SplitMix64(seed: seed)
        handlers = (readable, writable)
    }

    var isEstablished: Bool { session?.phase == .established }

    /// Starts the first connection.
    func start(now: MonotonicInstant) -> [Event] { connect(now: now) }

    /// The subjects changed (the group's keys were rotated): a connection made from now on
    /// subscribes to these; one up now is made again at once, so that no frame under the new
    /// key is missed for long.
    func resubscribe(_ subjects: [String], now: MonotonicInstant) -> [Event] {
        guard subjects != self.subjects else { return [] }
        self.subjects = subjects
        guard socket != nil else { return [] }
        close()
        statistics.connected = false
        reconnectAt = nil
        return [.diagnose("relay: the keys changed; subscribing again under them")] + connect(now: now)
    }

    /// When `tick` next has something to do.
    var nextWake: MonotonicInstant? {
        if let reconnectAt { return reconnectAt }
        if socket != nil, session == nil { return connectStartedAt + settings.relay.connectTimeout }
        return session?.nextWake
    }

    func tick(now: MonotonicInstant) -> [Event] {
        if let due = reconnectAt, now >= due {
            reconnectAt = nil
            return connect(now: now)
        }
        if socket != nil, session == nil, now - connectStartedAt >= settings.relay.connectTimeout {
            return fail("no TCP connection within \(settings.relay.connectTimeout)", refused: false, now: now)
        }
        guard var session else { return [] }
        let outputs = session.tick(now: now)
        self.session = session
        return handle(outputs, now: now)
    }

    /// Publishes a sealed frame; dropped (counted) unless connected with room to write it. A frame
    /// over the server's `max_payload` is dropped too, and said once per connection.
    func publish(_ frame: [UInt8], on subject: String, now: MonotonicInstant) -> [Event] {
        guard let session, session.phase == .established else {
            statistics.framesDropped += 1
            return []
        }
        if let limit = session.maxPayload, frame.count > limit {
            statistics.framesDropped += 1
            guard !oversizeSaid else { return [] }
            oversizeSaid = true
            return [
                .diagnose(
                    "relay \(servers.server.name): a frame of \(frame.count) bytes is over the server's max_payload of \(limit): dropped, and so will be every frame that large while connected there"
                )
            ]
        }
        let command = NatsCommand.pub(subject, payload: frame)
        guard outbound.count - outboundStart + command.count <= settings.relay.writeBufferBytesMax else {
            statistics.framesDropped += 1
            return []
        }
        statistics.framesPublished += 1
        return write(command, now: now)
    }

    /// The socket is readable: reads up to `relayReadTurnBytesMax`.
    func readable(now: MonotonicInstant) -> [Event] {
        guard let socket else { return [] }
        guard session != nil else { return [] }  // a connect's result comes through `writable`
        var events: [Event] = []
        var total = 0
        while total < settings.relay.readTurnBytesMax, self.socket == socket {
            let count = readBuffer.withUnsafeMutableBytes {
                recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return events + fail("reading: \(String(cString: strerror(errno)))", refused: false, now: now)
            }
            if count == 0 { return events + fail("the server closed the connection", refused: false, now: now) }
            total += count
            statistics.bytesRead += count
            guard var session = self.session else { break }
            var bytes = ArraySlice(readBuffer[0..<count])
            if var webSocket {
                let arrival = webSocket.received(bytes)
                self.webSocket = webSocket
                for reply in arrival.replies {
                    events += writeRaw(
                        WebSocketFraming.frame(opcode: reply.opcode, payload: reply.payload, mask: mask()), now: now)
                }
                if let failure = arrival.failure { return events + fail(failure, refused: false, now: now) }
                bytes = ArraySlice(arrival.payload)
            }
            let outputs = session.received(bytes, now: now)
            self.session = session
            statistics.oversized = session.oversizedSkipped
            events += handle(outputs, now: now)
        }
        return events
    }

    /// The socket is writable: the connect finished, or there is room for waiting bytes.
    func writable(now: MonotonicInstant) -> [Event] {
        guard let socket else { return [] }
        if session == nil {
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socket, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else {
                return fail("connecting: \(String(cString: strerror(code)))", refused: false, now: now)
            }
            session = NatsSession(
                credentials: servers.server.credentials, subjects: subjects, clientName: clientName, settings: settings,
                now: now)
            if let host = servers.server.webSocketHost {
                let framing = WebSocketFraming(nonce: (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) })
                webSocket = framing
                return writeRaw(framing.request(host: host), now: now)
            }
            loop.setWantsWrite(socket, !outboundIsEmpty)
            return []
        }
        return flush(now: now)
    }

    /// Closes the connection (the agent is exiting).
    func close() {
        guard let socket else { return }
        loop.unwatch(socket)
        Glibc.close(socket)
        self.socket = nil
        session = nil
        webSocket = nil
    }

    // MARK: Connecting

    private func connect(now: MonotonicInstant) -> [Event] {
        let server = servers.server
        let (address, length) = UDPTransport.socketAddress(server.endpoint, scope: 0)
        let family = server.endpoint.address.isIPv4 ? AF_INET : AF_INET6
        let fd = Glibc.socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return fail("socket: \(String(cString: strerror(errno)))", refused: false, now: now) }
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        var storage = address
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        socket = fd
        session = nil
        webSocket = nil
        oversizeSaid = false
        outbound.removeAll(keepingCapacity: true)
        outboundStart = 0
        connectStartedAt = now
        statistics.server = server.name
        let handlers = self.handlers
        loop.watch(fd, readable: handlers.readable, writable: handlers.writable)
        if status != 0, errno != EINPROGRESS {
            return fail("connecting: \(String(cString: strerror(errno)))", refused: false, now: now)
        }
        loop.setWantsWrite(fd, true)
        return []
    }

    private func handle(_ outputs: [NatsSession.Output], now: MonotonicInstant) -> [Event] {
        var events: [Event] = []
        for output in outputs {
            switch output {
            case .send(let bytes):
                events += write(bytes, now: now)
            case .established(let info):
                let learned = servers.learn(info.connectURLs)
                guard !statistics.connected else {
                    if learned.added > 0 || learned.dropped > 0 {
                        events.append(
                            .diagnose(
                                "relay: the cluster announced \(learned.added) more server(s), and no longer names \(learned.dropped)"
                            ))
                    }
                    continue
                }
                // A server that cannot carry a frame would split the group silently (what it
                // drops, its peers never get): another server of the cluster, if one can.
                if info.maxPayload < frameBytesMax {
                    let limit =
                        "takes messages of at most \(info.maxPayload) bytes (its max_payload), and frames are up to \(frameBytesMax)"
                    if servers.markTooSmall() {
                        return events
                            + fail("\(limit): moving to another server of the cluster", refused: false, now: now)
                    }
                    events.append(
                        .diagnose(
                            "relay \(servers.server.name): \(limit), and no server known can carry them: larger frames are dropped (raise max_payload to at least \(frameBytesMax))"
                        ))
                }
                statistics.connected = true
                if everEstablished { statistics.reconnections += 1 }
                everEstablished = true
                servers.succeeded()
                lastFailure = nil
                events.append(
                    .diagnose(
                        "relay: connected to \(servers.server.name) (nats-server \(info.version), \(servers.servers.count) server(s) known)"
                    ))
                events.append(.connected)
            case .message(let subject, let payload):
                statistics.framesReceived += 1
                events.append(.frame(subject: subject, payload: payload))
            case .failed(let reason, let refused):
                return events + fail(reason, refused: refused, now: now)
            case .notice(let text):
                events.append(.diagnose("relay \(servers.server.name): \(text)"))
            }
        }
        return events
    }

    private var outboundIsEmpty: Bool { outboundStart >= outbound.count }

    /// Bytes of the NATS protocol: in a WebSocket message (masked) when the server is `ws://`.
    private func write(_ bytes: [UInt8], now: MonotonicInstant) -> [Event] {
        guard webSocket != nil else { return writeRaw(bytes, now: now) }
        return writeRaw(WebSocketFraming.binary(bytes, mask: mask()), now: now)
    }

    /// A WebSocket frame's masking key (RFC 6455 5.3), from the client's generator: masking keeps a
    /// page's script from choosing the bytes a proxy sees, and a native client runs no such script.
    private func mask() -> [UInt8] {
        let value = random.next()
        return (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    private func writeRaw(_ bytes: [UInt8], now: MonotonicInstant) -> [Event] {
        // The handshake and the PONGs owed to the server's PINGs: a server that sends PINGs and
        // never reads the answers is cut before they fill memory.
        guard outbound.count - outboundStart + bytes.count <= settings.relay.writeBufferBytesMax else {
            return fail("it does not read what is sent to it", refused: false, now: now)
        }
        if outboundIsEmpty {
            outbound.removeAll(keepingCapacity: true)
            outboundStart = 0
        }
        outbound += bytes
        return flush(now: now)
    }

    private func flush(now: MonotonicInstant) -> [Event] {
        guard let socket, session != nil else { return [] }
        while !outboundIsEmpty {
            let written = outbound[outboundStart...].withUnsafeBytes {
                send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return fail("writing: \(String(cString: strerror(errno)))", refused: false, now: now)
            }
            outboundStart += written
            statistics.bytesWritten += written
        }
        if outboundIsEmpty {
            outbound.removeAll(keepingCapacity: true)
            outboundStart = 0
        } else if outboundStart > settings.relay.writeBufferBytesMax / 2 {
            outbound.removeFirst(outboundStart)
            outboundStart = 0
        }
        loop.setWantsWrite(socket, !outboundIsEmpty)
        return []
    }

    /// The connection failed or ended: closes it and sets when to try the next server.
    private func fail(_ reason: String, refused: Bool, now: MonotonicInstant) -> [Event] {
        let server = servers.server.name
        close()
        statistics.connected = false
        let wait = servers.failed(random: &random)
        reconnectAt = now + wait
        let text = "relay \(server): \(reason)\(refused ? " (the credentials in the --relay URL were refused)" : "")"
        // Each failure is said once until a connection succeeds: a server that keeps refusing
        // does not fill the log.
        guard text != lastFailure else { return [] }
        lastFailure = text
        let next = servers.server.name
        let millis = wait.nanoseconds / 1_000_000
        return [.diagnose(text + (millis > 0 ? "; trying \(next) in \(millis) ms" : "; trying \(next)"))]
    }
}

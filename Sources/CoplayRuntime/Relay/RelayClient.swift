import CoplayCore
import Glibc

/// The relay's socket: one non-blocking TCP connection to a server of a NATS cluster, on the
/// agent's event loop, carrying the core's `NatsClient`. It opens the connection the client
/// names, wraps the bytes in a WebSocket's frames for a `ws://` server, writes from a bounded
/// buffer, and hands back what arrives and when the connection ends. It decides nothing: which
/// server, when to retry, a silent server, a refusal, what to publish and what arrives are the
/// core's (`NatsClient`, `RelayCarriage`).
///
/// Used only on the event loop's thread, by the shell (its owner), like the shell's own state.
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
    private var client: NatsClient
    /// Masks for the WebSocket's frames and its handshake's nonce.
    private var random: SplitMix64
    /// The socket, while connecting or connected.
    private var socket: Int32?
    /// The TCP connection is up (the client was told `opened`).
    private var isOpen = false
    /// With a `ws://` server: the WebSocket the session's bytes travel in.
    private var webSocket: WebSocketFraming?
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)
    private let handlers: (readable: @Sendable () -> Void, writable: @Sendable () -> Void)

    init(
        seeds: [RelayServer], subjects: [String], clientName: String, settings: Settings, seed: UInt64,
        loop: EventLoop, readable: @escaping @Sendable () -> Void, writable: @escaping @Sendable () -> Void
    ) {
        client = NatsClient(seeds: seeds, subjects: subjects, clientName: clientName, settings: settings, seed: seed)
        self.settings = settings
        self.loop = loop
        random = SplitMix64(seed: seed ^ 0x9E37_79B9_7F4A_7C15)
        handlers = (readable, writable)
    }

    var isEstablished: Bool { client.isEstablished }
    var statistics: RelayStatistics { client.statistics }
    var nextWake: MonotonicInstant? { client.nextWake }

    func start(now: MonotonicInstant) -> [Event] {
        let out = client.start(now: now)
        return carry(out, now: now)
    }

    func resubscribe(_ subjects: [String], now: MonotonicInstant) -> [Event] {
        let out = client.resubscribe(subjects, now: now)
        return carry(out, now: now)
    }

    /// A viewer took a seat on the stage (`NatsClient.subscriptionsChanged`).
    func subscriptionsChanged(to subjects: [String], relay: Settings.Relay, now: MonotonicInstant) -> [Event] {
        let out = client.subscriptionsChanged(to: subjects, relay: relay, now: now)
        return carry(out, now: now)
    }

    func tick(now: MonotonicInstant) -> [Event] {
        let out = client.tick(now: now)
        return carry(out, now: now)
    }

    /// Publishes a sealed frame (the client drops it, counted, unless connected with room).
    func publish(_ frame: [UInt8], on subject: String, now: MonotonicInstant) -> [Event] {
        let out = client.publish(frame, subject: subject, buffered: outbound.count - outboundStart, now: now)
        return carry(out, now: now)
    }

    /// The socket is readable: reads up to `relayReadTurnBytesMax`.
    func readable(now: MonotonicInstant) -> [Event] {
        guard let socket, isOpen else { return [] }  // a connect's result comes through `writable`
        var events: [Event] = []
        var total = 0
        while total < settings.relay.readTurnBytesMax, self.socket == socket {
            let count = readBuffer.withUnsafeMutableBytes {
                recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return events + ended("reading: \(String(cString: strerror(errno)))", now: now)
            }
            if count == 0 { return events + ended("the server closed the connection", now: now) }
            total += count
            var bytes = ArraySlice(readBuffer[0..<count])
            if var webSocket {
                let arrival = webSocket.received(bytes)
                self.webSocket = webSocket
                for reply in arrival.replies {
                    if let failure = writeRaw(
                        WebSocketFraming.frame(opcode: reply.opcode, payload: reply.payload, mask: mask()))
                    {
                        return events + ended(failure, now: now)
                    }
                }
                if let failure = arrival.failure { return events + ended(failure, now: now) }
                bytes = ArraySlice(arrival.payload)
            }
            let out = client.received(bytes, now: now)
            events += carry(out, now: now)
        }
        return events
    }

    /// The socket is writable: the connect finished, or there is room for waiting bytes.
    func writable(now: MonotonicInstant) -> [Event] {
        guard let socket else { return [] }
        if !isOpen {
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socket, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else { return ended("connecting: \(String(cString: strerror(code)))", now: now) }
            isOpen = true
            let out = client.opened(now: now)
            var events = carry(out, now: now)
            if let host = client.server.webSocketHost {
                let framing = WebSocketFraming(nonce: (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) })
                webSocket = framing
                if let failure = writeRaw(framing.request(host: host)) { events += ended(failure, now: now) }
                return events
            }
            loop.setWantsWrite(socket, !outboundIsEmpty)
            return events
        }
        if let failure = flush() { return ended(failure, now: now) }
        return []
    }

    /// Closes the connection for good (the agent is exiting).
    func close() {
        _ = client.close()
        closeSocket()
    }

    // MARK: Carrying out the client's outputs

    private func carry(_ outputs: [NatsClient.Output], now: MonotonicInstant) -> [Event] {
        var events: [Event] = []
        for output in outputs {
            switch output {
            case .open(let server):
                closeSocket()
                if let failure = connect(server) { events += ended(failure, now: now) }
            case .send(let bytes):
                if let failure = write(bytes) { events += ended(failure, now: now) }
            case .close:
                closeSocket()
            case .frame(let subject, let payload):
                events.append(.frame(subject: subject, payload: payload))
            case .connected:
                events.append(.connected)
            case .lost, .refused:
                continue  // said by the diagnostic that follows it
            case .unreachable(let server, let everConnected):
                let since = everConnected ? "since the connection was lost" : "since the start"
                let notice = client.unreachableNotice.nanoseconds / 1_000_000_000
                events.append(
                    .diagnose("relay: no server reached for \(notice) s \(since) (now trying \(server)); still trying"))
            case .diagnose(let text):
                events.append(.diagnose(text))
            }
        }
        return events
    }

    /// The socket failed or the server ended the connection: the client decides what next.
    private func ended(_ reason: String, now: MonotonicInstant) -> [Event] {
        guard socket != nil else { return [] }
        closeSocket()
        let out = client.closed(reason, now: now)
        return carry(out, now: now)
    }

    private func closeSocket() {
        guard let socket else { return }
        loop.unwatch(socket)
        Glibc.close(socket)
        self.socket = nil
        isOpen = false
        webSocket = nil
        outbound.removeAll(keepingCapacity: true)
        outboundStart = 0
    }

    /// Starts a non-blocking connect; the failure's text when it cannot start.
    private func connect(_ server: RelayServer) -> String? {
        guard let endpoint = server.endpoint else { return "no address for \(server.name)" }
        let (address, length) = UDPTransport.socketAddress(endpoint, scope: 0)
        let family = endpoint.address.isIPv4 ? AF_INET : AF_INET6
        let fd = Glibc.socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return "socket: \(String(cString: strerror(errno)))" }
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        var storage = address
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        let failure = status != 0 && errno != EINPROGRESS ? String(cString: strerror(errno)) : nil
        socket = fd
        let handlers = self.handlers
        loop.watch(fd, readable: handlers.readable, writable: handlers.writable)
        if let failure { return "connecting: \(failure)" }
        loop.setWantsWrite(fd, true)
        return nil
    }

    private var outboundIsEmpty: Bool { outboundStart >= outbound.count }

    /// Bytes of the NATS protocol: in a WebSocket message (masked) when the server is `ws://`.
    private func write(_ bytes: [UInt8]) -> String? {
        guard webSocket != nil else { return writeRaw(bytes) }
        return writeRaw(WebSocketFraming.binary(bytes, mask: mask()))
    }

    /// A WebSocket frame's masking key (RFC 6455 5.3), from the client's generator: masking keeps a
    /// page's script from choosing the bytes a proxy sees, and a native client runs no such script.
    private func mask() -> [UInt8] {
        let value = random.next()
        return (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    /// Queues and writes; the failure's text when the server does not read what it is sent (the
    /// client's PUBs are kept within the buffer by `publish`, so this is the handshake and the
    /// PONGs owed to the server's PINGs: a server that sends PINGs and never reads the answers is
    /// cut before they fill memory).
    private func writeRaw(_ bytes: [UInt8]) -> String? {
        guard socket != nil else { return nil }
        guard outbound.count - outboundStart + bytes.count <= settings.relay.writeBufferBytesMax else {
            return "it does not read what is sent to it"
        }
        if outboundIsEmpty {
            outbound.removeAll(keepingCapacity: true)
            outboundStart = 0
        }
        outbound += bytes
        return isOpen ? flush() : nil
    }

    private func flush() -> String? {
        guard let socket, isOpen else { return nil }
        while !outboundIsEmpty {
            let written = outbound[outboundStart...].withUnsafeBytes {
                send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return "writing: \(String(cString: strerror(errno)))"
            }
            outboundStart += written
        }
        if outboundIsEmpty {
            outbound.removeAll(keepingCapacity: true)
            outboundStart = 0
        } else if outboundStart > settings.relay.writeBufferBytesMax / 2 {
            outbound.removeFirst(outboundStart)
            outboundStart = 0
        }
        loop.setWantsWrite(socket, !outboundIsEmpty)
        return nil
    }
}

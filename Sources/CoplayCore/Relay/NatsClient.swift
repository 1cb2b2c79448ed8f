/// What `ctl status` and the page show of the relay's connection (the frames that did not open
/// are the core's count, `Counters.relayFramesRefused`).
public struct RelayStatistics: Sendable, Equatable {
    /// The server connected to or being tried (`host:port`).
    public var server: String?
    public var connected = false
    /// Connections established after the first (fail-overs and reconnections).
    public var reconnections = 0
    public var framesPublished = 0
    public var framesReceived = 0
    /// Bytes of the NATS protocol written and read (inside a WebSocket's frames, where there is one).
    public var bytesWritten = 0
    public var bytesRead = 0
    /// Frames not published: no connection, or the write buffer full, or over `max_payload`.
    public var framesDropped = 0
    /// MSGs too large to be a frame, read past.
    public var oversized = 0
    public init() {}
}

/// The relay's client, whole, as a machine without a socket: which server to connect to and
/// when (`RelayServers`), the NATS session on the connection (`NatsSession`: the handshake,
/// keep-alive, a silent server given up), publishing, and what a refusal or a full buffer
/// means. A shell opens the connection it is told to (TCP, or a WebSocket where a browser is
/// the shell), writes the bytes it is given, hands back the bytes that arrive and says when the
/// connection closed; it keeps one timer at `nextWake`. The Linux agent (`RelayClient`) and the
/// page (`coplay_relay_*` in the web module) carry the same machine.
///
/// A connection is: `.open(server)` out; `opened(now:)` in once the transport is up (the TCP
/// connect, or the WebSocket's open); bytes both ways; `closed(_:now:)` in when the transport
/// ends, or `.close` out when this client ends it. Frames go out through `publish`, arrive as
/// `.frame`, and are opened by the instance (`RelayCarriage`), never here.
public struct NatsClient: Sendable {
    public enum Output: Equatable, Sendable {
        /// Open a connection to this server (any other is closed first: `.close` precedes it).
        case open(RelayServer)
        /// Write these bytes of the NATS protocol on the open connection.
        case send([UInt8])
        /// Close the connection.
        case close
        /// A frame arrived on one of the subscriptions: the instance's `onRelayFrame`.
        case frame(subject: String, payload: [UInt8])
        /// The server accepted the connection and the subscriptions: the first time, start the
        /// instance (or say so); after that, `Instance.onPathRestored` (heartbeat at once there).
        case connected(server: String, first: Bool)
        /// The connection that was up is gone (for a display: "relay lost"); a new one is being
        /// made.
        case lost(String)
        /// The server refused the credentials (a wrong or stale token): said once per refusal, so
        /// that a display can say the link is out of date rather than "connecting…".
        case refused(server: String)
        /// No server has been reached for `Settings.Relay.unreachableNotice` (since the start,
        /// or since the connection was lost; `everConnected` tells which): said once, for a
        /// display to say why nothing moves. The client keeps trying; `.connected` ends it.
        case unreachable(server: String, everConnected: Bool)
        /// Something for the log.
        case diagnose(String)
    }

    private enum Phase: Equatable {
        /// Waiting until `reconnectAt` to open the next one.
        case idle
        /// `.open` said; the transport is not up yet (since then).
        case opening(since: MonotonicInstant)
        /// The transport is up: the session runs.
        case open
        /// `close()` was called: nothing more.
        case closed
    }

    /// The relay's bounds alone: a whole `Settings` in each copy of this value cost the browser's
    /// build some 20 KB of copying code.
    private var settings: Settings.Relay
    public private(set) var subjects: [String]
    private let clientName: String
    public private(set) var servers: RelayServers
    private var random: SplitMix64
    private var phase = Phase.idle
    private var session: NatsSession?
    private var reconnectAt: MonotonicInstant?
    private var everEstablished = false
    /// The last failure's text, so that a server refusing again and again is said once.
    private var lastFailure: String?
    /// Since when no server has been reached (the start, or the loss of the connection), while
    /// `.unreachable` is not said yet.
    private var unreachableSince: MonotonicInstant?
    /// A frame over the server's `max_payload` was said, on this connection.
    private var oversizeSaid = false
    public private(set) var statistics = RelayStatistics()
    /// The largest frame: a datagram at its bound, sealed.
    private let frameBytesMax: Int

    /// `resolve`: how an announced server becomes an address to connect to (a native shell: IP
    /// addresses only); nil for a shell that connects by host name (a browser).
    public init(
        seeds: [RelayServer], subjects: [String], clientName: String, settings: Settings, seed: UInt64,
        resolve: RelayServers.Resolver? = RelayServers.addressesOnly
    ) {
        servers = RelayServers(seeds: seeds, settings: settings, resolve: resolve)
        self.subjects = subjects
        self.clientName = clientName
        self.settings = settings.relay
        frameBytesMax = settings.datagramBytesMax + RelaySeal.overheadBytes
        random = SplitMix64(seed: seed)
    }

    public var isEstablished: Bool { session?.phase == .established }
    public var unreachableNotice: Duration { settings.unreachableNotice }
    public var server: RelayServer { servers.server }

    /// Opens the first connection.
    public mutating func start(now: MonotonicInstant) -> [Output] {
        unreachableSince = now
        return open(now: now)
    }

    /// The transport to the server said by the last `.open` is up.
    public mutating func opened(now: MonotonicInstant) -> [Output] {
        guard case .opening = phase else { return [] }
        phase = .open
        session = NatsSession(
            credentials: servers.server.credentials, subjects: subjects, clientName: clientName, relay: settings,
            frameBytesMax: frameBytesMax, now: now)
        return []
    }

    /// Bytes of the NATS protocol arrived on the open connection.
    public mutating func received(_ bytes: some Collection<UInt8>, now: MonotonicInstant) -> [Output] {
        guard phase == .open, var session else { return [] }
        statistics.bytesRead += bytes.count
        let outputs = session.received(bytes, now: now)
        self.session = session
        statistics.oversized = session.oversizedSkipped
        return handle(outputs, now: now)
    }

    /// The transport ended (or could not be made): `reason` as the shell saw it.
    public mutating func closed(_ reason: String, now: MonotonicInstant) -> [Output] {
        switch phase {
        case .opening, .open: return fail(reason, refused: false, now: now, closeTransport: false)
        case .idle, .closed: return []
        }
    }

    /// The shell knows its path changed under the connection (a page restored, a machine woken):
    /// the connection is made again at once rather than waiting to find it silent.
    public mutating func reconnectNow(now: MonotonicInstant) -> [Output] {
        guard phase != .closed else { return [] }
        let was = statistics.connected
        var out: [Output] = phase == .idle ? [] : [.close]
        session = nil
        statistics.connected = false
        if was {
            out.append(.lost("the connection was made again"))
            unreachableSince = now
        }
        return out + open(now: now)
    }

    /// The subjects changed (the group's keys were rotated): a connection made from now on
    /// subscribes to these; one up now is made again at once, so that no frame under the new
    /// key is missed for long.
    public mutating func resubscribe(_ subjects: [String], now: MonotonicInstant) -> [Output] {
        guard subjects != self.subjects else { return [] }
        self.subjects = subjects
        switch phase {
        case .idle, .closed: return []
        case .opening, .open: break
        }
        session = nil
        if statistics.connected { unreachableSince = now }
        statistics.connected = false
        return [.close, .diagnose("relay: the keys changed; subscribing again under them")] + open(now: now)
    }

    /// A viewer took a seat on the stage (the stage's subject is added), or a stage member began or
    /// stopped speaking for it (the viewers' hellos): the subjects changed on the connection as it
    /// is (no frame is missed for a reconnection), with the keep-alive's bounds from now on. (New
    /// keys change every subject: `resubscribe`.)
    @inline(never) public mutating func subscriptionsChanged(
        to subjects: [String], relay: Settings.Relay, now: MonotonicInstant
    ) -> [Output] {
        settings = relay
        self.subjects = subjects
        guard var session else { return [] }
        let outputs = session.subscriptions(changedTo: subjects, relay: relay)
        self.session = session
        return handle(outputs, now: now)
    }

    /// Ends the client for good (the participant is leaving).
    public mutating func close() -> [Output] {
        guard phase != .closed else { return [] }
        let wasOpen = phase != .idle
        phase = .closed
        session = nil
        reconnectAt = nil
        unreachableSince = nil
        statistics.connected = false
        return wasOpen ? [.close] : []
    }

    /// When `tick` next has something to do.
    public var nextWake: MonotonicInstant? {
        let due: MonotonicInstant? =
            switch phase {
            case .idle: reconnectAt
            case .opening(let since): since + settings.connectTimeout
            case .open: session?.nextWake
            case .closed: nil
            }
        guard let notice = unreachableSince.map({ $0 + settings.unreachableNotice }) else { return due }
        return due.map { min($0, notice) } ?? notice
    }

    public mutating func tick(now: MonotonicInstant) -> [Output] {
        var out: [Output] = []
        if let since = unreachableSince, now - since >= settings.unreachableNotice {
            unreachableSince = nil
            out.append(.unreachable(server: servers.server.name, everConnected: everEstablished))
        }
        switch phase {
        case .closed: return out
        case .idle:
            guard let due = reconnectAt, now >= due else { return out }
            reconnectAt = nil
            return out + open(now: now)
        case .opening(let since):
            guard now - since >= settings.connectTimeout else { return out }
            return out
                + fail(
                    "no connection within \(settings.connectTimeout.nanoseconds / 1_000_000) ms", refused: false,
                    now: now)
        case .open:
            guard var session else { return out }
            let outputs = session.tick(now: now)
            self.session = session
            return out + handle(outputs, now: now)
        }
    }

    /// A sealed frame to publish on `subject`. Dropped (counted) unless connected with room for it
    /// behind the `buffered` bytes the shell has not written yet; a frame over the server's
    /// `max_payload` is dropped too, and said once per connection. The protocol's repair makes
    /// up for what is dropped.
    public mutating func publish(_ frame: [UInt8], subject: String, buffered: Int, now: MonotonicInstant)
        -> [Output]
    {
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
        guard buffered + command.count <= settings.writeBufferBytesMax else {
            statistics.framesDropped += 1
            return []
        }
        statistics.framesPublished += 1
        statistics.bytesWritten += command.count
        return [.send(command)]
    }

    // MARK: Inside

    private mutating func open(now: MonotonicInstant) -> [Output] {
        phase = .opening(since: now)
        session = nil
        oversizeSaid = false
        reconnectAt = nil
        statistics.server = servers.server.name
        return [.open(servers.server)]
    }

    private mutating func handle(_ outputs: [NatsSession.Output], now: MonotonicInstant) -> [Output] {
        var out: [Output] = []
        for output in outputs {
            switch output {
            case .send(let bytes):
                statistics.bytesWritten += bytes.count
                out.append(.send(bytes))
            case .established(let info):
                let learned = servers.learn(from: info)
                guard !statistics.connected else {
                    if learned.added > 0 || learned.dropped > 0 {
                        out.append(
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
                        return out + fail("\(limit): moving to another server of the cluster", refused: false, now: now)
                    }
                    out.append(
                        .diagnose(
                            "relay \(servers.server.name): \(limit), and no server known can carry them: larger frames are dropped (raise max_payload to at least \(frameBytesMax))"
                        ))
                }
                statistics.connected = true
                let first = !everEstablished
                if !first { statistics.reconnections += 1 }
                everEstablished = true
                servers.succeeded()
                lastFailure = nil
                unreachableSince = nil
                out.append(
                    .diagnose(
                        "relay: connected to \(servers.server.name) (nats-server \(info.version), \(servers.servers.count) server(s) known)"
                    ))
                out.append(.connected(server: servers.server.name, first: first))
            case .message(let subject, let payload):
                statistics.framesReceived += 1
                out.append(.frame(subject: subject, payload: payload))
            case .failed(let reason, let refused):
                return out + fail(reason, refused: refused, now: now)
            case .notice(let text):
                out.append(.diagnose("relay \(servers.server.name): \(text)"))
            }
        }
        return out
    }

    /// The connection failed or ended: closes it (unless the transport is gone already) and
    /// sets when to try the next server.
    private mutating func fail(_ reason: String, refused: Bool, now: MonotonicInstant, closeTransport: Bool = true)
        -> [Output]
    {
        let name = servers.server.name
        var out: [Output] = closeTransport ? [.close] : []
        session = nil
        phase = .idle
        let text = "relay \(name): \(reason)\(refused ? " (the server refused the credentials)" : "")"
        if statistics.connected {
            statistics.connected = false
            out.append(.lost(text))
            unreachableSince = now
        }
        if refused { out.append(.refused(server: name)) }
        let wait = servers.failed(random: &random)
        reconnectAt = now + wait
        // Each failure is said once until a connection succeeds: a server that keeps refusing
        // does not fill the log.
        guard text != lastFailure else { return out }
        lastFailure = text
        let next = servers.server.name
        let millis = wait.nanoseconds / 1_000_000
        out.append(.diagnose(text + (millis > 0 ? "; trying \(next) in \(millis) ms" : "; trying \(next)")))
        return out
    }
}

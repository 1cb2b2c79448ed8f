/// One coplay agent's protocol, as a value: a router over small machines, each owning one
/// concern: `Gate` (who may speak: tags, replays, strangers), `SessionLifecycle` (joining,
/// leaving, incarnations), `Membership` (who is alive), `ClockSync` (offsets to every peer),
/// `Reach` and `MulticastPath` (unicast copies where multicast does not arrive), `Ordering` (the
/// causal command log and its repair), `StateTransfer` (snapshots for those far behind),
/// `Playback` (group state, the player's part, suspensions, interstitials), `QueueController`,
/// `Messaging` and, with a relay, `RelayCarriage`.
///
/// It performs no IO and reads no clock. Each input is one public `mutating func` that takes the
/// time and returns the `Directive`s the shell must carry out, ending with a `.wake(at:)` while
/// anything waits. A datagram is admitted at the gate and handed, by a table of payload kinds,
/// to the machine that owns the kind (`Instance+Receive`); each machine answers with its own
/// `Output`s, which one handler per machine turns into directives or into inputs of the next
/// machine (`Instance+Routing`). Randomness comes from a generator seeded by the caller, so the
/// simulation replays a run exactly from its seed.
///
/// The router's handlers are `@inline(never)`: each is reached from several inputs, and the
/// compiler copied it into each (9 KB of the browser's module, gzipped).
public struct Instance: Sendable {
    @inline(__always) public var settings: Settings { sharedSettings.value }
    var sharedSettings: SharedSettings
    /// A viewer that asks for a seat (`AudienceSettings.Role.firstCome`): the settings it runs
    /// with once seated on the stage (held by reference, as the others).
    var seatSettings: SharedSettings?
    public let identity: LocalIdentity
    public let session: SessionID
    public internal(set) var counters = Counters()

    var random: SplitMix64
    var sessionLifecycle: SessionLifecycle
    var membership: Membership
    var clockSync: ClockSync
    var ordering: Ordering
    var playback: Playback
    var messaging: Messaging
    var reach: Reach
    var stateTransfer: StateTransfer
    var gate: Gate
    var multicastPath: MulticastPath
    var queueController: QueueController
    /// With `--relay`: how datagrams travel through it (`RelayCarriage`).
    var relay: RelayCarriage?
    /// The stage and its audience (`--audience`, over the relay).
    var audience: Audience
    /// The input being handled: its time, and the directives it has produced so far (returned,
    /// and emptied, by `finish`), as raft's node gathers its messages for the next `Ready`.
    var now: Timestamp
    var out: [Directive] = []
    /// The input being handled is a person's command (a viewer issues only those: `mayIssue`).
    var pressed = false

    /// `keys`: the key file's keys (current first), or nil for an open group. `seeds`: peers to
    /// reach by unicast as well as by multicast (`--peer`). `relayEntropy`: with `--relay` (a
    /// keyed group only), 32 bytes from the system's generator for the relay's nonces.
    public init(
        identity: LocalIdentity, settings: Settings = Settings(), seed: UInt64, now: Timestamp, keys: [[UInt8]]? = nil,
        seeds: [Endpoint] = [], relayEntropy: [UInt8]? = nil
    ) {
        precondition(
            identity.name.utf8.count <= settings.nameBytesMax, "name longer than \(settings.nameBytesMax) bytes")
        let hasRelay = keys != nil && relayEntropy != nil
        audience = Audience(settings: settings.audience, hasRelay: hasRelay)
        // A viewer's membership and clocks run at its own pace (`AudienceSettings.applied`).
        if audience.wantsSeat {
            seatSettings = SharedSettings(settings.audience.applied(to: settings, isViewer: false))
        }
        let settings = hasRelay ? settings.audience.applied(to: settings, isViewer: audience.isViewer) : settings
        self.identity = identity
        self.now = now
        self.sharedSettings = SharedSettings(settings)
        session = SessionID(name: identity.sessionName)
        random = SplitMix64(seed: seed)
        sessionLifecycle = SessionLifecycle(
            session: session, id: identity.id, now: now, incarnationsRememberedMax: settings.incarnationsRememberedMax)
        membership = Membership(settings: settings)
        clockSync = ClockSync(settings: settings)
        ordering = Ordering(settings: settings)
        playback = Playback(settings: settings)
        messaging = Messaging(settings: settings)
        reach = Reach(settings: settings, seeds: seeds)
        stateTransfer = StateTransfer(settings: settings)
        multicastPath = MulticastPath(settings: settings)
        queueController = QueueController(settings: settings)
        gate = Gate(
            authentication: Authentication(keys: keys, session: session, settings: settings), session: session,
            own: identity.id, settings: settings)
        if let keys, let relayEntropy {
            relay = RelayCarriage(keys: keys, sessionName: identity.sessionName, entropy: relayEntropy)
        }
    }

    /// The key file was read again (SIGHUP): sign and seal with its current key, accept its keys.
    /// The relay's subjects follow the keys: a shell with a relay subscribes to
    /// `relaySubscriptions` again.
    public mutating func onKeysChanged(_ keys: [[UInt8]]?) {
        gate.authentication.rekey(keys)
        if let keys { relay?.rekey(keys) }
    }

    // MARK: Inputs

    /// Joins the session: the agent's first input.
    public mutating func start(now: Timestamp) -> [Directive] {
        guard case .waiting = state else { preconditionFailure("start() in state \(state)") }
        self.now = now
        join()
        return finish()
    }

    /// One line typed on standard input.
    public mutating func onConsoleLine(_ line: String, now: Timestamp) -> [Directive] {
        switch ConsoleCommand.parse(line, lineBytesMax: settings.commandLineBytesMax) {
        case .success(nil): return []
        case .success(let command?): return onCommand(command, now: now)
        case .failure(let error): return onCommandRefused(error)
        }
    }

    /// A command a shell built and found wrong (`ConsoleCommand.sharing(url:)`): said as a line
    /// typed wrong is.
    public mutating func onCommandRefused(_ error: ConsoleCommand.ParseError) -> [Directive] {
        counters.commandErrors += 1
        return [.emit(.commandError(error))]
    }

    /// A command that moves the group, from a press on the player or a shell's form
    /// (`ConsoleCommand.sharing(url:)`), or `quit`: the way in for a shell without a console, which
    /// never asks for the console's own commands (`status`, `help`, `end`…): those are refused
    /// here (`onCommand` takes them), so that a shell that keeps to this entry links none of their
    /// handlers (the page's module: 4.9 KB gzipped).
    public mutating func onGroupCommand(_ command: ConsoleCommand, now: Timestamp) -> [Directive] {
        self.now = now
        pressed = true
        defer { pressed = false }
        switch command {
        case .share, .play, .pause, .seek:
            routePlayback(playback.onCommand(command, context))
        case .queue(.add), .next, .previous:
            routeQueue(
                queueController.onCommand(
                    command, context, playback: playback, lamport: ordering.log.lamport, random: &random))
        case .quit:
            if let exit = quit() { return exit }
        default:
            return onCommandRefused(
                ConsoleCommand.ParseError(
                    message: "not a command that moves the group (a shell's console takes it)", usage: ""))
        }
        decideStart()
        return finish()
    }

    /// Leaves if joined and asks to exit: the directives that end the process, or nil while a
    /// goodbye is still being said.
    private mutating func quit() -> [Directive]? {
        if state.isJoined { leave(with: .leave(.shutdown), reason: .shutdown) }
        return sessionLifecycle.requestExit() ? drain() + [.exit(status: 0)] : nil
    }

    /// One parsed console command: what moves the group, and quit, as `onGroupCommand` takes
    /// them; the console's own here.
    public mutating func onCommand(_ command: ConsoleCommand, now: Timestamp) -> [Directive] {
        self.now = now
        switch command {
        case .share, .play, .pause, .seek, .queue(.add), .next, .previous, .quit:
            return onGroupCommand(command, now: now)
        case .status:
            out.append(.emit(.status(statusReport(now: now))))
        case .peers:
            out.append(.emit(.peers(peerInfos(now: now.monotonic))))
        case .help(let topic):
            out.append(.emit(.help(ConsoleCommand.usages.filter { topic == nil || $0.name == topic })))
        case .leave:
            guard state.isJoined else { return [commandError("not joined (state \(state.name))", usage: "join")] }
            leave(with: .leave(.left), reason: .left)
        case .join:
            guard !state.isJoined else { return [commandError("already joined", usage: "leave")] }
            join()
        case .end(let reason):
            guard state.isJoined else { return [commandError("not joined (state \(state.name))", usage: "join")] }
            leave(with: .end(reason: reason), reason: .ended(by: identity.name, reason: reason))
        case .load, .playNow, .rate, .stall, .suspend, .resume, .whatHappened, .interstitial:
            routePlayback(playback.onCommand(command, context))
        case .message(let to, let unreliable, let text):
            sendMessage(to: to, unreliable: unreliable, text: text)
        case .queue:
            routeQueue(
                queueController.onCommand(
                    command, context, playback: playback, lamport: ordering.log.lamport, random: &random))
        }
        decideStart()
        return finish()
    }

    /// One datagram, handled at once (a turn of its own: `onDatagram(_:…turn:)` is what a shell
    /// reading a socket calls). `receivedAt` is when the shell's receive loop got it; `now` is when
    /// this handler runs; `viaGroup` whether it came to the multicast socket (or the relay's group
    /// subject) rather than to this agent alone.
    public mutating func onDatagram(
        _ bytes: [UInt8], from source: Endpoint, receivedAt: Timestamp, now: Timestamp, viaGroup: Bool
    ) -> [Directive] {
        onDatagram(bytes, from: source, receivedAt: receivedAt, now: now, viaGroup: viaGroup, sealed: false)
    }

    /// A datagram, `sealed` when it came out of the relay's seal (`onRelayFrame`), which
    /// authenticated it already (`Authentication.admit`). Said by the path it came by, never
    /// judged from its source: a socket's source address is the sender's to write.
    mutating func onDatagram(
        _ bytes: [UInt8], from source: Endpoint, receivedAt: Timestamp, now: Timestamp, viaGroup: Bool, sealed: Bool
    ) -> [Directive] {
        self.now = now
        counters.datagramsReceived += 1
        // A viewer's one path is the relay: what the LAN brings (a stage member's multicast beside
        // it) would make it a peer of one it must reach through the relay, and it sends nothing
        // there. It hears the LAN once it took a seat.
        guard !audience.isViewer || source.isRelay else {
            counters.lanIgnoredAsViewer += 1
            return finish()
        }
        do {
            let datagram = try WireFormat.decode(
                bytes, datagramBytesMax: settings.datagramBytesMax, nameBytesMax: settings.nameBytesMax)
            counters.receivedByType[datagram.payload.type, default: 0] += 1
            receive(datagram, bytes: bytes, from: source, receivedAt: receivedAt, viaGroup: viaGroup, sealed: sealed)
            decideStart()
        } catch {
            reportDrop(DropReason(error.kind), detail: error.detail, from: source)
        }
        return finish()
    }

    /// What the local player reported (the shell feeds back what the `.player` directives produced).
    public mutating func onPlayerReport(_ report: PlayerReport, now: Timestamp) -> [Directive] {
        // The person in front of the player is a participant: their action is a group command.
        if case .userAction(let action) = report { return onGroupCommand(action.command, now: now) }
        self.now = now
        routePlayback(playback.onPlayerReport(report, context))
        if case .ended = report { routeQueue(queueController.onEnded(context, playback: playback)) }
        decideStart()
        return finish()
    }

    /// A path to the group came back after an outage (the relay's connection, `--relay`): a
    /// heartbeat goes at once rather than at its time, so that peers who heard nothing from this
    /// agent meanwhile do not give it up.
    public mutating func onPathRestored(now: Timestamp) -> [Directive] {
        guard state.isJoined else { return [] }
        membership.heartbeatNow(now.monotonic)
        return onTick(now: now)
    }

    /// The wake-up the last directive list asked for (or a spurious one: it is harmless).
    public mutating func onTick(now: Timestamp) -> [Directive] {
        self.now = now
        for output in sessionLifecycle.tick(now: now.monotonic) {
            switch output {
            case .send(let datagram): out.append(.multicast(datagram))
            case .exit: return drain() + [.exit(status: 0)]
            }
        }
        if state.isJoined {
            routeMembership(membership.tick(now: now.monotonic, random: &random), at: now.monotonic, source: nil)
            routeClocks(clockSync.tick(now: now, random: &random), source: nil)
            for case .peerList(let entries, let endpoint) in reach.tick(members: membership.peers, now: now.monotonic) {
                out.append(.unicast(stamp(.peerList(entries)), to: endpoint))
            }
            // A command's copies are for the LAN's losses: with a relay, on the LAN alone (the relay
            // is TCP); a viewer, whose one path is the relay, sends none.
            for envelope in ordering.tick(now: now.monotonic, peers: membership.peers, own: member)
            where !audience.isViewer {
                let copy = stamp(.command(envelope, isRepair: false))
                out.append(relay == nil ? .multicast(copy) : .unicast(copy, to: .lanGroup))
            }
            audienceTick()
            routeTransfer(stateTransfer.tick(now: now.monotonic), source: nil)
        }
        routeMessaging(messaging.tick(now: now.monotonic))
        routeQueue(queueController.tick(context, playback: playback))
        routePlayback(playback.tick(context, isBehind: isBehind))
        decideStart()
        return finish()
    }

    // MARK: Session lifecycle

    @inline(never) private mutating func join() {
        if sessionLifecycle.join(now: now) {
            ordering.reset()
            stateTransfer.reset()
            multicastPath.onNewIncarnation()
            playback.reset()
            queueController.reset()
        }
        membership.start(now: now.monotonic, random: &random)
        if !audience.isViewer { audience.joinedStage(now: now.monotonic) }
        out.append(.emit(.session(SessionReport(state: state, member: member))))
        routeMembership(membership.tick(now: now.monotonic, random: &random), at: now.monotonic, source: nil)
    }

    /// Leaves (or ends the session for everyone, and the player stops): the datagram goes out now
    /// and is repeated.
    @inline(never) mutating func leave(with payload: Payload, reason: InvalidationReason) {
        let copy = stamp(payload)
        reach.onLeave(members: membership.peers, now: now.monotonic)
        sessionLifecycle.leave(
            sending: copy, reason: reason, copyOffsets: settings.leaveCopyOffsets, now: now.monotonic)
        membership.stop()
        clockSync.stop()
        playback.onLeft()
        out.append(.emit(.session(SessionReport(state: state, member: member))))
        for case .send(let datagram) in sessionLifecycle.tick(now: now.monotonic) { out.append(.multicast(datagram)) }
        if case .ended = reason { routePlayback(playback.onSessionEnded(context)) }
    }

    // MARK: Outgoing datagrams and reports

    /// A directive's datagram as it goes on the wire at `now` (stamped and signed, in a keyed
    /// group): the shell and the simulation send what this returns.
    public func encode(_ datagram: Datagram, at now: Timestamp) -> [UInt8] {
        gate.authentication.seal(datagram, sentAt: now.wall)
    }

    @inline(never) mutating func stamp(_ payload: Payload) -> Datagram {
        counters.datagramsSent += 1
        counters.builtByType[payload.type, default: 0] += 1
        return sessionLifecycle.stamp(payload)
    }

    /// The announcement this agent sends now: who it is, its player's part, a digest of what it
    /// has delivered (`Ordering.nextDigest`) and, on a group announcement (not a reply), its
    /// stamp (`MulticastPath`).
    /// `grants`: an answer to a viewer's hello, whose seat bit says whether it grants a seat
    /// (nil for every other announcement: the bit says this agent asks for a seat, as a viewer,
    /// or took one by a grant, as a stage member).
    @inline(never) mutating func announcement(isReply: Bool, grants: Bool? = nil) -> Announcement {
        Announcement(
            isReply: isReply, unicastPort: identity.unicastPort, name: identity.name, item: player.item?.id,
            isWaiting: coordination.isWaiting, isReady: player.isReady,
            waitsOutSuspensions: playback.waitsOutSuspensions(among: membership.peers),
            suspensions: playback.suspensions.announced,
            digest: ordering.nextDigest(dependsOn: dependsOn),
            path: isReply ? nil : multicastPath.nextStamp(now: now.wall), wantsUnicast: multicastPath.wantsUnicast,
            isViewer: audience.isViewer, seat: grants ?? (audience.wantsSeat || audience.seatedByGrant))
    }

    /// `payload` to a live peer, at the endpoint it announced (to one that left meanwhile: nothing).
    /// A viewer in this stage member's table (`Audience`) is reached at its own subject.
    @discardableResult @inline(never) mutating func unicast(_ payload: Payload, to peer: PeerID) -> Bool {
        guard let endpoint = membership.peers[peer]?.endpoint ?? audience.viewer(peer)?.endpoint
        else { return false }
        out.append(.unicast(stamp(payload), to: endpoint))
        return true
    }

    /// A heartbeat now, rather than at its time: what it announces changed.
    mutating func announceNow() { announce(isHello: false) }

    @inline(never) mutating func reportDrop(_ reason: DropReason, detail: String, from source: Endpoint?) {
        if let text = counters.drop(reason, detail: detail, from: source, settings: settings) {
            out.append(.diagnose(text))
        }
    }

    /// Who `origin` is, as events name it (this agent's own commands: "here").
    func originator(_ origin: Member) -> Originator {
        membership.originator(origin, local: member, localName: identity.name)
    }

    func commandError(_ message: String, usage: String) -> Directive {
        .emit(.commandError(.init(message: message, usage: usage)))
    }
}

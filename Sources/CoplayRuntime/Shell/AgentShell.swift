import CoplayCore
import CoplaySimulatedPlayer
import Dispatch
import Glibc
import Synchronization

/// Where an agent's commands come from and its events go.
public enum ShellMode: Sendable {
    /// Standard input, output and error, and the signals: the `coplay` agent.
    case standardStreams
    /// Commands through `submit(_:)`, events to a closure with their true time: several agents
    /// in one process (`coplay demo`).
    case embedded(events: @Sendable (Event, Int64) -> Void)
}

/// The IO shell around one `Instance`: it owns the sockets, the timers, standard input and
/// output, feeds every input to the instance and carries out the directives it returns.
/// It decides nothing about the protocol.
///
/// The actor runs on an `EventLoop` of its own: one thread that reads the sockets, fires the
/// timers and runs the actor's jobs, so that a datagram is read and handled in one wake-up.
public actor AgentShell {
    private let loop: EventLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    private let mode: ShellMode
    /// Where events and diagnostics go (standard streams, the control socket).
    private let output: EventSink
    /// The group key file, reread on SIGHUP.
    private let keyFile: String?
    private var instance: Instance
    /// The local player, on the far side of the core's player boundary.
    private var player: any PlayerDriver
    /// The connection of an external player, or the socket a delegating player connects to,
    /// read once `run()` starts.
    private let playerConnections: PlayerConnections
    /// Lines from an external player queued and not yet handled (at most
    /// `Settings.playerLinesQueuedMax`).
    private let queuedPlayerLines = QueueGauge()
    private let transport: UDPTransport
    /// What a command's datagrams are marked with (`Settings.expeditedTrafficClass`).
    private let expeditedTrafficClass: UInt8
    private let clock: AgentClock
    private let inputs: AsyncStream<ShellInput>
    private let feed: AsyncStream<ShellInput>.Continuation
    /// Fires when the instance asked to be woken (`Directive.wake`); made by `run()`.
    private var tickTimer: EventLoop.Timer?
    /// Fires when the player next has something to report (ready, stall over, end of item).
    private var playerTimer: EventLoop.Timer?
    /// The exit status, once something handled outside `run()`'s own loop (a datagram, a
    /// timer) ended the agent; `run()` returns it.
    private var exitStatus: Int32?
    /// `AgentConfiguration.endsSessionOnQuit` and `exitsWhenEnded`.
    private let endsSessionOnQuit: String?
    private let exitsWhenEnded: Bool
    /// Who did what, for the player's own screen: gathered while the loop holds the player,
    /// shown once it lets go (`sayPlayerNotes`).
    private var onScreen = OnScreen()
    private var onScreenLines: [String] = []
    /// Where a datagram is read (one byte past the longest accepted, so a longer one is seen
    /// and rejected) and the kernel's ancillary data with it.
    private var receiveBuffer: [UInt8]
    /// The bounds of one turn of reading a socket, from `Settings` (read once: a value read
    /// through this actor's `instance` is a copy of the whole instance).
    private let turn: (datagramsMax: Int, durationMax: Duration)
    private let commandLineBytesMax: Int
    private var receiveControl = [UInt8](repeating: 0, count: 64)
    /// SIGINT, SIGTERM and SIGHUP as inputs, in the standard-streams agent only.
    private var signals: Signals?
    private var signalsSeen = 0
    /// The external player closed its connection.
    private var playerGone = false
    /// Standard-input lines queued and not yet processed (at most `Settings.inputLinesQueuedMax`).
    private let lineSlots: DispatchSemaphore
    /// The control socket (`--control`): its clients' lines come in as inputs.
    private var control: ControlServer? { output.control }
    /// `--relay`: the servers; the client is made by `run()`.
    private let relaySeeds: [RelayServer]
    /// Console lines carried out once the agent has started (a party's queue), and what it
    /// prints once it handles its signals (a party's link).
    private let startupLines: [String]
    private let startupOutput: String?
    /// What the command line accepted but a person may not have meant, said once at the start.
    private let startupNotes: [String]
    private var relay: RelayClient?
    private var relayTimer: EventLoop.Timer?
    /// The instance took a seat on the stage (`PlayerLoop.Step.subscribe`): the relay subscribes
    /// once the loop that said so has given the instance back (`subscribeIfTold`).
    private var subscribeTold = false

    /// Opens the sockets and prepares the instance; `run()` starts it.
    public init(configuration: AgentConfiguration, mode: ShellMode = .standardStreams) throws {
        self.mode = mode
        clock = AgentClock(skewNanos: configuration.clockSkewNanos)
        let interface = try configuration.interface.map { name throws(NetworkInterface.LookupError) in
            try NetworkInterface.lookup(name)
        }
        transport = try UDPTransport(group: configuration.group, interface: interface, port: configuration.port)
        expeditedTrafficClass = configuration.settings.expeditedTrafficClass
        let control: ControlServer?
        do {
            (player, playerConnections) = try PlayerConnections.open(
                configuration.player, mediaFolders: configuration.mediaFolders, ownFiles: configuration.ownFiles,
                audioLatency: configuration.audioLatency,
                settings: configuration.settings,
                clock: clock)
        } catch {
            transport.close()
            throw error
        }
        do {
            control = try configuration.controlPath.map { path throws(SocketError) in
                try ControlServer.listen(path: path, settings: configuration.settings)
            }
        } catch {
            transport.close()
            player.close()
            throw error
        }
        output = EventSink(mode: mode, json: configuration.json, clock: clock, control: control)
        var system = SystemRandomNumberGenerator()
        let identity = LocalIdentity(
            id: configuration.peerID ?? PeerID(system.next()), name: configuration.name,
            sessionName: configuration.sessionName, unicastPort: transport.local.port, playerKind: player.kind)
        let relayEntropy = configuration.relays.isEmpty ? nil : (0..<32).map { _ in UInt8.random(in: 0...255) }
        instance = Instance(
            identity: identity, settings: configuration.settings, seed: system.next(), now: clock.now(),
            keys: configuration.keys, seeds: configuration.peers, relayEntropy: relayEntropy)
        keyFile = configuration.keyFile
        relaySeeds = configuration.relays
        startupLines = configuration.startupLines
        endsSessionOnQuit = configuration.endsSessionOnQuit
        exitsWhenEnded = configuration.exitsWhenEnded
        startupOutput = configuration.startupOutput
        startupNotes = configuration.notes
        lineSlots = DispatchSemaphore(value: configuration.settings.inputLinesQueuedMax)
        (inputs, feed) = AsyncStream.makeStream(of: ShellInput.self, bufferingPolicy: .unbounded)
        receiveBuffer = [UInt8](repeating: 0, count: configuration.settings.datagramBytesMax + 1)
        let settings = configuration.settings
        turn = (settings.receiveQueueDatagramsMax, settings.receiveTurnDurationMax)
        commandLineBytesMax = settings.commandLineBytesMax
        do {
            loop = try EventLoop()
        } catch {
            transport.close()
            player.close()
            control?.close()
            throw error
        }
    }

    /// The unicast endpoint this agent answers on.
    public nonisolated var localEndpoint: Endpoint { transport.local }

    /// Embedded mode: one command line, as if typed.
    public nonisolated func submit(_ line: String) { feed.yield(.line(line)) }

    /// Embedded mode: the end of input (the agent leaves and `run()` returns).
    public nonisolated func finish() { feed.yield(.endOfInput) }

    /// This agent's status now, with the true time it was sampled at (unskewed Unix nanoseconds).
    public func status() -> (report: StatusReport, trueUnixNanos: Int64) {
        let now = clock.now()
        return (instance.statusReport(now: now), clock.trueUnixNanos(of: now.wall))
    }

    /// Runs until the agent exits; returns the process exit status.
    public func run() async -> Int32 {
        let feed = self.feed
        if case .standardStreams = mode { signals = Signals(into: feed) }
        if let startupOutput { StandardStreams.writeOutput(startupOutput) }
        for note in startupNotes { diagnose(note) }
        // The loop calls these on its thread, the actor's executor: `assumeIsolated` holds.
        tickTimer = loop.makeTimer { [self] in assumeIsolated { $0.finishIf($0.fireTick()) } }
        playerTimer = loop.makeTimer { [self] in assumeIsolated { $0.finishIf($0.firePlayerTimer()) } }
        transport.prepareReceiving()
        startRelay()
        let (groupSocket, unicastSocket) = transport.descriptors
        loop.watch(groupSocket) { [self] in assumeIsolated { $0.readDatagrams(from: groupSocket, viaGroup: true) } }
        loop.watch(unicastSocket) { [self] in assumeIsolated { $0.readDatagrams(from: unicastSocket, viaGroup: false) }
        }
        if let text = playerConnections.startReading(
            into: feed, queued: queuedPlayerLines, settings: instance.settings, clock: clock)
        {
            diagnose(text)
        }
        defer {
            relay?.close()
            loop.stop()
            transport.close()
            player.close()
            control?.close()
        }
        if let control {
            control.start(clock: clock) { feed.yield($0) }
            diagnose("control socket at \(control.path) (coplay ctl \(control.path) help)")
        }
        if case .standardStreams = mode {
            let slots = lineSlots
            StandardInputReader.start(lineBytesMax: instance.settings.commandLineBytesMax) { input in
                if case .line = input { slots.wait() }
                feed.yield(input)
            }
        }
        diagnose(
            "\(instance.identity.name) (\(instance.identity.id)) in session '\(instance.identity.sessionName)' on group \(transport.group), unicast \(transport.local); version \(CoplayVersion.current)"
        )

        if let status = carryOut(instance.start(now: clock.now())) { return status }
        for line in startupLines {
            if let status = carryOut(consoleLine(line)) { return status }
        }
        for await input in inputs {
            if let exitStatus { return exitStatus }
            let directives: [Directive]
            switch input {
            case .finished:
                continue
            case .line(let line):
                if case .standardStreams = mode { lineSlots.signal() }
                directives = consoleLine(line)
            case .endOfInput:
                guard control == nil else {
                    diagnose("standard input closed; running on, for the control socket (quit or SIGTERM ends it)")
                    continue
                }
                directives = quit(now: clock.now())
            case .controlLine(let client, let line):
                let handled = output.controlLine(line, from: client) { carryOut(consoleLine($0)) }
                if let status = handled { return status }
                continue
            case .signal(SIGHUP):
                reloadKeys()
                continue
            case .signal(let number):
                signalsSeen += 1
                if signalsSeen > 1 {
                    diagnose("second signal \(number): exiting at once")
                    return 0
                }
                directives = quit(now: clock.now())
            case .playerLine(let line, let receivedAt):
                queuedPlayerLines.leave()
                if let status = playerChanged(reports: player.receive(line: line, at: receivedAt)) { return status }
                continue
            case .playerConnected:
                if let status = playerChanged(reports: player.connected(now: clock.now())) { return status }
                continue
            case .playerClosed:
                let now = clock.now()
                let (reports, leave) = player.disconnected(now: now)
                sayPlayerNotes()
                guard leave else {
                    if let status = playerChanged(reports: reports) { return status }
                    continue
                }
                guard !playerGone else { continue }
                playerGone = true
                if signalsSeen == 0 { diagnose("the player (\(player.kind)) closed: leaving the session") }
                directives = reports.flatMap { instance.onPlayerReport($0, now: now) } + quit(now: now)
            }
            if let status = carryOut(directives) { return status }
        }
        return exitStatus ?? 0
    }

    /// A console line (typed, from the control socket, a party's queue). A local file it shares,
    /// queues or loads is known to the group by its content (`ContentIdentity`): read here, since
    /// the core reads no file.
    private func consoleLine(_ line: String) -> [Directive] {
        // `accept`: the person takes the other encode of the group's item its driver offered (a
        // choice of this machine's, never a group command).
        if line.split(whereSeparator: { $0 == " " || $0 == "\t" }) == ["accept"] {
            guard let reports = player.acceptOffer() else {
                diagnose("nothing to accept: accept plays another encode of the group's item when one is offered")
                return []
            }
            finishIf(playerChanged(reports: reports))
            return []
        }
        guard case .success(let command?) = ConsoleCommand.parse(line, lineBytesMax: commandLineBytesMax) else {
            return instance.onConsoleLine(line, now: clock.now())
        }
        if case .quit = command { return quit(now: clock.now()) }
        let identified = ContentIdentity.identify(command)
        return instance.onCommand(identified, now: clock.now())
    }

    /// Quitting: leaving the session and exiting once the goodbye is out; for a party's host
    /// (`endsSessionOnQuit`), ending the session for everyone first, while its relay still runs.
    private func quit(now: Timestamp) -> [Directive] {
        guard let reason = endsSessionOnQuit, instance.state.isJoined else {
            return instance.onCommand(.quit, now: now)
        }
        diagnose("\(reason): ending the session for everyone in it")
        return instance.onCommand(.end(reason: reason), now: now) + instance.onCommand(.quit, now: now)
    }

    /// Another participant ended the session, and this agent is done when it is
    /// (`exitsWhenEnded`): says so and quits. Nil for any other directives.
    private func quitIfEnded(_ directives: [Directive]) -> [Directive]? {
        guard exitsWhenEnded else { return nil }
        for case .emit(.session(let report)) in directives {
            guard case .invalidated(.ended(let by, let reason)) = report.state else { continue }
            diagnose("\(by) ended the session\(reason.isEmpty ? "" : ": \(reason)"); exiting")
            return instance.onCommand(.quit, now: clock.now())
        }
        return nil
    }

    /// Reads and handles the datagrams waiting on one socket, in one turn of at most
    /// `Settings.receiveQueueDatagramsMax` datagrams and `receiveTurnDurationMax`, so that the
    /// loop's other inputs and timers are not held back by a flood or by the agent's own slowness.
    /// Which datagrams of a turn are read is the core's decision (`ReceiveTurn`).
    private func readDatagrams(from socket: Int32, viaGroup: Bool) {
        let turnEnds = clock.now().monotonic + turn.durationMax
        var (read, drained) = (0, false)
        var receiving = instance.beginReceiveTurn()
        while exitStatus == nil, read < turn.datagramsMax {
            if read > 0, clock.now().monotonic > turnEnds { break }
            guard
                let received = transport.receive(
                    on: socket, into: &receiveBuffer, control: &receiveControl, clock: clock)
            else {
                drained = true
                break
            }
            read += 1
            let directives = instance.onDatagram(
                receiveBuffer[0..<received.count], from: received.source, receivedAt: received.stamp,
                now: clock.now(), viaGroup: viaGroup, turn: &receiving)
            finishIf(carryOut(directives))
        }
        guard exitStatus == nil else { return }
        finishIf(carryOut(instance.endReceiveTurn(receiving, drained: drained, now: clock.now())))
    }

    /// The wake-up timer fired.
    private func fireTick() -> Int32? { carryOut(instance.onTick(now: clock.now())) }

    /// The player's timer fired.
    private func firePlayerTimer() -> Int32? { playerChanged(reports: player.advance(now: clock.now())) }

    /// Something outside `run()`'s loop ended the agent: `run()` returns `status`.
    private func finishIf(_ status: Int32?) {
        guard let status, exitStatus == nil else { return }
        exitStatus = status
        feed.yield(.finished)
    }

    /// Carries out directives through the loop the simulation runs too (`PlayerLoop`: the
    /// datagrams first, then the rest in order; then the player's reports go back to the
    /// instance). Returns an exit status when a directive says to exit.
    private func carryOut(_ directives: [Directive]) -> Int32? {
        let clock = self.clock
        let outcome = PlayerLoop.carryOut(
            directives, instance: &instance, player: &player, now: { clock.now() }, carry: { carry($0) })
        subscribeIfTold()
        sayPlayerNotes()
        if let status = outcome.exitStatus { return status }
        if outcome.playerTouched { schedulePlayerTimer() }
        if let quitting = quitIfEnded(directives) { return carryOut(quitting) }
        return nil
    }

    /// The player did something (its timer, a line from it): hands what it reported back to the
    /// instance and sets the player's timer for what it will report next.
    private func playerChanged(reports: [PlayerReport]) -> Int32? {
        let clock = self.clock
        let status = PlayerLoop.feed(
            reports, instance: &instance, player: &player, now: { clock.now() }, carry: { carry($0) })
        subscribeIfTold()
        sayPlayerNotes()
        if let status { return status }
        schedulePlayerTimer()
        return nil
    }

    /// What the player's driver has to tell the person (the copy it plays), and what the player
    /// shows of who did what.
    private func sayPlayerNotes() {
        for note in player.takeNotes() { diagnose(note) }
        guard !onScreenLines.isEmpty else { return }
        for line in onScreenLines { player.show(line) }
        onScreenLines.removeAll(keepingCapacity: true)
    }

    /// Sets the player's timer for what it will report next. Only after the player did
    /// something, so that a datagram that does not concern the player costs nothing here.
    private func schedulePlayerTimer() {
        if let due = player.nextEvent(now: clock.now()), let playerTimer { loop.schedule(playerTimer, at: due) }
    }

    /// The relay subscribes to the instance's subjects as they are now, with its keep-alive: the
    /// instance took a seat on the stage. (Read here, after the loop: the loop holds the instance.)
    private func subscribeIfTold() {
        guard subscribeTold, let relay else { return }
        subscribeTold = false
        let (subjects, bounds) = (instance.relaySubscriptions, instance.settings.relay)
        let events = relay.subscriptionsChanged(to: subjects, relay: bounds, now: clock.now().monotonic)
        if !events.isEmpty { relayEvents(events) }
    }

    /// One directive, other than the player's commands and the exit (`PlayerLoop`).
    private func carry(_ step: PlayerLoop.Step) {
        switch step {
        case .datagram(let bytes, let destination, let expedited):
            let trafficClass = expedited ? expeditedTrafficClass : 0
            if let (error, errors) = transport.send(
                bytes, to: destination ?? transport.group, trafficClass: trafficClass),
                errors <= 3 || errors % 1000 == 0
            {
                diagnose("\(error) (\(errors) send errors so far)")
            }
        case .publish(let frame, let subject):
            // Dropped and counted while not connected: the protocol's repair makes up what is
            // missed. A publish moves no timer: only what it reported is handled.
            guard let relay else { return }
            let events = relay.publish(frame, on: subject, now: clock.now().monotonic)
            if !events.isEmpty { relayEvents(events) }
        case .subscribe:
            subscribeTold = true
        case .emit(let event):
            var wire = transport.statistics
            wire.relay = relay?.statistics
            output.emit(event, wire: wire)
            if let line = OnScreen.text(for: event) {
                if onScreen.admit(now: clock.now().monotonic) {
                    onScreenLines.append(line)
                } else if onScreen.dropped == 1 || onScreen.dropped % 1000 == 0 {
                    diagnose(
                        "\(onScreen.dropped) line(s) not shown on the player's screen: more than \(Settings.OnScreen.perWindowMax) came within \(Settings.OnScreen.window)"
                    )
                }
            }
        case .diagnose(let text):
            diagnose(text)
        case .wake(let instant):
            // Set again only to fire sooner: a timer already due earlier fires as it is, and
            // that tick (harmless when early) asks for the later instant. Most datagrams move
            // the wake-up later (a peer heard): this spares a reschedule for each of them.
            guard let tickTimer else { return }
            if let due = loop.due(tickTimer), due > clock.now().monotonic, due <= instant { return }
            loop.schedule(tickTimer, at: instant)
        }
    }

    // MARK: The relay

    /// Connects to the first `--relay` server, subscribed to the group's subjects.
    private func startRelay() {
        let subjects = instance.relaySubscriptions
        guard !subjects.isEmpty, !relaySeeds.isEmpty else { return }
        var system = SystemRandomNumberGenerator()
        relay = RelayClient(
            seeds: relaySeeds, subjects: subjects, clientName: "coplay", settings: instance.settings,
            seed: system.next(), loop: loop,
            readable: { [self] in assumeIsolated { $0.onRelay { $0.readable(now: $1) } } },
            writable: { [self] in assumeIsolated { $0.onRelay { $0.writable(now: $1) } } })
        relayTimer = loop.makeTimer { [self] in assumeIsolated { $0.onRelay { $0.tick(now: $1) } } }
        onRelay { $0.start(now: $1) }
    }

    /// Something for the relay client to do now (its socket, its timer, a publish, new keys).
    private func onRelay(_ act: (RelayClient, MonotonicInstant) -> [RelayClient.Event]) {
        guard let relay else { return }
        relayEvents(act(relay, clock.now().monotonic))
    }

    /// What the relay client reported: each frame goes to the instance, which opens it.
    private func relayEvents(_ events: [RelayClient.Event]) {
        for event in events where exitStatus == nil {
            switch event {
            case .diagnose(let text):
                diagnose(text)
            case .connected:
                finishIf(carryOut(instance.onPathRestored(now: clock.now())))
            case .frame(let subject, let frame):
                let now = clock.now()
                finishIf(carryOut(instance.onRelayFrame(frame, subject: subject, receivedAt: now, now: now)))
            }
        }
        if let relay, let relayTimer, let due = relay.nextWake { loop.schedule(relayTimer, at: due) }
    }

    /// SIGHUP: read the key file again, so that a key can be rotated without stopping the group
    /// (first add the new key as the current one with the old one below it on every agent, then
    /// drop the old one). A file that cannot be read keeps the keys in force.
    private func reloadKeys() {
        guard let keyFile else { return diagnose("SIGHUP: no --key-file to reread") }
        switch KeyFile.load(keyFile) {
        case .success(let keys):
            instance.onKeysChanged(keys)
            diagnose("SIGHUP: key file reread, \(keys.count) key\(keys.count == 1 ? "" : "s") in force")
            let subjects = instance.relaySubscriptions
            onRelay { $0.resubscribe(subjects, now: $1) }
        case .failure(let error):
            diagnose("SIGHUP: \(error.message); the keys in force stay")
        }
    }

    private func diagnose(_ text: String) { output.diagnose(text) }
}

/// Who this agent is.
public struct LocalIdentity: Hashable, Sendable {
    public var id: PeerID
    /// The human name, at most `Settings.nameBytesMax` bytes of UTF-8.
    public var name: String
    public var sessionName: String
    /// The port of this agent's unicast socket, announced in hellos and heartbeats.
    public var unicastPort: UInt16

    public init(id: PeerID, name: String, sessionName: String, unicastPort: UInt16) {
        self.id = id
        self.name = name
        self.sessionName = sessionName
        self.unicastPort = unicastPort
    }
}

/// One coplay agent's protocol, as a value: membership, failure detection and clock sync.
///
/// It performs no IO and reads no clock. Each input is one `mutating func on…` that takes the
/// time as an argument and returns the `Directive`s the shell must carry out, always ending with
/// a `.wake(at:)` while the agent is joined. Randomness (timer jitter, probe tokens) comes from a
/// generator seeded by the caller, so the simulation replays a run exactly from its seed.
public struct Instance: Sendable {
    public let settings: Settings
    public let identity: LocalIdentity
    public let session: SessionID
    public internal(set) var state: SessionState = .waiting
    public private(set) var incarnation: Incarnation
    /// The live participants other than this agent, by id. At most `Settings.peersMax`.
    public internal(set) var peers: [PeerID: PeerRecord] = [:]
    public internal(set) var counters = Counters()

    private var sequence: UInt32 = 0
    var random: SplitMix64
    private var nextProbeToken: UInt64
    /// When the remaining hellos of the announce burst are due, earliest first.
    private var pendingAnnounces: [MonotonicInstant] = []
    private var nextHeartbeatAt: MonotonicInstant?
    /// Copies of our last leave still to send, earliest first; they keep the incarnation that left.
    private var pendingLeaves: [(at: MonotonicInstant, datagram: Datagram)] = []
    /// Set by `quit`: exit once the last leave copy is out.
    private var exitAfterLeaving = false

    // MARK: Playback state (see Instance+Playback.swift)
    /// The replicated command log.
    public internal(set) var log: CausalLog
    /// The winning `share`: the group's activity.
    public internal(set) var activity: CommandEnvelope?
    /// The group state of each item: the winning command and the timeline it defines.
    public internal(set) var items: [String: ItemGroupState] = [:]
    /// The local player.
    public internal(set) var player = SimulatedPlayer()
    /// The coordinated start or seek this agent is waiting on, if any.
    public internal(set) var coordination: Coordination?
    /// This participant's active suspensions, oldest first. At most `Announcement.suspensionsMax`.
    public internal(set) var suspensions: [Suspension] = []
    var nextSuspensionID: UInt32 = 1
    var pendingProposal: PendingProposal?
    var nextMessageID: UInt32 = 1
    /// Messages being reassembled, by sender and number. At most `Settings.partialMessagesMax`.
    var partialMessages: [MessageKey: PartialMessage] = [:]
    /// The last 256 unreliable messages completed, so that a duplicated part does not deliver one twice.
    var completedUnreliable: [MessageKey] = []
    var itemsChangeOrder: [String] = []
    /// Duration and buffering this agent gave with its own `share`, used when the share is delivered.
    var localItemSettings: (itemID: String, duration: Double?, buffer: Double)?
    /// Every delivered command, in delivery order, when `Settings.recordsDeliveries` is on.
    public internal(set) var deliveries: [CommandEnvelope] = [] {
        didSet { if deliveries.count > settings.deliveriesRecordedMax { deliveries.removeFirst(deliveries.count / 2) } }
    }
    var nackSentAt: [PeerID: MonotonicInstant] = [:]
    /// Set while repaired history is still arriving (this agent is behind a peer's digest): the
    /// player follows the final state once caught up, instead of replaying each change. Holds
    /// when the wait began; it is given up after `Settings.historyCatchUpMax`.
    var followDeferredSince: MonotonicInstant?
    /// How each received command's times were converted, until it is applied (by dot).
    var conversions: [Dot: ClockSource] = [:]
    /// Origins in the log that are not live members, with when they were first seen gone.
    var originsGoneSince: [Member: MonotonicInstant] = [:]
    /// Commands whose sender's clock offset is not known yet, by sender, with their arrival:
    /// their times cannot be interpreted until it is. At most `Settings.commandsAwaitingClockMax`.
    var awaitingClock: [PeerID: [(envelope: CommandEnvelope, sender: Member, source: Endpoint, at: MonotonicInstant)]] =
        [:]
    /// Clock estimators of peers that left the table, by id (the clock belongs to the machine):
    /// restored if the peer comes back. At most `Settings.retiredClocksMax`.
    var retiredClocks: [PeerID: OffsetEstimator] = [:]
    var retiredClockOrder: [PeerID] = []
    /// Memberships that ended gracefully or were replaced, with when to forget them. At most
    /// `Settings.departedMax`.
    private var departed: [Member: MonotonicInstant] = [:]

    public init(identity: LocalIdentity, settings: Settings = Settings(), seed: UInt64, now: Timestamp) {
        precondition(
            identity.name.utf8.count <= settings.nameBytesMax, "name longer than \(settings.nameBytesMax) bytes")
        self.identity = identity
        self.settings = settings
        session = SessionID(name: identity.sessionName)
        incarnation = Incarnation.initial(at: now.wall)
        random = SplitMix64(seed: seed)
        nextProbeToken = random.next()
        log = CausalLog(pendingMax: settings.pendingCommandsMax, storeMax: settings.storedCommandsMax)
    }

    public var member: Member { Member(id: identity.id, incarnation: incarnation) }

    // MARK: Inputs

    /// Joins the session: the agent's first input.
    public mutating func start(now: Timestamp) -> [Directive] {
        guard case .waiting = state else { preconditionFailure("start() in state \(state)") }
        var out: [Directive] = []
        join(now: now, into: &out)
        return finish(out, now: now)
    }

    /// One line typed on standard input.
    public mutating func onConsoleLine(_ line: String, now: Timestamp) -> [Directive] {
        switch ConsoleCommand.parse(line, lineBytesMax: settings.commandLineBytesMax) {
        case .success(nil):
            return []
        case .success(let command?):
            return onCommand(command, now: now)
        case .failure(let error):
            counters.commandErrors += 1
            return [.emit(.commandError(error))]
        }
    }

    /// One parsed console command.
    public mutating func onCommand(_ command: ConsoleCommand, now: Timestamp) -> [Directive] {
        var out: [Directive] = []
        switch command {
        case .status:
            out.append(.emit(.status(statusReport(now: now))))
        case .peers:
            out.append(.emit(.peers(peerInfos(now: now.monotonic))))
        case .help:
            out.append(.emit(.help(ConsoleCommand.usages)))
        case .quit:
            exitAfterLeaving = true
            if state.isJoined { leave(reason: .shutdown, now: now, into: &out) }
            if pendingLeaves.isEmpty {
                out.append(.exit(status: 0))
                return out
            }
        case .leave:
            guard state.isJoined else {
                return [.emit(.commandError(.init(message: "not joined (state \(state.name))", usage: "join")))]
            }
            leave(reason: .left, now: now, into: &out)
        case .join:
            guard !state.isJoined else {
                return [.emit(.commandError(.init(message: "already joined", usage: "leave")))]
            }
            join(now: now, into: &out)
        case .end(let reason):
            guard state.isJoined else {
                return [.emit(.commandError(.init(message: "not joined (state \(state.name))", usage: "join")))]
            }
            endSession(reason: reason, now: now, into: &out)
        case .load, .share, .play, .playNow, .pause, .seek, .rate, .stall:
            playbackCommand(command, now: now, into: &out)
        case .suspend, .resume, .whatHappened:
            suspensionCommand(command, now: now, into: &out)
        case .message(let to, let unreliable, let text):
            sendMessage(to: to, unreliable: unreliable, text: text, now: now, into: &out)
        }
        return finish(out, now: now)
    }

    /// One datagram from either socket. `receivedAt` is when the shell's receive loop got it;
    /// `now` is when this handler runs.
    public mutating func onDatagram(_ bytes: [UInt8], from source: Endpoint, receivedAt: Timestamp, now: Timestamp)
        -> [Directive]
    {
        var out: [Directive] = []
        counters.datagramsReceived += 1
        let datagram: Datagram
        do {
            datagram = try WireFormat.decode(
                bytes, datagramBytesMax: settings.datagramBytesMax, nameBytesMax: settings.nameBytesMax)
        } catch {
            reportDrop(DropReason(error.kind), detail: error.detail, from: source, into: &out)
            return finish(out, now: now)
        }
        receive(datagram, from: source, receivedAt: receivedAt, now: now, into: &out)
        return finish(out, now: now)
    }

    /// The wake-up the last directive list asked for (or a spurious one: it is harmless).
    public mutating func onTick(now: Timestamp) -> [Directive] {
        var out: [Directive] = []
        tick(now: now, into: &out)
        playbackTick(now: now, into: &out)
        return finish(out, now: now)
    }

    // MARK: Session lifecycle

    private mutating func join(now: Timestamp, into out: inout [Directive]) {
        if case .invalidated = state {
            incarnation = max(incarnation.next, Incarnation.initial(at: now.wall))
            // A new membership starts with an empty log and catches up by repair.
            log = CausalLog(pendingMax: settings.pendingCommandsMax, storeMax: settings.storedCommandsMax)
            activity = nil
            items.removeAll()
            itemsChangeOrder.removeAll()
            coordination = nil
        }
        sequence = 0
        state = .joined(since: now.monotonic)
        pendingAnnounces = settings.announceOffsets.map { now.monotonic + $0 }.sorted()
        nextHeartbeatAt =
            now.monotonic + random.jittered(settings.heartbeatInterval, fraction: settings.heartbeatJitterFraction)
        out.append(.emit(.session(SessionReport(state: state, member: member))))
        tick(now: now, into: &out)
    }

    private mutating func leave(reason: LeaveReason, now: Timestamp, into out: inout [Directive]) {
        leaveWith(.leave(reason), invalidation: reason == .left ? .left : .shutdown, now: now, into: &out)
    }

    /// Ends the session for everyone: the end message goes out like a leave (repeated).
    private mutating func endSession(reason: String, now: Timestamp, into out: inout [Directive]) {
        leaveWith(.end(reason: reason), invalidation: .ended(by: identity.name, reason: reason), now: now, into: &out)
    }

    private mutating func leaveWith(
        _ payload: Payload, invalidation: InvalidationReason, now: Timestamp, into out: inout [Directive]
    ) {
        guard state.isJoined else { preconditionFailure("leaving (\(invalidation)) in state \(state)") }
        let offsets = settings.leaveCopyOffsets.isEmpty ? [.zero] : settings.leaveCopyOffsets.sorted()
        pendingLeaves += offsets.map { (now.monotonic + $0, outgoing(payload)) }
        peers.removeAll()
        pendingAnnounces.removeAll()
        nextHeartbeatAt = nil
        coordination = nil
        state = .invalidated(reason: invalidation)
        out.append(.emit(.session(SessionReport(state: state, member: member))))
        tick(now: now, into: &out)
    }

    // MARK: Receiving

    private mutating func receive(
        _ datagram: Datagram, from source: Endpoint, receivedAt: Timestamp, now: Timestamp, into out: inout [Directive]
    ) {
        guard datagram.session == session else {
            return reportDrop(.otherSession, detail: "session \(datagram.session)", from: source, into: &out)
        }
        guard datagram.authTag.isEmpty else {
            return reportDrop(.unauthenticated, detail: "tagged datagram, no key configured", from: source, into: &out)
        }
        let sender = datagram.sender
        if sender.id == identity.id {
            if sender.incarnation == incarnation {
                counters.ownEchoes += 1
            } else {
                reportDrop(.idConflict, detail: "another agent uses id \(sender.id)", from: source, into: &out)
            }
            return
        }
        guard state.isJoined else {
            return reportDrop(.notJoined, detail: "\(datagram.payload.type)", from: source, into: &out)
        }
        guard departed[sender] == nil else {
            return reportDrop(.fromDeparted, detail: "\(sender) has left", from: source, into: &out)
        }
        switch datagram.payload {
        case .hello(let announcement), .heartbeat(let announcement):
            let endpoint = Endpoint(address: source.address, port: announcement.unicastPort)
            guard
                admit(
                    sender, name: announcement.name, endpoint: endpoint, heardAt: receivedAt.monotonic, now: now,
                    into: &out)
            else { return }
            if case .hello = datagram.payload, !announcement.isReply {
                replyToHello(from: sender.id, now: now.monotonic, into: &out)
            }
            if var record = peers[sender.id] {
                let changed =
                    record.item != announcement.item || record.isWaiting != announcement.isWaiting
                    || record.isReady != announcement.isReady || record.suspensions != announcement.suspensions
                record.item = announcement.item
                record.isWaiting = announcement.isWaiting
                record.isReady = announcement.isReady
                record.suspensions = announcement.suspensions
                record.digest = announcement.digest
                peers[sender.id] = record
                if changed { out.append(.emit(.peerChanged(record.info(now: now.monotonic)))) }
            }
            requestRepair(from: sender.id, missing: log.missing(comparedTo: announcement.digest), now: now, into: &out)
        case .leave(let reason):
            guard let record = peers[sender.id], record.member == sender else {
                return reportDrop(.unknownSender, detail: "leave from \(sender)", from: source, into: &out)
            }
            remove(record, because: reason == .left ? .left : .shutdown, now: now.monotonic, into: &out)
        case .probe(let probe):
            heard(sender, at: receivedAt.monotonic, into: &out)
            let reply = ClockProbeReply(
                token: probe.token, originWall: probe.originWall, receiveWall: receivedAt.wall, transmitWall: now.wall)
            out.append(.unicast(outgoing(.probeReply(reply)), to: source))
        case .probeReply(let reply):
            guard var record = peers[sender.id], record.member == sender else {
                return reportDrop(.unknownSender, detail: "probe reply from \(sender)", from: source, into: &out)
            }
            guard let sentAt = record.outstandingProbes.removeValue(forKey: reply.token) else {
                return reportDrop(.unexpectedProbeReply, detail: "token \(reply.token)", from: source, into: &out)
            }
            switch OffsetSample.measure(
                reply: reply, sentAt: sentAt, receivedAt: receivedAt.monotonic, timeout: settings.probeTimeout)
            {
            case .success(let sample):
                record.clock.add(sample)
                if !record.isClockSynced, record.clock.sampleCount >= settings.offsetSamplesForSync {
                    record.isClockSynced = true
                    out.append(.emit(.clockSynced(record.info(now: now.monotonic))))
                }
                peers[sender.id] = record
                heard(sender, at: receivedAt.monotonic, into: &out)
                releaseCommandsAwaitingClock(of: sender.id, now: now, into: &out)
            case .failure(let rejection):
                peers[sender.id] = record
                reportDrop(.implausibleProbeReply, detail: rejection.rawValue, from: source, into: &out)
            }
        case .command(let envelope, _):
            heard(sender, at: receivedAt.monotonic, into: &out)
            receiveCommand(envelope, from: sender, source: source, now: now, into: &out)
        case .nack(let ranges):
            heard(sender, at: receivedAt.monotonic, into: &out)
            var budget = settings.repairBatchMax
            for range in ranges where budget > 0 {
                for envelope in log.stored(range, limit: budget) {
                    out.append(.unicast(outgoing(.command(envelope, isRepair: true)), to: source))
                    budget -= 1
                }
            }
        case .ready(let trigger):
            heard(sender, at: receivedAt.monotonic, into: &out)
            receiveReady(trigger, from: sender, now: now, into: &out)
        case .unreliableMessage(let part):
            heard(sender, at: receivedAt.monotonic, into: &out)
            receiveMessagePart(part, from: sender, isReliable: false, now: now, into: &out)
        case .end(let reason):
            let by = peers[sender.id]?.name ?? sender.id.description
            leaveWith(.end(reason: reason), invalidation: .ended(by: by, reason: reason), now: now, into: &out)
        }
    }

    /// Records an announcement: a new participant, a new incarnation of a known one, or news of
    /// a known one. Returns false when the datagram is to be ignored.
    private mutating func admit(
        _ sender: Member, name: String, endpoint: Endpoint, heardAt: MonotonicInstant, now: Timestamp,
        into out: inout [Directive]
    ) -> Bool {
        if let record = peers[sender.id] {
            if sender.incarnation < record.member.incarnation {
                reportDrop(.staleIncarnation, detail: "\(sender) after \(record.member)", from: endpoint, into: &out)
                return false
            }
            if sender.incarnation == record.member.incarnation {
                peers[sender.id]?.name = name
                peers[sender.id]?.endpoint = endpoint
                heard(sender, at: heardAt, into: &out)
                return true
            }
            remove(record, because: .restarted, now: heardAt, into: &out)
        }
        guard peers.count < settings.peersMax else {
            reportDrop(.peerTableFull, detail: "\(settings.peersMax) peers", from: endpoint, into: &out)
            return false
        }
        var record = PeerRecord(member: sender, name: name, endpoint: endpoint, now: heardAt, settings: settings)
        if let clock = retiredClocks.removeValue(forKey: sender.id) {
            record.clock = clock
            retiredClockOrder.removeAll { $0 == sender.id }
        }
        out.append(.emit(.peerJoined(record.info(now: heardAt))))
        sendProbe(to: &record, now: now, into: &out)  // the clock-sync burst starts at once
        peers[sender.id] = record
        return true
    }

    /// Anything from a known membership proves it alive.
    private mutating func heard(_ sender: Member, at heardAt: MonotonicInstant, into out: inout [Directive]) {
        guard var record = peers[sender.id], record.member == sender else { return }
        record.lastHeard = max(record.lastHeard, heardAt)
        if record.liveness == .suspected {
            record.liveness = .alive
            record.nextProbeAt = min(record.nextProbeAt, heardAt + settings.probeWarmupInterval)
            out.append(.emit(.peerResponsive(record.info(now: heardAt))))
        }
        peers[sender.id] = record
    }

    private mutating func replyToHello(from id: PeerID, now: MonotonicInstant, into out: inout [Directive]) {
        guard var record = peers[id] else { return }
        if let last = record.lastHelloReplyAt, now - last < settings.helloReplyInterval { return }
        record.lastHelloReplyAt = now
        peers[id] = record
        out.append(.unicast(outgoing(.hello(announcement(isReply: true))), to: record.endpoint))
    }

    private mutating func remove(
        _ record: PeerRecord, because reason: PeerDeparture, now: MonotonicInstant, into out: inout [Directive]
    ) {
        peers[record.member.id] = nil
        if record.clock.sampleCount > 0 {
            retiredClocks[record.member.id] = record.clock
            retiredClockOrder.removeAll { $0 == record.member.id }
            retiredClockOrder.append(record.member.id)
            if retiredClockOrder.count > settings.retiredClocksMax {
                retiredClocks[retiredClockOrder.removeFirst()] = nil
            }
        }
        // A membership that ended for sure is remembered, so that its reordered datagrams cannot
        // bring it back. One that merely went silent is not: if it is heard again (a partition
        // healed), it is alive and rejoins the table.
        if reason != .timeout {
            if departed.count >= settings.departedMax,
                let oldest = departed.min(by: {
                    ($0.value, $0.key.id, $0.key.incarnation) < ($1.value, $1.key.id, $1.key.incarnation)
                })
            {
                departed[oldest.key] = nil
            }
            departed[record.member] = now + settings.departedMemory
        }
        out.append(.emit(.peerLeft(record.info(now: now), reason: reason)))
    }

    // MARK: Timers

    private mutating func tick(now: Timestamp, into out: inout [Directive]) {
        let instant = now.monotonic
        while let (due, datagram) = pendingLeaves.first, due <= instant {
            pendingLeaves.removeFirst()
            out.append(.multicast(datagram))
        }
        if exitAfterLeaving, pendingLeaves.isEmpty, !state.isJoined {
            out.append(.exit(status: 0))
            return
        }
        guard state.isJoined else { return }
        while let due = pendingAnnounces.first, due <= instant {
            pendingAnnounces.removeFirst()
            out.append(.multicast(outgoing(.hello(announcement(isReply: false)))))
        }
        if let due = nextHeartbeatAt, due <= instant {
            out.append(.multicast(outgoing(.heartbeat(announcement(isReply: false)))))
            nextHeartbeatAt =
                instant + random.jittered(settings.heartbeatInterval, fraction: settings.heartbeatJitterFraction)
        }
        for id in peers.keys.sorted() {
            guard var record = peers[id] else { continue }
            let silence = instant - record.lastHeard
            if silence >= settings.deadAfter {
                remove(record, because: .timeout, now: instant, into: &out)
                continue
            }
            if silence >= settings.suspectAfter, record.liveness == .alive {
                record.liveness = .suspected
                record.nextProbeAt = instant
                out.append(.emit(.peerUnresponsive(record.info(now: instant))))
            }
            let expiry = instant - settings.probeTimeout
            record.outstandingProbes = record.outstandingProbes.filter { $0.value > expiry }
            if record.nextProbeAt <= instant {
                sendProbe(to: &record, now: now, into: &out)
            }
            peers[id] = record
        }
        departed = departed.filter { $0.value > instant }
    }

    private mutating func sendProbe(to record: inout PeerRecord, now: Timestamp, into out: inout [Directive]) {
        let token = nextProbeToken
        nextProbeToken &+= 1
        if record.outstandingProbes.count >= settings.outstandingProbesPerPeerMax,
            let oldest = record.outstandingProbes.min(by: { $0.value < $1.value })
        {
            record.outstandingProbes[oldest.key] = nil
        }
        record.outstandingProbes[token] = now.monotonic
        if record.liveness == .suspected {
            record.nextProbeAt = now.monotonic + settings.suspectProbeInterval
        } else {
            record.scheduleNextProbe(
                after: now.monotonic, peerCount: max(peers.count, 1), settings: settings, random: &random)
        }
        out.append(.unicast(outgoing(.probe(ClockProbe(token: token, originWall: now.wall))), to: record.endpoint))
    }

    /// The earliest instant at which `tick` has something to do.
    private func nextWake(now: Timestamp) -> MonotonicInstant? {
        if let due = pendingLeaves.first?.at, !state.isJoined { return due }
        guard state.isJoined else { return nil }
        var earliest = [pendingAnnounces.first, nextHeartbeatAt, pendingLeaves.first?.at].compactMap { $0 }.min()
        for record in peers.values {
            var candidates = [record.nextProbeAt, record.lastHeard + settings.deadAfter]
            if record.liveness == .alive { candidates.append(record.lastHeard + settings.suspectAfter) }
            if let due = candidates.min(), earliest.map({ due < $0 }) ?? true { earliest = due }
        }
        if let due = playbackWake(now: now), earliest.map({ due < $0 }) ?? true { earliest = due }
        return earliest
    }

    private func finish(_ directives: [Directive], now: Timestamp) -> [Directive] {
        if case .exit = directives.last { return directives }
        guard let wake = nextWake(now: now) else { return directives }
        return directives + [.wake(at: max(wake, now.monotonic))]
    }

    // MARK: Outgoing datagrams and reports

    mutating func outgoing(_ payload: Payload) -> Datagram {
        sequence &+= 1
        if sequence == 0 { sequence = 1 }
        counters.datagramsSent += 1
        return Datagram(session: session, sender: member, sequence: sequence, payload: payload)
    }

    func announcement(isReply: Bool) -> Announcement {
        var digest = VectorClock()
        for entry in log.delivered.sorted.prefix(WireFormat.vectorClockEntriesMax) {
            digest[entry.member] = entry.count
        }
        return Announcement(
            isReply: isReply, unicastPort: identity.unicastPort, name: identity.name, item: player.item?.id,
            isWaiting: coordination != nil, isReady: player.isReady,
            suspensions: suspensions.prefix(Announcement.suspensionsMax).map {
                String($0.reason.utf8.prefix(Announcement.suspensionReasonBytesMax)) ?? "custom"
            },
            digest: digest)
    }

    mutating func reportDrop(
        _ reason: DropReason, detail: String, from source: Endpoint, into out: inout [Directive]
    ) {
        let count = counters.drop(reason)
        guard reason.isWorthADiagnostic else { return }
        if count <= 3 || count % max(1, settings.dropDiagnosticEvery) == 0 {
            out.append(.diagnose("dropped datagram from \(source): \(reason.rawValue) (\(detail)); \(count) so far"))
        }
    }

    public func peerInfos(now: MonotonicInstant) -> [PeerInfo] {
        peers.values.map { $0.info(now: now) }.sorted { ($0.name, $0.member.id) < ($1.name, $1.member.id) }
    }

    public func statusReport(now: Timestamp) -> StatusReport {
        StatusReport(
            member: member, name: identity.name, sessionName: identity.sessionName, state: state, item: player.item?.id,
            rate: player.rate, positionSeconds: player.position(at: now), sampledAt: now,
            isWaiting: coordination != nil,
            suspensions: suspensions.map(\.reason), peerCount: peers.count, counters: counters,
            activity: activity.flatMap { if case .share(let activity) = $0.command.operation { activity } else { nil } }
        )
    }
}

/// Who this agent is.
public struct LocalIdentity: Hashable, Sendable {
    public var id: PeerID
    /// The human name, at most `Settings.nameBytesMax` bytes of UTF-8.
    public var name: String
    public var sessionName: String
    /// The port of this agent's unicast socket, announced in hellos and heartbeats.
    public var unicastPort: UInt16
    /// What kind of local player it drives ("simulated", "mpv", "socket"), for `status`.
    public var playerKind: String

    public init(id: PeerID, name: String, sessionName: String, unicastPort: UInt16, playerKind: String = "simulated") {
        self.playerKind = playerKind
        self.id = id
        self.name = name
        self.sessionName = sessionName
        self.unicastPort = unicastPort
    }
}

/// One coplay agent's protocol, as a value: a router over small machines, each owning one
/// concern — `SessionLifecycle` (joining, leaving, incarnations), `Membership` (who is alive),
/// `ClockSync` (offsets to every peer), `Ordering` (the causal command log and its repair),
/// `Playback` (group state, the player's part in it, suspensions) and `Messaging`.
///
/// It performs no IO and reads no clock. Each input is one `mutating func on…` that takes the
/// time as an argument and returns the `Directive`s the shell must carry out, ending with a
/// `.wake(at:)` while there is anything to wait for. The router decodes, hands each input to the
/// machine that owns it, feeds one machine's outputs to the next (a delivered command from
/// `Ordering` becomes an input of `Playback`) and turns what comes out into directives.
/// Randomness (timer jitter, probe tokens) comes from a generator seeded by the caller, so the
/// simulation replays a run exactly from its seed.
public struct Instance: Sendable {
    public var settings: Settings { sharedSettings.value }
    private let sharedSettings: SharedSettings
    public let identity: LocalIdentity
    public let session: SessionID
    public internal(set) var counters = Counters()

    var random: SplitMix64
    var lifecycle: SessionLifecycle
    var membership: Membership
    var clocks: ClockSync
    var ordering: Ordering
    var playback: Playback
    var messaging: Messaging
    var reach: Reach
    /// Whether the last announcement said this agent waits out a suspension (playback's answer
    /// changes with the peers' announcements: a change is announced at once).
    var announcedWaitsOut = false
    /// Where the 48-entry window of the next announcement's digest starts (when it holds more).
    var digestStart = 0
    /// The group's keys for this session, when the agent has a key file: every datagram is then
    /// signed, and only authentic, fresh ones are accepted.
    public private(set) var keys: GroupKeys?
    private var replayWindows: ReplayWindows

    /// `keys`: the key file's keys (current first), or nil for an open group. `seeds`: peers to
    /// reach by unicast as well as by multicast (`--peer`).
    public init(
        identity: LocalIdentity, settings: Settings = Settings(), seed: UInt64, now: Timestamp, keys: [[UInt8]]? = nil,
        seeds: [Endpoint] = []
    ) {
        precondition(
            identity.name.utf8.count <= settings.nameBytesMax, "name longer than \(settings.nameBytesMax) bytes")
        self.identity = identity
        self.sharedSettings = SharedSettings(settings)
        session = SessionID(name: identity.sessionName)
        random = SplitMix64(seed: seed)
        lifecycle = SessionLifecycle(
            session: session, id: identity.id, now: now, incarnationsRememberedMax: settings.incarnationsRememberedMax)
        membership = Membership(settings: settings)
        clocks = ClockSync(settings: settings)
        ordering = Ordering(settings: settings)
        playback = Playback(settings: settings)
        messaging = Messaging(settings: settings)
        reach = Reach(settings: settings, seeds: seeds)
        replayWindows = ReplayWindows(windowsMax: settings.replayWindowsMax)
        self.keys = keys.map { GroupKeys(keys: $0, session: session) }
    }

    /// The key file was read again (SIGHUP): sign with its current key, accept its keys.
    public mutating func onKeysChanged(_ keys: [[UInt8]]?) {
        self.keys = keys.map { GroupKeys(keys: $0, session: session) }
    }

    // MARK: What the outside may read

    public var state: SessionState { lifecycle.state }
    public var incarnation: Incarnation { lifecycle.incarnation }
    public var member: Member { lifecycle.member }
    /// The live participants other than this agent, by id. At most `Settings.peersMax`.
    public var peers: [PeerID: PeerRecord] { membership.peers }
    /// Whether `id` is a live peer's.
    public func isPeer(_ id: PeerID) -> Bool { membership.peers[id] != nil }
    public var log: CausalLog { ordering.log }
    /// Endpoints named in members' peer lists and reached by unicast for now (at most
    /// `Settings.gossipedEndpointsMax`).
    public var namedEndpoints: [Endpoint] { Array(reach.named.keys) }
    /// Every delivered command, in delivery order, when `Settings.recordsDeliveries` is on.
    public var deliveries: [CommandEnvelope] { ordering.deliveries }
    /// Where in `deliveries` each adopted snapshot took effect, and its frontier.
    public var adoptions: [(afterDeliveries: Int, frontier: VectorClock)] { ordering.adoptions }
    /// The winning `share`: the group's activity.
    public var activity: CommandEnvelope? { playback.activity }
    /// The group state of each item.
    public var items: [String: ItemGroupState] { playback.items }
    /// What this agent believes its player is doing.
    public var player: PlayerModel { playback.player }
    public var coordination: Coordination { playback.coordination }
    /// This participant's active suspensions, oldest first.
    public var suspensions: [Suspension] { playback.suspensions.active }
    public var isSuspended: Bool { playback.isSuspended }
    public var catchingUp: Bool { playback.catchingUp }

    /// The offset estimate to a peer's clock (live or departed), and whether it was reported synced.
    public func clockEstimate(of peer: PeerID, at now: MonotonicInstant) -> OffsetEstimate? {
        clocks.estimate(of: peer, at: now)
    }
    public func isClockSynced(_ peer: PeerID) -> Bool { clocks.isSynced(peer) }

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
            if state.isJoined { leave(with: .leave(.shutdown), reason: .shutdown, now: now, into: &out) }
            if lifecycle.requestExit() { return out + [.exit(status: 0)] }
        case .leave:
            guard state.isJoined else { return [commandError("not joined (state \(state.name))", usage: "join")] }
            leave(with: .leave(.left), reason: .left, now: now, into: &out)
        case .join:
            guard !state.isJoined else { return [commandError("already joined", usage: "leave")] }
            join(now: now, into: &out)
        case .end(let reason):
            guard state.isJoined else { return [commandError("not joined (state \(state.name))", usage: "join")] }
            leave(with: .end(reason: reason), reason: .ended(by: identity.name, reason: reason), now: now, into: &out)
            route(playback.onSessionEnded(context(now)), now: now, into: &out)
        case .load, .share, .play, .playNow, .pause, .seek, .rate, .stall, .suspend, .resume, .whatHappened:
            route(playback.onCommand(command, context(now), counters: &counters), now: now, into: &out)
        case .message(let to, let unreliable, let text):
            sendMessage(to: to, unreliable: unreliable, text: text, now: now, into: &out)
        }
        settle(now: now, into: &out)
        return finish(out, now: now)
    }

    /// One datagram from either socket. `receivedAt` is when the shell's receive loop got it;
    /// `now` is when this handler runs; `viaGroup` whether it came to the multicast socket.
    public mutating func onDatagram(
        _ bytes: [UInt8], from source: Endpoint, receivedAt: Timestamp, now: Timestamp, viaGroup: Bool = true
    ) -> [Directive] {
        var out: [Directive] = []
        counters.datagramsReceived += 1
        do {
            let datagram = try WireFormat.decode(
                bytes, datagramBytesMax: settings.datagramBytesMax, nameBytesMax: settings.nameBytesMax)
            counters.receivedByType[datagram.payload.type, default: 0] += 1
            receive(
                datagram, bytes: bytes, from: source, receivedAt: receivedAt, now: now, viaGroup: viaGroup, into: &out)
            settle(now: now, into: &out)
        } catch {
            reportDrop(DropReason(error.kind), detail: error.detail, from: source, into: &out)
        }
        return finish(out, now: now)
    }

    /// What the local player reported (the shell feeds back what the `.player` directives produced).
    public mutating func onPlayerReport(_ report: PlayerReport, now: Timestamp) -> [Directive] {
        switch report {
        case .userAction(let action):
            // The person in front of the player is a participant: their action is a group command.
            switch action {
            case .play(let rate): return onCommand(.play(rate: rate), now: now)
            case .pause: return onCommand(.pause, now: now)
            case .seek(let position): return onCommand(.seek(seconds: position), now: now)
            }
        case .failed(let text):
            return finish([.emit(.playerError(text))], now: now)
        case .ready, .stalled, .stallEnded, .ended, .sample:
            var out: [Directive] = []
            route(playback.onPlayerReport(report, context(now), counters: &counters), now: now, into: &out)
            settle(now: now, into: &out)
            return finish(out, now: now)
        }
    }

    /// The wake-up the last directive list asked for (or a spurious one: it is harmless).
    public mutating func onTick(now: Timestamp) -> [Directive] {
        var out: [Directive] = []
        for output in lifecycle.tick(now: now.monotonic) {
            switch output {
            case .send(let datagram): out.append(.multicast(datagram))
            case .exit: return out + [.exit(status: 0)]
            }
        }
        if state.isJoined {
            route(
                membership.tick(now: now.monotonic, random: &random), at: now.monotonic, source: nil, now: now,
                into: &out)
            route(clocks.tick(now: now, random: &random), source: nil, now: now, into: &out)
            for (endpoint, entries) in reach.tick(members: membership.peers, now: now.monotonic) {
                out.append(.unicast(stamp(.peerList(entries)), to: endpoint))
            }
            for envelope in ordering.dueCopies(now: now.monotonic) {
                out.append(.multicast(stamp(.command(envelope, isRepair: false))))
            }
            let live = Set(membership.peers.values.map(\.member) + [member])
            if let resume = ordering.tick(
                now: now.monotonic, live: live, digests: membership.peers.values.map(\.digest))
            {
                sendStateRequest(resume.request, to: resume.peer.id, into: &out)
            }
        }
        messaging.tick(now: now.monotonic, counters: &counters)
        let (ordering, membership) = (self.ordering, self.membership)
        route(
            playback.tick(
                context(now), isBehind: { ordering.isBehind(membership.peers.values.map(\.digest)) },
                counters: &counters), now: now, into: &out)
        settle(now: now, into: &out)
        return finish(out, now: now)
    }

    // MARK: Session lifecycle

    private mutating func join(now: Timestamp, into out: inout [Directive]) {
        if lifecycle.join(now: now) {
            ordering.reset()
            playback.reset()
        }
        membership.start(now: now.monotonic, random: &random)
        out.append(.emit(.session(SessionReport(state: state, member: member))))
        route(
            membership.tick(now: now.monotonic, random: &random), at: now.monotonic, source: nil, now: now, into: &out)
    }

    /// Leaves (or ends the session for everyone): the datagram goes out now and is repeated.
    private mutating func leave(
        with payload: Payload, reason: InvalidationReason, now: Timestamp, into out: inout [Directive]
    ) {
        let copy = stamp(payload)
        reach.onLeave(members: membership.peers, now: now.monotonic)
        lifecycle.leave(sending: copy, reason: reason, copyOffsets: settings.leaveCopyOffsets, now: now.monotonic)
        membership.stop()
        clocks.stop()
        playback.onLeft()
        out.append(.emit(.session(SessionReport(state: state, member: member))))
        for case .send(let datagram) in lifecycle.tick(now: now.monotonic) { out.append(.multicast(datagram)) }
    }

    // MARK: Receiving

    private mutating func receive(
        _ datagram: Datagram, bytes: [UInt8], from source: Endpoint, receivedAt: Timestamp, now: Timestamp,
        viaGroup: Bool, into out: inout [Directive]
    ) {
        guard datagram.session == session else {
            return reportDrop(.otherSession, detail: "session \(datagram.session)", from: source, into: &out)
        }
        if let keys {
            guard !datagram.authTag.isEmpty else {
                return reportDrop(.missingTag, detail: "untagged datagram in a keyed group", from: source, into: &out)
            }
            guard datagram.authTag.count == GroupKeys.tagBytes, keys.verifies(bytes) else {
                return reportDrop(.badTag, detail: "forged, or signed with another key", from: source, into: &out)
            }
            guard replayWindows.accept(datagram.sequence, from: datagram.sender) else {
                return reportDrop(.replayed, detail: "sequence \(datagram.sequence)", from: source, into: &out)
            }
        } else {
            guard datagram.authTag.isEmpty else {
                return reportDrop(
                    .unauthenticated, detail: "tagged datagram, no key configured", from: source, into: &out)
            }
        }
        let sender = datagram.sender
        // Incarnations count tenths of seconds of the sender's clock: one far beyond ours is a
        // takeover attempt (2^32 - 1 would outrank every real restart), not a restart.
        guard sender.incarnation <= Incarnation.initial(at: now.wall + settings.incarnationAheadMax) else {
            return reportDrop(.implausibleIncarnation, detail: "\(sender)", from: source, into: &out)
        }
        if sender.id == identity.id {
            if lifecycle.isOwn(sender.incarnation) {
                counters.ownEchoes += 1
            } else {
                reportDrop(.idConflict, detail: "another agent uses id \(sender.id)", from: source, into: &out)
            }
            return
        }
        guard state.isJoined else {
            return reportDrop(.notJoined, detail: "\(datagram.payload.type)", from: source, into: &out)
        }
        guard !membership.hasDeparted(sender) else {
            return reportDrop(.fromDeparted, detail: "\(sender) has left", from: source, into: &out)
        }
        let heardAt = receivedAt.monotonic
        defer {
            if membership.isKnown(sender) {
                var unsolicited = false
                if case .hello(let announcement) = datagram.payload { unsolicited = !announcement.isReply }
                if case .heartbeat = datagram.payload { unsolicited = true }
                reach.heard(sender.id, viaGroup: viaGroup, unsolicited: unsolicited, at: heardAt)
            }
        }
        switch datagram.payload {
        case .hello(let announcement), .heartbeat(let announcement):
            var isHello = false
            if case .hello = datagram.payload { isHello = true }
            route(
                membership.onAnnouncement(
                    announcement, isHello: isHello, from: sender, source: source, heardAt: heardAt),
                at: heardAt, source: source, now: now, into: &out)
            if membership.isKnown(sender) { catchUp(with: announcement.digest, of: sender, now: now, into: &out) }
        case .leave(let reason):
            route(
                membership.onLeave(reason, from: sender, at: heardAt), at: heardAt, source: source, now: now, into: &out
            )
        case .probe(let probe):
            membership.admittedUs(sender)
            heard(sender, at: heardAt, now: now, into: &out)
            out.append(
                .unicast(stamp(.probeReply(clocks.reply(to: probe, receivedAt: receivedAt, now: now))), to: source))
        case .probeReply(let reply):
            let outputs = clocks.onProbeReply(reply, from: sender, receivedAt: heardAt, now: now, random: &random)
            if outputs.contains(.sampled(sender.id)) { heard(sender, at: heardAt, now: now, into: &out) }
            route(outputs, source: source, now: now, into: &out)
        case .command(let envelope, _):
            heard(sender, at: heardAt, now: now, into: &out)
            receiveCommand(envelope, from: sender, now: now, into: &out)
        case .nack(let ranges):
            // Repairs go only to members, at the endpoint they announced, within a byte budget
            // per member: a nack with a forged source cannot make this agent a reflector.
            guard let record = currentMember(sender, sent: "nack", from: source, into: &out) else { return }
            heard(sender, at: heardAt, now: now, into: &out)
            let (session, member) = (self.session, self.member)
            let tagBytes = keys == nil ? 0 : GroupKeys.tagBytes
            let repairs = ordering.repairs(for: ranges, to: sender.id, now: now.monotonic) { envelope in
                WireFormat.encodedSize(
                    Datagram(session: session, sender: member, sequence: 1, payload: .command(envelope, isRepair: true))
                )
                    + tagBytes
            }
            for envelope in repairs {
                out.append(.unicast(stamp(.command(envelope, isRepair: true)), to: record.endpoint))
            }
            // Commands no longer stored (compacted, evicted, or adopted in a snapshot): only the
            // state can bring them.
            if ordering.answersWithState(ranges, to: sender.id, peerDigest: record.digest, now: now.monotonic) {
                sendState(StateRequest(), to: record, now: now, into: &out)
            }
        case .stateRequest(let request):
            guard let record = currentMember(sender, sent: "state request", from: source, into: &out) else { return }
            heard(sender, at: heardAt, now: now, into: &out)
            sendState(request, to: record, now: now, into: &out)
        case .state(let part):
            guard let record = currentMember(sender, sent: "state", from: source, into: &out) else { return }
            heard(sender, at: heardAt, now: now, into: &out)
            receiveState(part, from: record, source: source, now: now, into: &out)
        case .ready(let trigger):
            heard(sender, at: heardAt, now: now, into: &out)
            playback.onReady(trigger, from: sender)
            // Ready for a play or seek this agent has not received: ask the sender for it now
            // rather than at its next heartbeat.
            if membership.peers[sender.id]?.member == sender {
                sendNack(ordering.onReferenced(trigger, by: sender.id, now: now.monotonic), to: sender.id, into: &out)
            }
        case .unreliableMessage(let part):
            heard(sender, at: heardAt, now: now, into: &out)
            receiveMessagePart(part, from: sender, isReliable: false, now: now, into: &out)
        case .peerList(let entries):
            // Only a member may point this agent's traffic somewhere (with a key, an authentic one).
            guard currentMember(sender, sent: "peer list", from: source, into: &out) != nil else { return }
            heard(sender, at: heardAt, now: now, into: &out)
            // Only endpoints of this agent's own address family (its group's) can be reached.
            let reachable = entries.filter { $0.endpoint.address.isIPv4 == source.address.isIPv4 }
            reach.onPeerList(reachable, own: identity.id, members: membership.peers, at: heardAt)
        case .end(let reason):
            let by = membership.peers[sender.id]?.name ?? sender.id.description
            leave(with: .end(reason: reason), reason: .ended(by: by, reason: reason), now: now, into: &out)
            route(playback.onSessionEnded(context(now)), now: now, into: &out)
        }
    }

    /// The record of `sender` if it is a current member; otherwise the datagram (what it `sent`)
    /// is dropped as `unknownSender`: only a member may ask for repair or state, send state, or
    /// point this agent's traffic somewhere (with a key, only an authentic one).
    private mutating func currentMember(
        _ sender: Member, sent what: String, from source: Endpoint, into out: inout [Directive]
    ) -> PeerRecord? {
        guard let record = membership.peers[sender.id], record.member == sender else {
            reportDrop(.unknownSender, detail: "\(what) from \(sender)", from: source, into: &out)
            return nil
        }
        return record
    }

    /// Anything from a known membership proves it alive.
    private mutating func heard(
        _ sender: Member, at heardAt: MonotonicInstant, now: Timestamp, into out: inout [Directive]
    ) {
        route(membership.heard(sender, at: heardAt), at: heardAt, source: nil, now: now, into: &out)
    }

    /// A command from `sender` (received now, or held until its clock became known).
    mutating func receiveCommand(
        _ envelope: CommandEnvelope, from sender: Member, now: Timestamp, into out: inout [Directive]
    ) {
        // Times in the command are on the sender's clock: they are read once its offset is known.
        let offset = clocks.peers[sender.id]?.estimator.estimate(at: now.monotonic)?.offsetNanos
        let receipt = ordering.receive(envelope, from: sender, offsetNanos: offset, now: now.monotonic)
        if receipt.wasDuplicate { counters.duplicateCommands += 1 }
        if receipt.wasDropped { counters.drop(.pendingFull) }  // it will be asked for again
        if receipt.wasUnrepairable { counters.drop(.unrepairableGap) }
        if !receipt.delivered.isEmpty {
            deliver(receipt.delivered, isHistory: isBehindPeers, now: now, into: &out)
        }
        sendNack(receipt.nack, to: sender.id, into: &out)
        if case .catchingUp = playback.history {
            // Read again: the commands just delivered may have closed the gap.
            let behind = isBehindPeers
            route(
                playback.followAfterHistory(isBehind: behind, context(now), counters: &counters), now: now, into: &out)
        }
    }

    /// Whether some live peer's last digest shows commands this agent has not delivered.
    var isBehindPeers: Bool { ordering.isBehind(membership.peers.values.map(\.digest)) }

    mutating func sendNack(_ ranges: [MissingRange], to peer: PeerID, into out: inout [Directive]) {
        guard !ranges.isEmpty, let endpoint = membership.peers[peer]?.endpoint else { return }
        counters.nacksSent += 1
        out.append(.unicast(stamp(.nack(ranges)), to: endpoint))
    }

    /// A peer's digest: asks it for what this agent lacks (commands, or its state).
    mutating func catchUp(with digest: VectorClock, of peer: Member, now: Timestamp, into out: inout [Directive]) {
        let clockKnown = clocks.estimate(of: peer.id, at: now.monotonic) != nil
        switch ordering.onDigest(digest, of: peer, clockKnown: clockKnown, now: now.monotonic) {
        case .nothing: break
        case .nack(let ranges): sendNack(ranges, to: peer.id, into: &out)
        case .state(let request): sendStateRequest(request, to: peer.id, into: &out)
        }
    }

    /// Whether the first sample of `peer`'s clock may unblock a state transfer: it is this
    /// agent's first, and no transfer is under way.
    func transferWaitsForClock(of peer: PeerID) -> Bool {
        (clocks.peers[peer]?.estimator.sampleCount ?? 0) == 1 && !ordering.transfer.isAssembling
    }

    mutating func sendStateRequest(_ request: StateRequest, to peer: PeerID, into out: inout [Directive]) {
        guard let endpoint = membership.peers[peer]?.endpoint else { return }
        counters.stateRequestsSent += 1
        out.append(.unicast(stamp(.stateRequest(request)), to: endpoint))
    }

    /// This agent's snapshot for `record`: its delivered frontier (the origins its digest names),
    /// the commands that decide its group state, and the stored messages above the peer's digest,
    /// in parts that fit a datagram.
    func snapshotParts(for record: PeerRecord) -> [StatePart] {
        let dependsOn = dependsOn
        var frontier = VectorClock()
        for (origin, count) in ordering.log.delivered.entries where dependsOn(origin) { frontier[origin] = count }
        let winners = (playback.items.values.map(\.winner) + (playback.activity.map { [$0] } ?? [])).filter {
            $0.dot.counter <= frontier[$0.dot.origin]
        }
        let tagBytes = keys == nil ? 0 : GroupKeys.tagBytes
        let messages = ordering.log.storedMessages(above: record.digest, limit: WireFormat.statePartsMax * 2).filter {
            $0.dot.counter <= frontier[$0.dot.origin]
        }
        return StateTransfer.parts(
            frontier: frontier, lamport: ordering.log.lamport, winners: winners, messages: messages,
            payloadBytesMax: settings.datagramBytesMax - WireFormat.headerBytes - tagBytes)
    }

    /// Sends the parts of this agent's snapshot `request` asks for to a member, within its repair
    /// budget (a part that does not fit waits for the request that resumes the transfer).
    mutating func sendState(_ request: StateRequest, to record: PeerRecord, now: Timestamp, into out: inout [Directive])
    {
        let tagBytes = keys == nil ? 0 : GroupKeys.tagBytes
        var sent = false
        for part in StateTransfer.answer(request, with: snapshotParts(for: record)) {
            let size =
                WireFormat.encodedSize(Datagram(session: session, sender: member, sequence: 1, payload: .state(part)))
                + tagBytes
            guard ordering.spendRepairBudget(size, to: record.member.id, now: now.monotonic) else { break }
            out.append(.unicast(stamp(.state(part)), to: record.endpoint))
            sent = true
        }
        if sent { counters.statesSent += 1 }
    }

    /// A snapshot part from a member: kept until the snapshot is whole, then adopted (its winners
    /// merged into the group state, the commands it unblocked delivered).
    mutating func receiveState(
        _ part: StatePart, from record: PeerRecord, source: Endpoint, now: Timestamp, into out: inout [Directive]
    ) {
        let offset = clocks.estimate(of: record.member.id, at: now.monotonic)?.offsetNanos
        switch ordering.onStatePart(
            part, from: record.member, senderDigest: record.digest, offsetNanos: offset, now: now.monotonic)
        {
        case .failure(let rejection):
            reportDrop(rejection.reason, detail: rejection.detail, from: source, into: &out)
        case .success(nil):
            break
        case .success(let adoption?):
            counters.statesAdopted += 1
            counters.commandsCoveredByState += adoption.covered
            out.append(
                .emit(
                    .stateAdopted(
                        StateAdoptedReport(
                            from: membership.originator(adoption.from, local: member, localName: identity.name),
                            snapshot: adoption.snapshot, winners: adoption.winners.count,
                            commandsCovered: adoption.covered))))
            // The winners are history: the player follows the final state once it is all here.
            route(
                playback.apply(adoption.winners, isHistory: true, context(now), counters: &counters), now: now,
                into: &out)
            for message in adoption.messages {
                // Counted among the commands the snapshot stood for, not again as delivered.
                if case .message(let part) = message.envelope.command.operation {
                    receiveMessagePart(part, from: message.envelope.dot.origin, isReliable: true, now: now, into: &out)
                }
            }
            if !adoption.released.isEmpty {
                deliver(adoption.released, isHistory: isBehindPeers, now: now, into: &out)
            }
            let behind = isBehindPeers
            route(
                playback.followAfterHistory(isBehind: behind, context(now), counters: &counters), now: now, into: &out)
        }
    }

    // MARK: Outgoing datagrams and reports

    mutating func stamp(_ payload: Payload) -> Datagram {
        counters.datagramsSent += 1
        counters.builtByType[payload.type, default: 0] += 1
        return lifecycle.stamp(payload)
    }

    /// The announcement this agent sends now. Its digest, like this agent's own commands, leaves
    /// out origins it never saw as members; when more than a datagram's 48 entries remain, each
    /// announcement carries the next 48 of them in turn (receivers ask for what any slice shows).
    mutating func announcement(isReply: Bool) -> Announcement {
        let dependsOn = dependsOn
        let entries = ordering.log.delivered.sorted.filter { dependsOn($0.member) }
        var digest = VectorClock()
        let window = WireFormat.vectorClockEntriesMax
        // Where this announcement's window starts: the last one's end (no product that could
        // overflow, however long the agent runs).
        let start = entries.count > window ? digestStart % entries.count : 0
        if entries.count > window { digestStart = (start + window) % entries.count }
        for offset in 0..<min(window, entries.count) {
            let entry = entries[(start + offset) % entries.count]
            digest[entry.member] = entry.count
        }
        return Announcement(
            isReply: isReply, unicastPort: identity.unicastPort, name: identity.name, item: player.item?.id,
            isWaiting: coordination.isWaiting, isReady: player.isReady,
            waitsOutSuspensions: playback.waitsOutSuspensions(among: membership),
            suspensions: playback.suspensions.announced,
            digest: digest)
    }

    mutating func reportDrop(_ reason: DropReason, detail: String, from source: Endpoint?, into out: inout [Directive])
    {
        let count = counters.drop(reason)
        guard reason.isWorthADiagnostic else { return }
        if count <= settings.dropDiagnosticsFirst || count % max(1, settings.dropDiagnosticEvery) == 0 {
            let origin = source.map { "from \($0)" } ?? "(timer)"
            out.append(.diagnose("dropped datagram \(origin): \(reason.rawValue) (\(detail)); \(count) so far"))
        }
    }

    func commandError(_ message: String, usage: String) -> Directive {
        .emit(.commandError(.init(message: message, usage: usage)))
    }

    func peerInfo(_ record: PeerRecord, now: MonotonicInstant) -> PeerInfo {
        record.info(
            now: now, offset: clocks.estimate(of: record.member.id, at: now),
            isClockSynced: clocks.isSynced(record.member.id))
    }

    public func peerInfos(now: MonotonicInstant) -> [PeerInfo] {
        membership.peers.values.map { peerInfo($0, now: now) }.sorted {
            ($0.name, $0.member.id) < ($1.name, $1.member.id)
        }
    }

    public func statusReport(now: Timestamp) -> StatusReport {
        StatusReport(
            member: member, name: identity.name, sessionName: identity.sessionName, state: state, item: player.item?.id,
            rate: player.rate, positionSeconds: player.position(at: now), sampledAt: now,
            isWaiting: coordination.isWaiting, suspensions: suspensions.map(\.reason), peerCount: peers.count,
            counters: counters, activity: playback.sharedActivity, playerKind: identity.playerKind,
            correction: playback.correction)
    }
}

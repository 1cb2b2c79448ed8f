/// One received datagram: the gate (who may speak), then the table (one line per payload kind,
/// each calling the machine that owns the kind).
extension Instance {
    /// The gate (`Gate`: who may speak, and whether this agent listens), then the table.
    @inline(never) mutating func receive(
        _ datagram: Datagram, bytes: [UInt8], from source: Endpoint, receivedAt: Timestamp, viaGroup: Bool,
        sealed: Bool
    ) {
        let (sender, heardAt) = (datagram.sender, receivedAt.monotonic)
        let verdict = gate.admit(
            datagram, bytes: bytes, from: source, receivedAt: receivedAt.wall, now: now.wall, standing: standing(now),
            sealed: sealed)
        switch verdict {
        case .ownEcho:
            counters.ownEchoes += 1
            return
        case .refused(let reason, let detail, let announcement):
            if let announcement {
                membership.heardOnNetwork(
                    sender, at: Endpoint(address: source.address, port: announcement.unicastPort), heardAt: heardAt)
            }
            return reportDrop(reason, detail: detail, from: source)
        case .admitted(let provesAlive):
            defer {
                if membership.isKnown(sender) {
                    reach.heard(sender.id, viaGroup: viaGroup, unsolicited: datagram.payload.isUnsolicited, at: heardAt)
                }
            }
            if provesAlive { heard(sender, at: heardAt) }
            route(
                datagram.payload, Received(sender: sender, source: source, receivedAt: receivedAt, viaGroup: viaGroup))
        }
    }

    /// The table: one line per payload kind, each calling the machine that owns the kind.
    private mutating func route(_ payload: Payload, _ from: Received) {
        switch payload {
        case .hello(let announcement): onAnnouncement(announcement, isHello: true, from)
        case .heartbeat(let announcement): onAnnouncement(announcement, isHello: false, from)
        case .leave(let reason):
            audience.left(from.sender)
            routeMembership(
                membership.onLeave(reason, from: from.sender, at: from.heardAt), at: from.heardAt, source: from.source)
        case .probe(let probe): onProbe(probe, from)
        case .probeReply(let reply): onProbeReply(reply, from)
        case .command(let envelope, _): onReceivedCommand(envelope, from: from.sender)
        case .nack(let ranges): onNack(ranges, from)
        case .stateRequest(let request): onStateRequest(request, from)
        case .state(let part): onStatePart(part, from)
        case .ready(let trigger): onReady(trigger, from)
        case .unreliableMessage(let part): onMessagePart(part, from: from.sender, isReliable: false)
        case .peerList(let entries):
            reach.onPeerList(entries, from: from.source, own: identity.id, members: membership.peers, at: from.heardAt)
        case .end(let reason): onEnd(reason, from)
        case .audience(let summary): onAudienceSummary(summary, from: from.sender, at: from.heardAt)
        }
    }

    /// What the gate needs of the other machines at `now`.
    private func standing(_ now: Timestamp) -> Gate.Standing {
        let (membership, sessionLifecycle, clockSync) = (self.membership, self.sessionLifecycle, self.clockSync)
        return Gate.Standing(
            isJoined: state.isJoined, isOwn: sessionLifecycle.isOwn, hasDeparted: membership.hasDeparted,
            newestIncarnation: membership.newestIncarnation, isKnown: membership.isKnown,
            isViewer: audience.isViewer(_:),
            offsetNanos: { clockSync.estimate(of: $0, at: now.monotonic)?.offsetNanos })
    }

    /// Where a datagram came from and when: what its handler needs besides its payload.
    struct Received {
        var sender: Member
        var source: Endpoint
        var receivedAt: Timestamp
        /// It came to the multicast socket.
        var viaGroup: Bool
        var heardAt: MonotonicInstant { receivedAt.monotonic }
    }

    // MARK: The handlers that are more than one machine's call

    private mutating func onAnnouncement(_ announcement: Announcement, isHello: Bool, _ from: Received) {
        if announcement.isViewer {
            return onViewerAnnouncement(
                announcement, isHello: isHello, from: from.sender, at: from.source, heardAt: from.heardAt)
        }
        routeMembership(
            membership.onAnnouncement(
                announcement, isHello: isHello, from: from.sender, source: from.source, heardAt: from.heardAt),
            at: from.heardAt, source: from.source)
        guard membership.isKnown(from.sender) else { return }
        if audience.wantsSeat { onStageAnnouncement(announcement, from: from.sender, at: from.source) }
        let (clockSync, now) = (self.clockSync, self.now)
        let verdicts = multicastPath.onAnnouncement(
            announcement.path, from: from.sender, viaNetworkGroup: from.viaGroup && !from.source.isRelay,
            receivedAt: from.receivedAt.wall,
            offsetNanos: { clockSync.estimate(of: from.sender.id, at: now.monotonic)?.offsetNanos },
            now: now.monotonic)
        // A changed verdict is announced at once: the senders start (or stop) the unicast copies.
        for case .changed in verdicts where state.isJoined { announceNow() }
        catchUp(with: announcement.digest, of: from.sender)
    }

    private mutating func onProbe(_ probe: ClockProbe, _ from: Received) {
        membership.admittedUs(from.sender)
        // A viewer's probes to its anchor keep it counted (it heartbeats only with something to tell).
        if relay != nil, !audience.isViewer, from.source.isRelay, !membership.isKnown(from.sender),
            !audience.probed(by: from.sender, at: from.heardAt)
        {
            counters.viewersRefused += 1
        }
        let reply = clockSync.reply(to: probe, receivedAt: from.receivedAt, now: now)
        out.append(.unicast(stamp(.probeReply(reply)), to: from.source))
    }

    /// A reply proves its sender alive only when it made a sample (a reply to no probe proves
    /// nothing). To a viewer, only its anchor's: a stage member that answered its hello while it
    /// briefly spoke for the stage, and beacons no more, is let go (its answers would keep it).
    private mutating func onProbeReply(_ reply: ClockProbeReply, _ from: Received) {
        let outputs = clockSync.onProbeReply(
            reply, from: from.sender, receivedAt: from.heardAt, now: now, random: &random)
        if outputs.contains(.sampled(from.sender.id)), !audience.isViewer || anchor?.member == from.sender {
            heard(from.sender, at: from.heardAt)
        }
        routeClocks(outputs, source: from.source)
    }

    /// Repairs go only to members, at the endpoint they announced, within a byte budget per
    /// member: a nack with a forged source cannot make this agent a reflector. What is no longer
    /// stored only the state can bring.
    private mutating func onNack(_ ranges: [MissingRange], _ from: Received) {
        let peer = from.sender.id
        routeOrdering(ordering.onNack(ranges, from: peer, framing: framing, now: now.monotonic))
        let digest = membership.peers[peer]?.digest ?? audience.viewer(peer)?.digest ?? VectorClock()
        let agent = self  // read only if the state is sent (a copy: the transfer is being changed)
        let source = { agent.snapshotSource(for: digest) }
        routeTransfer(
            stateTransfer.onNack(
                ranges, from: peer, peerDigest: digest, log: ordering.log, source: source, framing: framing,
                budgets: &ordering.repairBudgets, now: now.monotonic), source: from.source)
    }

    private mutating func onStateRequest(_ request: StateRequest, _ from: Received) {
        let id = from.sender.id
        let source = snapshotSource(for: membership.peers[id]?.digest ?? audience.viewer(id)?.digest ?? VectorClock())
        routeTransfer(
            stateTransfer.onStateRequest(
                request, from: from.sender.id, source: source, framing: framing, budgets: &ordering.repairBudgets,
                now: now.monotonic), source: from.source)
    }

    private mutating func onStatePart(_ part: StatePart, _ from: Received) {
        let offset = clockSync.estimate(of: from.sender.id, at: now.monotonic)?.offsetNanos
        let digest = membership.peers[from.sender.id]?.digest ?? VectorClock()
        routeTransfer(
            stateTransfer.onStatePart(
                part, from: from.sender, senderDigest: digest, offsetNanos: offset, log: ordering.log,
                now: now.monotonic), source: from.source)
    }

    /// Ready for a play or seek this agent has not received: it asks the sender (a member) for
    /// it now rather than at its next heartbeat.
    private mutating func onReady(_ trigger: Dot, _ from: Received) {
        playback.onReady(trigger, from: from.sender)
        guard membership.isKnown(from.sender) else { return }
        routeOrdering(ordering.onReferenced(trigger, by: from.sender.id, now: now.monotonic))
    }

    private mutating func onEnd(_ reason: String, _ from: Received) {
        let by = membership.peers[from.sender.id]?.name ?? from.sender.id.description
        leave(with: .end(reason: reason), reason: .ended(by: by, reason: reason))
    }

    /// Anything from a known membership proves it alive.
    @inline(never) mutating func heard(_ sender: Member, at heardAt: MonotonicInstant) {
        routeMembership(membership.heard(sender, at: heardAt), at: heardAt, source: nil)
    }
}

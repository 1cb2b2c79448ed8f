/// The router's other half: each machine's outputs become directives or inputs of another machine.
extension Instance {
    /// What playback needs of the rest of the agent, now.
    func context(_ now: Timestamp) -> PlaybackContext {
        PlaybackContext(
            now: now, member: member, name: identity.name, state: state, membership: membership,
            clocks: clocks)
    }

    // MARK: Membership and clock sync

    /// `source`: where the datagram that caused these outputs came from (nil for a timer).
    mutating func route(
        _ outputs: [Membership.Output], at heardAt: MonotonicInstant, source: Endpoint?, now: Timestamp,
        into out: inout [Directive]
    ) {
        defer {
            // Whom this agent's waiting policy waits out depends on the peers' suspensions and
            // items: say so at once when that changes, as for any other change of participant state.
            let peersChanged = outputs.contains {
                switch $0 {
                case .joined, .left, .changed: true
                case .unresponsive, .responsive, .announce, .replyHello, .drop: false
                }
            }
            let waitsOut = peersChanged ? playback.waitsOutSuspensions(among: membership) : announcedWaitsOut
            if waitsOut != announcedWaitsOut, state.isJoined {
                announcedWaitsOut = waitsOut
                out.append(.multicast(stamp(.heartbeat(announcement(isReply: false)))))
            }
        }
        for output in outputs {
            switch output {
            case .joined(let record):
                reach.onPeerJoined(at: now.monotonic)
                out.append(.emit(.peerJoined(peerInfo(record, now: heardAt))))
                route(
                    clocks.onPeerJoined(record.member, now: now, random: &random), source: source, now: now, into: &out)
            case .left(let record, let reason):
                out.append(.emit(.peerLeft(peerInfo(record, now: heardAt), reason: reason)))
                // Timelines on its clock follow the lowest-id live participant's clock instead (the
                // same one on every agent that sees the same group; this agent's own when lowest).
                // Looked for only when some timeline is on its clock: a flood of invented peers
                // leaving must cost nothing here.
                if playback.followsClock(of: record.member.id) {
                    let candidates = membership.peers.keys.filter { $0 != record.member.id }.sorted()
                    var anchor: ClockSource?
                    for peer in candidates {
                        guard let estimate = clocks.estimate(of: peer, at: now.monotonic) else { continue }
                        anchor = ClockSource(peer: peer, offsetNanos: estimate.offsetNanos)
                        break
                    }
                    playback.reanchor(
                        departed: record.member.id, to: anchor.flatMap { $0.peer < member.id ? $0 : nil },
                        context(now))
                }
                clocks.onPeerLeft(record.member.id)
                ordering.onPeerLeft(record.member.id, graceful: reason == .left || reason == .shutdown)
                reach.onPeerLeft(record.member.id)
            case .changed(let record):
                out.append(.emit(.peerChanged(peerInfo(record, now: heardAt))))
            case .unresponsive(let record):
                clocks.onSuspected(record.member.id, now: heardAt)
                out.append(.emit(.peerUnresponsive(peerInfo(record, now: heardAt))))
            case .responsive(let record):
                clocks.onResponsive(record.member.id, at: heardAt)
                out.append(.emit(.peerResponsive(peerInfo(record, now: heardAt))))
            case .announce(let isHello):
                let announcement = announcement(isReply: false)
                out.append(.multicast(stamp(isHello ? .hello(announcement) : .heartbeat(announcement))))
            case .replyHello(let endpoint):
                out.append(.unicast(stamp(.hello(announcement(isReply: true))), to: endpoint))
            case .drop(let reason, let detail):
                reportDrop(reason, detail: detail, from: source, into: &out)
            }
        }
    }

    mutating func route(
        _ outputs: [ClockSync.Output], source: Endpoint?, now: Timestamp, into out: inout [Directive]
    ) {
        for output in outputs {
            switch output {
            case .probe(let peer, let probe):
                guard let endpoint = membership.peers[peer]?.endpoint else { continue }
                out.append(.unicast(stamp(.probe(probe)), to: endpoint))
            case .sampled(let peer):
                for held in ordering.releaseAwaitingClock(of: peer) {
                    receiveCommand(held.envelope, from: held.sender, now: now, into: &out)
                }
                // Its state can be read now: a joiner far behind asks at once, not at the next digest.
                if let record = membership.peers[peer], transferWaitsForClock(of: peer) {
                    catchUp(with: record.digest, of: record.member, now: now, into: &out)
                }
            case .synced(let peer):
                if let record = membership.peers[peer] {
                    out.append(.emit(.clockSynced(peerInfo(record, now: now.monotonic))))
                }
            case .drop(let reason, let detail):
                reportDrop(reason, detail: detail, from: source, into: &out)
            }
        }
    }

    // MARK: Ordering, playback and messaging

    /// Delivered commands, in causal order: message parts to messaging, the rest to playback.
    mutating func deliver(
        _ batch: [Ordering.Delivered], isHistory: Bool, now: Timestamp, into out: inout [Directive]
    ) {
        counters.commandsDelivered += batch.count
        var forPlayback: [Ordering.Delivered] = []
        for delivered in batch {
            if case .message(let part) = delivered.envelope.command.operation {
                receiveMessagePart(part, from: delivered.envelope.dot.origin, isReliable: true, now: now, into: &out)
            } else {
                forPlayback.append(delivered)
            }
        }
        guard !forPlayback.isEmpty else { return }
        route(
            playback.apply(forPlayback, isHistory: isHistory, context(now), counters: &counters), now: now, into: &out)
    }

    /// Issues a group command: checks it fits a datagram, delivers it here, multicasts it.
    mutating func issue(_ command: Command, now: Timestamp, into out: inout [Directive]) {
        let envelope = ordering.next(command, by: member, dependsOn: dependsOn)
        let trial = Datagram(
            session: session, sender: member, sequence: 1, payload: .command(envelope, isRepair: false))
        // A share leaves room to travel, as the activity, in a state part with a tag (the other
        // winners are small whatever their text, once their dependencies are left out).
        var room = 0
        if case .share = command.operation { room = WireFormat.commandRoomForStateBytes }
        guard envelope.dependencies.count < WireFormat.vectorClockEntriesMax,
            WireFormat.encodedSize(trial) + room <= settings.datagramBytesMax
        else {
            return out.append(
                commandError(
                    "the command does not fit in one datagram (shorten the URL, id or metadata)",
                    usage: command.operation.name))
        }
        let delivered = ordering.originate(envelope, now: now.monotonic)
        out.append(.multicast(stamp(.command(envelope, isRepair: false))))
        deliver([delivered], isHistory: false, now: now, into: &out)
    }

    mutating func route(_ outputs: [Playback.Output], now: Timestamp, into out: inout [Directive]) {
        var announce = false
        for output in outputs {
            switch output {
            case .player(let command): out.append(.player(command))
            case .emit(let event): out.append(.emit(event))
            case .issue(let command): issue(command, now: now, into: &out)
            case .ready(let trigger): out.append(.multicast(stamp(.ready(trigger: trigger))))
            case .announce: announce = true
            }
        }
        // One announcement for all the changes of one step, with the state they ended in.
        if announce, state.isJoined { out.append(.multicast(stamp(.heartbeat(announcement(isReply: false))))) }
    }

    /// The end of an input's handling: a coordinated start may now be due (never decided in the
    /// middle of a batch, on stale state).
    mutating func settle(now: Timestamp, into out: inout [Directive]) {
        route(playback.decideStartIfDue(context(now)), now: now, into: &out)
    }

    /// The origins this agent's commands may depend on: itself (any incarnation) and memberships
    /// it admitted. Commands of origins it never saw as members are still delivered, but its own
    /// do not wait for them, so invented origins cannot fill its commands' dependencies.
    var dependsOn: (Member) -> Bool {
        let (membership, lifecycle) = (self.membership, self.lifecycle)
        return { $0.id == lifecycle.id || membership.wasAdmitted($0) }
    }

    mutating func sendMessage(
        to names: [String]?, unreliable: Bool, text: String, now: Timestamp, into out: inout [Directive]
    ) {
        let usage = "msg [to=<name|id>,…] [unreliable] <text>"
        guard state.isJoined else { return out.append(commandError("not joined (state \(state.name))", usage: usage)) }
        let (ordering, session, member, dependsOn) = (self.ordering, self.session, self.member, self.dependsOn)
        func overhead(_ part: MessagePart) -> Int {
            let payload: Payload =
                unreliable
                ? .unreliableMessage(part)
                : .command(
                    ordering.next(
                        Command(item: MessagePart.itemMarker, operation: .message(part)), by: member,
                        dependsOn: dependsOn),
                    isRepair: false)
            // A reliable part leaves room to travel in a state part too (a snapshot carries the
            // messages its receiver has not delivered).
            return WireFormat.encodedSize(Datagram(session: session, sender: member, sequence: 1, payload: payload))
                + (unreliable ? 0 : WireFormat.commandRoomForStateBytes)
        }
        let peers = membership.peers.values.sorted { $0.member.id < $1.member.id }
        switch messaging.send(
            to: names, unreliable: unreliable, text: text, peers: peers, overheadBytes: overhead, counters: &counters)
        {
        case .failure(let error):
            out.append(.emit(.commandError(error)))
        case .success(let outputs):
            for output in outputs {
                switch output {
                case .multicast(let part): out.append(.multicast(stamp(.unreliableMessage(part))))
                case .issue(let part):
                    issue(Command(item: MessagePart.itemMarker, operation: .message(part)), now: now, into: &out)
                case .emit(let event): out.append(.emit(event))
                }
            }
        }
    }

    mutating func receiveMessagePart(
        _ part: MessagePart, from origin: Member, isReliable: Bool, now: Timestamp, into out: inout [Directive]
    ) {
        let originator = membership.originator(origin, local: member, localName: identity.name)
        if let report = messaging.receive(
            part, from: origin, isReliable: isReliable, local: member, originator: originator, now: now.monotonic,
            counters: &counters)
        {
            out.append(.emit(.message(report)))
        }
    }

    // MARK: Wake-ups

    /// Appends the wake-up for the earliest instant at which some machine has something to do.
    func finish(_ directives: [Directive], now: Timestamp) -> [Directive] {
        let directives = withUnicastCopies(directives, now: now)
        if case .exit = directives.last { return directives }
        var candidates = [lifecycle.nextWake, playback.nextWake(context(now)), messaging.nextWake]
        if state.isJoined { candidates += [membership.nextWake, clocks.nextWake, reach.nextWake, ordering.nextCopyAt] }
        guard let wake = candidates.compactMap({ $0 }).min() else { return directives }
        return directives + [.wake(at: max(wake, now.monotonic))]
    }

    /// Each group datagram, followed by its unicast copies for the members multicast does not
    /// reach (`Reach`); the directives unchanged while unicast reach is not in use.
    private func withUnicastCopies(_ directives: [Directive], now: Timestamp) -> [Directive] {
        guard reach.isActive, directives.contains(where: { if case .multicast = $0 { true } else { false } }) else {
            return directives
        }
        let destinations =
            state.isJoined ? reach.destinations(members: membership.peers, now: now.monotonic) : reach.farewell
        guard !destinations.isEmpty else { return directives }
        return directives.flatMap { directive -> [Directive] in
            guard case .multicast(let datagram) = directive else { return [directive] }
            return [directive] + destinations.map { .unicast(datagram, to: $0) }
        }
    }
}

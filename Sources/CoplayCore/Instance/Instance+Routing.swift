/// The router's other half: one handler per machine, each turning that machine's outputs into
/// directives, or into inputs of the machine they are for (a delivered command from `Ordering`
/// becomes an input of `Playback`). No handler decides what a machine could decide itself.
extension Instance {
    /// What playback needs of the rest of the agent, now: scalars and lookups, not machines.
    /// (The closure captures the clocks and the instant, never `self`: a capture of `now` through
    /// `self` copied the whole instance for every input, a fifth of a tab's time in a crowd.)
    @inline(never) var context: PlaybackContext {
        let (clockSync, at) = (self.clockSync, now.monotonic)
        return PlaybackContext(
            now: now, member: member, name: identity.name, state: state, peers: membership.peers,
            offset: { clockSync.estimate(of: $0, at: at) })
    }

    // MARK: Membership and clock sync

    /// `source`: where the datagram that caused these outputs came from (nil for a timer).
    @inline(never) mutating func routeMembership(
        _ outputs: [Membership.Output], at heardAt: MonotonicInstant, source: Endpoint?
    ) {
        for output in outputs {
            switch output {
            case .joined(let record):
                reach.onPeerJoined(at: now.monotonic)
                if relay != nil { audience.tookSeat(record.member) }
                out.append(.emit(.peerJoined(clockSync.info(of: record, at: heardAt))))
                routeClocks(clockSync.onPeerJoined(record.member, now: now, random: &random), source: source)
            case .left(let record, let reason):
                out.append(.emit(.peerLeft(clockSync.info(of: record, at: heardAt), reason: reason)))
                playback.onPeerLeft(record.member.id, context)
                clockSync.onPeerLeft(record.member.id)
                ordering.onPeerLeft(record.member.id, graceful: reason == .left || reason == .shutdown)
                stateTransfer.onPeerLeft(record.member.id)
                multicastPath.onPeerLeft(record.member.id)
                reach.onPeerLeft(record.member.id)
            case .changed(let record):
                out.append(.emit(.peerChanged(clockSync.info(of: record, at: heardAt))))
            case .unresponsive(let record):
                clockSync.onSuspected(record.member.id, now: heardAt)
                out.append(.emit(.peerUnresponsive(clockSync.info(of: record, at: heardAt))))
            case .responsive(let record):
                clockSync.onResponsive(record.member.id, at: heardAt)
                out.append(.emit(.peerResponsive(clockSync.info(of: record, at: heardAt))))
            case .announce(let isHello): announce(isHello: isHello)
            case .replyHello(let endpoint):
                out.append(.unicast(stamp(.hello(announcement(isReply: true))), to: endpoint))
            case .drop(let reason, let detail):
                reportDrop(reason, detail: detail, from: source)
            }
        }
        if outputs.contains(where: { $0.changesPeers }) { routePlayback(playback.onPeersChanged(context)) }
    }

    @inline(never) mutating func routeClocks(_ outputs: [ClockSync.Output], source: Endpoint?) {
        for output in outputs {
            switch output {
            case .probe(let peer, let probe): unicast(.probe(probe), to: peer)
            case .sampled(let peer):
                let offset = clockSync.liveEstimate(of: peer, at: now.monotonic)?.offsetNanos
                routeOrdering(ordering.onClockKnown(of: peer, offsetNanos: offset, now: now.monotonic))
                // Its state can be read now: a joiner far behind asks at once, not at the next digest.
                if clockSync.sampleCount(of: peer) == 1, !stateTransfer.isAssembling,
                    let record = membership.peers[peer]
                {
                    catchUp(with: record.digest, of: record.member)
                }
            case .synced(let peer):
                guard let record = membership.peers[peer] else { continue }
                out.append(.emit(.clockSynced(clockSync.info(of: record, at: now.monotonic))))
            case .drop(let reason, let detail):
                reportDrop(reason, detail: detail, from: source)
            }
        }
    }

    // MARK: Ordering and state transfer

    /// A command from `sender`. Times in it are on the sender's clock: they are read once its
    /// offset is known (until then it waits in `Ordering`).
    mutating func onReceivedCommand(_ envelope: CommandEnvelope, from sender: Member) {
        let offset = commandOffset(of: sender)
        routeOrdering(ordering.receive(envelope, from: sender, offsetNanos: offset, now: now.monotonic))
    }

    /// A peer's digest: asks it for what this agent lacks (commands, or its state).
    @inline(never) mutating func catchUp(with digest: VectorClock, of peer: Member) {
        let clockKnown = clockSync.estimate(of: peer.id, at: now.monotonic) != nil
        routeOrdering(
            ordering.onDigest(
                digest, of: peer, clockKnown: clockKnown, transferUnderWay: stateTransfer.isAssembling,
                now: now.monotonic))
    }

    @inline(never) mutating func routeOrdering(_ outputs: [Ordering.Output]) {
        for output in outputs {
            switch output {
            case .originated(let delivered):
                sendCommand(delivered.envelope)
                deliver([delivered], isHistory: false)
            case .tooLarge(let command):
                out.append(commandError(Ordering.tooLargeProblem, usage: command.operation.name))
            case .deliver(let batch):
                deliver(batch, isHistory: isBehindPeers)
            case .nack(let ranges, let peer):
                if unicast(.nack(ranges), to: peer) { counters.nacksSent += 1 }
            case .repair(let envelope, let peer): unicast(.command(envelope, isRepair: true), to: peer)
            case .received:
                routePlayback(playback.onHistoryProgress(isBehind: isBehind, context))
            case .behind(let peer):
                routeTransfer(stateTransfer.onBehind(peer, now: now.monotonic), source: nil)
            case .adopted(let adoption):
                counters.statesAdopted += 1
                counters.commandsCoveredByState += Int64(adoption.covered)
                out.append(.emit(.stateAdopted(adoption.report(from: originator(adoption.from)))))
                queueController.adopt(adoption.winners)
                // The winners are history: the player follows the final state once it is all here.
                routePlayback(playback.apply(adoption.winners, isHistory: true, context))
                // Counted among the commands the snapshot stood for, not again as delivered.
                for (part, origin) in adoption.messageParts { onMessagePart(part, from: origin, isReliable: true) }
            case .duplicate:
                counters.duplicateCommands += 1
            case .dropped(let reason):
                counters.drop(reason)
            }
        }
    }

    @inline(never) mutating func routeTransfer(_ outputs: [StateTransfer.Output], source: Endpoint?) {
        for output in outputs {
            switch output {
            case .send(let parts, let peer):
                guard isPeer(peer) || audience.viewer(peer) != nil else { continue }
                for part in parts { unicast(.state(part), to: peer) }
                counters.statesSent += 1
            case .request(let request, let peer):
                if unicast(.stateRequest(request), to: peer) { counters.stateRequestsSent += 1 }
            case .adopt(let snapshot, let clock):
                routeOrdering(ordering.adopt(snapshot, clock: clock))
                routePlayback(playback.followAfterHistory(isBehind: isBehindPeers, context))
            case .drop(let reason, let detail):
                reportDrop(reason, detail: detail, from: source)
            }
        }
    }

    /// What this agent's snapshot for a peer whose digest is `digest` is made of (the router
    /// supplies it to `StateTransfer`, as raft's application supplies its Storage snapshot).
    @inline(never) func snapshotSource(for digest: VectorClock) -> StateTransfer.Source {
        let winners = queueController.queue.winners(besides: playback.winners)
        return ordering.snapshotSource(winners: winners, for: digest, dependsOn: dependsOn)
    }

    /// Whether some live peer's last digest shows commands this agent has not delivered.
    var isBehindPeers: Bool { ordering.isBehind(membership.peers.values.map({ $0.digest })) }

    /// The same, asked by a machine only when it needs to know (no copies made for nothing).
    var isBehind: () -> Bool {
        let (ordering, membership) = (self.ordering, self.membership)
        return { ordering.isBehind(membership.peers.values.map({ $0.digest })) }
    }

    // MARK: Playback and messaging

    /// Delivered commands, in causal order: message parts to messaging, the rest to playback.
    @inline(never) mutating func deliver(_ batch: [Ordering.Delivered], isHistory: Bool) {
        counters.commandsDelivered += Int64(batch.count)
        if !isHistory { carryToAudience(batch) }
        var forPlayback: [Ordering.Delivered] = []
        for delivered in batch {
            switch delivered.envelope.command.operation {
            case .message(let part):
                onMessagePart(part, from: delivered.envelope.dot.origin, isReliable: true)
            case .queue(let operation):
                let originator = originator(delivered.envelope.dot.origin)
                routeQueue(queueController.apply(delivered.envelope, originator: originator))
                // A move to an entry is also the activity and its item's first state.
                if case .advance = operation { forPlayback.append(delivered) }
            default:
                forPlayback.append(delivered)
            }
        }
        guard !forPlayback.isEmpty else { return }
        routePlayback(playback.apply(forPlayback, isHistory: isHistory, context))
    }

    /// Issues a group command (`Ordering.issue`: it is delivered here, and multicast).
    @inline(never) mutating func issue(_ command: Command) {
        routeOrdering(ordering.issue(command, by: member, dependsOn: dependsOn, framing: framing, now: now.monotonic))
    }

    @inline(never) mutating func routeQueue(_ outputs: [QueueController.Output]) {
        for output in outputs {
            switch output {
            case .issue(let command): if mayIssue { issue(command) }
            case .refuse(let problem, let usage): out.append(commandError(problem, usage: usage))
            case .emit(let event): out.append(.emit(event))
            case .count(let tally): counters.add(tally)
            }
        }
    }

    /// Playback's outputs of one step. The commands it issues are queued and issued after the
    /// step's other outputs (as raft hands out messages after an append): issuing one delivers
    /// it here at once, which is a new input of playback, and that input must not run in the
    /// middle of the step that caused it.
    @inline(never) mutating func routePlayback(_ outputs: [Playback.Output]) {
        var announce = false
        var issued: [Command] = []
        for output in outputs {
            switch output {
            case .player(let command): out.append(.player(command))
            case .emit(let event): out.append(.emit(event))
            case .issue(let command): if mayIssue { issued.append(command) }
            case .ready(let trigger): if !audience.isViewer { out.append(.multicast(stamp(.ready(trigger: trigger)))) }
            case .announce: announce = true
            case .count(let tally): counters.add(tally)
            }
        }
        for command in issued { issue(command) }
        // One announcement for all the changes of one step, with the state they ended in. Not a
        // viewer's: its anchor only counts it (its player's part decides nothing), and a thousand
        // viewers answering each command with a heartbeat would double the work of every command.
        if announce, state.isJoined, !audience.isViewer { announceNow() }
    }

    /// The end of an input's handling: a coordinated start may now be due (never decided in the
    /// middle of a batch, on stale state).
    @inline(never) mutating func decideStart() {
        guard !audience.isViewer else { return }
        routePlayback(playback.decideStartIfDue(context))
    }

    /// The origins this agent's commands may depend on: itself (any incarnation) and memberships
    /// it admitted. Commands of origins it never saw as members are still delivered, but its own
    /// do not wait for them, so invented origins cannot fill its commands' dependencies.
    var dependsOn: (Member) -> Bool {
        let (membership, sessionLifecycle) = (self.membership, self.sessionLifecycle)
        return { $0.id == sessionLifecycle.id || membership.wasAdmitted($0) }
    }

    /// What this agent's datagrams cost on the wire.
    var framing: Framing { Framing(session: session, sender: member, tagBytes: gate.authentication.tagBytes) }

    @inline(never) mutating func sendMessage(to names: [String]?, unreliable: Bool, text: String) {
        guard state.isJoined else {
            return out.append(commandError("not joined (state \(state.name))", usage: Messaging.usage))
        }
        let (ordering, member, dependsOn) = (self.ordering, self.member, self.dependsOn)
        routeMessaging(
            messaging.send(
                to: names, unreliable: unreliable, text: text, peers: membership.peers, framing: framing,
                nextEnvelope: { ordering.next($0, by: member, dependsOn: dependsOn) }))
    }

    @inline(never) mutating func onMessagePart(_ part: MessagePart, from origin: Member, isReliable: Bool) {
        let (local, originator) = (member, originator(origin))
        routeMessaging(
            messaging.receive(
                part, from: origin, isReliable: isReliable, local: local, originator: originator, now: now.monotonic))
    }

    @inline(never) mutating func routeMessaging(_ outputs: [Messaging.Output]) {
        for output in outputs {
            switch output {
            case .multicast(let part): out.append(.multicast(stamp(.unreliableMessage(part))))
            case .issue(let part): issue(Command(item: MessagePart.itemMarker, operation: .message(part)))
            case .emit(let event): out.append(.emit(event))
            case .count(let tally): counters.add(tally)
            }
        }
    }

    /// Whether a command playback or the queue wants issued goes out: a stage member's always; a
    /// viewer's only when the person pressed something (a viewer never starts, advances or
    /// resolves anything on the group's behalf: the stage does, once, for everyone).
    var mayIssue: Bool { !audience.isViewer || pressed }

    // MARK: Wake-ups

    /// The input's directives, and the wake-up for the earliest instant at which some machine
    /// has something to do.
    @inline(never) mutating func finish() -> [Directive] {
        let directives = reach.withUnicastCopies(
            drain(), members: membership.peers, isJoined: state.isJoined, unicastWanted: membership.unicastWanted,
            now: now.monotonic)
        if case .exit = directives.last { return directives }
        var candidates = [
            sessionLifecycle.nextWake, playback.nextWake(context), messaging.nextWake, queueController.endDue?.due,
        ]
        if state.isJoined {
            candidates += [
                membership.nextWake, clockSync.nextWake, reach.nextWake, ordering.nextCopyAt, audience.nextWake,
            ]
        }
        guard let wake = candidates.compactMap({ $0 }).min() else { return directives }
        return directives + [.wake(at: max(wake, now.monotonic))]
    }

    /// The input's directives so far, taken out.
    mutating func drain() -> [Directive] {
        defer { out = [] }
        return out
    }
}

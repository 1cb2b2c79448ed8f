/// The group state of one item: the command that won (times on the local clock) and the
/// timeline it defines.
public struct ItemGroupState: Hashable, Sendable {
    public var winner: CommandEnvelope
    /// The timeline on the local clock, as converted when the command arrived.
    public var timeline: Timeline
    /// Whose clock the command's times were on, and the offset used to convert them: as that
    /// clock drifts against ours the timeline is re-mapped (`nil` for this agent's own commands).
    public var clockSource: ClockSource?
}

/// The clock a command's times were converted from.
public struct ClockSource: Hashable, Sendable {
    public var peer: PeerID
    public var offsetNanos: Int64
}

/// A coordinated start or seek in progress for the current item.
public struct Coordination: Hashable, Sendable {
    /// The play or seek command being coordinated.
    public var trigger: Dot
    public var item: String
    public var rate: Double
    public var position: Double
    /// When it was requested, on the local wall clock.
    public var requestedAt: WallInstant
    /// The participants that reported ready (this agent included once it is).
    public var ready: Set<Member> = []
    /// Whether this agent has issued the start.
    public var decided = false
}

extension Instance {
    // MARK: Console commands

    mutating func playbackCommand(_ command: ConsoleCommand, now: Timestamp, into out: inout [Directive]) {
        guard state.isJoined || isLocalOnly(command) else {
            return fail("not joined (state \(state.name))", usage: "join", into: &out)
        }
        if isSuspended, actLocallyWhileSuspended(command, now: now, into: &out) { return }
        switch command {
        case .load(let item):
            makeCurrent(item, source: "load", now: now, into: &out)
        case .share(let proposed, let durationSeconds, let bufferSeconds):
            if case .share(let current)? = activity?.command.operation, current.itemID == proposed.itemID {
                // Already the activity: not re-shared; just make sure it is current here.
                if player.item?.id != proposed.itemID {
                    makeCurrent(
                        item(for: proposed, duration: durationSeconds, buffer: bufferSeconds), source: "share",
                        now: now, into: &out)
                }
                return fail(
                    "'\(proposed.itemID)' is already the group's activity: not shared again", usage: "share", into: &out
                )
            }
            localItemSettings = (proposed.itemID, durationSeconds, bufferSeconds)
            issueGroupCommand(Command(item: proposed.itemID, operation: .share(proposed)), now: now, into: &out)
        case .play(let rate):
            guard let item = requireItem(into: &out) else { return }
            issueGroupCommand(
                Command(
                    item: item.id,
                    operation: .play(rate: rate, position: player.position(at: now), requestedAt: now.wall)), now: now,
                into: &out)
        case .playNow(let rate):
            guard let item = requireItem(into: &out) else { return }
            issueGroupCommand(
                Command(
                    item: item.id, operation: .playNow(rate: rate, position: player.position(at: now), at: now.wall)),
                now: now, into: &out)
        case .pause:
            guard let item = requireItem(into: &out) else { return }
            issueGroupCommand(
                Command(item: item.id, operation: .pause(position: player.position(at: now), at: now.wall)), now: now,
                into: &out)
        case .seek(let seconds):
            guard let item = requireItem(into: &out) else { return }
            let resumeRate: Double
            switch items[item.id]?.timeline {
            case .playing(let rate, _, _)?, .waiting(_, let rate, _, _)?: resumeRate = rate
            case .paused?, nil: resumeRate = player.rate
            }
            issueGroupCommand(
                Command(
                    item: item.id, operation: .seek(position: seconds, resumeRate: resumeRate, requestedAt: now.wall)),
                now: now, into: &out)
        case .rate(let rate):
            guard let item = requireItem(into: &out) else { return }
            let position = player.position(at: now)
            if rate == 0 {
                issueGroupCommand(
                    Command(item: item.id, operation: .pause(position: position, at: now.wall)), now: now, into: &out)
            } else if case .playing? = items[item.id]?.timeline {
                issueGroupCommand(
                    Command(item: item.id, operation: .rate(rate: rate, position: position, at: now.wall)), now: now,
                    into: &out)
            } else {
                issueGroupCommand(
                    Command(item: item.id, operation: .play(rate: rate, position: position, requestedAt: now.wall)),
                    now: now, into: &out)
            }
        case .stall(let seconds):
            guard requireItem(into: &out) != nil else { return }
            player.stall(seconds: seconds, now: now)
            beginCatchUp(now: now, into: &out)
        case .status, .peers, .help, .quit, .leave, .join, .end, .suspend, .resume, .whatHappened, .message:
            preconditionFailure("\(command) is not a playback command")
        }
        decideStartIfDue(now: now, into: &out)
    }

    /// While suspended, transport commands change only the local player. Returns false for the
    /// commands that are not transport commands.
    private mutating func actLocallyWhileSuspended(
        _ command: ConsoleCommand, now: Timestamp, into out: inout [Directive]
    ) -> Bool {
        guard let item = player.item else { return false }
        let position = player.position(at: now)
        let reason: String
        switch command {
        case .play(let rate):
            player.play(rate: rate, position: position, at: now.wall)
            reason = "play"
        case .playNow(let rate):
            player.play(rate: rate, position: position, at: now.wall)
            reason = "play-now"
        case .pause:
            player.pause(at: position)
            reason = "pause"
        case .seek(let seconds):
            if player.rate > 0 {
                player.play(rate: player.rate, position: seconds, at: now.wall)
            } else {
                player.pause(at: seconds)
            }
            reason = "seek"
        case .rate(let rate):
            if rate == 0 {
                player.pause(at: position)
            } else {
                player.play(rate: rate, position: position, at: now.wall)
            }
            reason = "rate"
        default:
            return false
        }
        let report = PlaybackReport(
            item: item.id, rate: player.rate, position: player.position(at: now), originator: originator(member),
            reason: "\(reason) (local: suspended)", dot: Dot(origin: member, counter: 0))
        out.append(.emit(player.rate > 0 ? .playing(report) : .paused(report)))
        return true
    }

    private func isLocalOnly(_ command: ConsoleCommand) -> Bool {
        switch command {
        case .load, .stall: true
        default: false
        }
    }

    private func fail(_ message: String, usage: String, into out: inout [Directive]) {
        out.append(.emit(.commandError(.init(message: message, usage: usage))))
    }

    private func requireItem(into out: inout [Directive]) -> LoadedItem? {
        guard let item = player.item else {
            fail("no item is loaded (use load or share first)", usage: "share <url>", into: &out)
            return nil
        }
        return item
    }

    /// Issues a group command: checks it fits a datagram, delivers it here, multicasts it.
    mutating func issueGroupCommand(_ command: Command, now: Timestamp, into out: inout [Directive]) {
        let envelope = log.next(command, by: member)
        let trial = Datagram(
            session: session, sender: member, sequence: 1, payload: .command(envelope, isRepair: false))
        guard envelope.dependencies.count < WireFormat.vectorClockEntriesMax,
            WireFormat.encodedSize(trial) <= settings.datagramBytesMax
        else {
            return fail(
                "the command does not fit in one datagram (shorten the URL, id or metadata)",
                usage: command.operation.name, into: &out)
        }
        log.originate(envelope)
        out.append(.multicast(outgoing(.command(envelope, isRepair: false))))
        apply([envelope], now: now, into: &out)
    }

    // MARK: Receiving

    mutating func receiveCommand(
        _ envelope: CommandEnvelope, from sender: Member, source: Endpoint, now: Timestamp, into out: inout [Directive]
    ) {
        // Times in the command are on the sender's clock: re-express them on ours, once we know it.
        guard let offset = peers[sender.id]?.clock.estimate(at: now.monotonic)?.offsetNanos else {
            holdUntilClockKnown(envelope, from: sender, source: source, now: now)
            return
        }
        var local = envelope
        local.command.operation = envelope.command.operation.shifted(by: -offset)
        let receipt = log.receive(local)
        if !receipt.wasDuplicate && !receipt.wasDropped {
            if conversions.count >= settings.pendingCommandsMax { conversions.removeAll() }
            conversions[envelope.dot] = ClockSource(peer: sender.id, offsetNanos: offset)
        }
        if receipt.wasDuplicate { counters.duplicateCommands += 1 }
        if receipt.wasDropped { counters.drop(.pendingFull) }
        apply(receipt.delivered, now: now, isHistory: isBehindPeers, into: &out)
        requestRepair(from: sender.id, missing: receipt.missing, now: now, into: &out)
        followAfterHistory(now: now, into: &out)
        // Only once the whole batch is applied: a start decided mid-batch would rest on stale state.
        decideStartIfDue(now: now, into: &out)
    }

    private mutating func holdUntilClockKnown(
        _ envelope: CommandEnvelope, from sender: Member, source: Endpoint, now: Timestamp
    ) {
        let held = awaitingClock.values.reduce(0) { $0 + $1.count }
        guard held < settings.commandsAwaitingClockMax else {
            counters.drop(.pendingFull)  // it will be asked for again
            return
        }
        awaitingClock[sender.id, default: []].append((envelope, sender, source, now.monotonic))
    }

    /// The sender's clock is now known: interpret what it sent meanwhile.
    mutating func releaseCommandsAwaitingClock(of sender: PeerID, now: Timestamp, into out: inout [Directive]) {
        guard let held = awaitingClock.removeValue(forKey: sender) else { return }
        for entry in held {
            receiveCommand(entry.envelope, from: entry.sender, source: entry.source, now: now, into: &out)
        }
    }

    /// Forgets held commands whose sender's clock did not become known in time (repair brings
    /// them again, from whoever has them).
    mutating func expireCommandsAwaitingClock(now: Timestamp) {
        let oldest = now.monotonic - settings.commandAwaitingClockTimeout
        for (sender, held) in awaitingClock {
            let kept = held.filter { $0.at > oldest }
            awaitingClock[sender] = kept.isEmpty ? nil : kept
        }
    }

    /// Asks `peer` for `missing` commands, at most once per `nackHoldoff`.
    mutating func requestRepair(from peer: PeerID, missing: [MissingRange], now: Timestamp, into out: inout [Directive])
    {
        guard !missing.isEmpty, let endpoint = peers[peer]?.endpoint else { return }
        if let last = nackSentAt[peer], now.monotonic - last < settings.nackHoldoff { return }
        nackSentAt[peer] = now.monotonic
        counters.nacksSent += 1
        out.append(.unicast(outgoing(.nack(Array(missing.prefix(WireFormat.nackRangesMax)))), to: endpoint))
    }

    mutating func receiveReady(_ trigger: Dot, from sender: Member, now: Timestamp, into out: inout [Directive]) {
        guard var coordination, coordination.trigger == trigger else { return }
        coordination.ready.insert(sender)
        self.coordination = coordination
        decideStartIfDue(now: now, into: &out)
    }

    // MARK: Applying delivered commands

    /// Delivered commands, in causal order: each updates the group state it is for; then the
    /// player follows the final state once (a late joiner repaired with the whole history
    /// adopts where the group is now, rather than replaying every change).
    private mutating func apply(
        _ batch: [CommandEnvelope], now: Timestamp, isHistory: Bool = false, into out: inout [Directive]
    ) {
        guard !batch.isEmpty else { return }
        var activityChanged = false
        var currentItemChanged = false
        // The item that will be current once the batch is applied (a share in it changes it).
        var incomingItem = player.item?.id
        for envelope in batch {
            counters.commandsDelivered += 1
            if settings.recordsDeliveries { deliveries.append(envelope) }
            let command = envelope.command
            defer { conversions[envelope.dot] = nil }
            if case .message(let part) = command.operation {
                receiveMessagePart(part, from: envelope.dot.origin, isReliable: true, now: now, into: &out)
                continue
            }
            if case .share(let proposed) = command.operation {
                guard activity.map({ envelope.orderKey > $0.orderKey }) ?? true else { continue }
                activity = envelope
                activityChanged = true
                incomingItem = proposed.itemID
                out.append(.emit(.activityChanged(proposed, originator: originator(envelope.dot.origin))))
                continue
            }
            guard let timeline = Timeline(command.operation, dot: envelope.dot) else { continue }
            if let existing = items[command.item], existing.winner.orderKey > envelope.orderKey {
                counters.commandsSuperseded += 1
                continue  // a concurrent command that loses to the one in force: nothing changes
            }
            remember(
                ItemGroupState(
                    winner: envelope, timeline: timeline, clockSource: conversions.removeValue(forKey: envelope.dot)),
                for: command.item)
            if incomingItem == command.item {
                currentItemChanged = true
            } else if !isHistory && followDeferredSince == nil {  // history is adopted, not reported
                out.append(
                    .emit(
                        .commandIgnored(
                            IgnoredCommand(
                                commandItem: command.item, currentItem: player.item?.id,
                                operation: command.operation.name, originator: originator(envelope.dot.origin),
                                dot: envelope.dot))))
            }
        }
        if isHistory {
            // More of the group's history is on its way: follow its final state once it is here.
            followDeferredSince = followDeferredSince ?? now.monotonic
            return
        }
        settle(activityChanged: activityChanged, currentItemChanged: currentItemChanged, now: now, into: &out)
    }

    /// After group state changed: loads the group's activity if it is not the current item here,
    /// otherwise makes the player follow the current item's group state (unless suspended).
    private mutating func settle(
        activityChanged: Bool, currentItemChanged: Bool, now: Timestamp, into out: inout [Directive]
    ) {
        if activityChanged, case .share(let proposed)? = activity?.command.operation, player.item?.id != proposed.itemID
        {
            let local = localItemSettings?.itemID == proposed.itemID ? localItemSettings : nil
            makeCurrent(
                item(for: proposed, duration: local?.duration ?? nil, buffer: local?.buffer ?? 0), source: "share",
                now: now, into: &out)
        } else if currentItemChanged, !isSuspended, let item = player.item, let group = items[item.id] {
            followGroup(group, now: now, into: &out)
        }
    }

    /// Makes the player follow an item's group state (counted as one application).
    mutating func followGroup(_ group: ItemGroupState, now: Timestamp, into out: inout [Directive]) {
        counters.commandsApplied += 1
        follow(timeline(of: group, now: now), cause: group.winner, now: now, into: &out)
    }

    /// A group state's timeline on the local clock now: re-mapped through the current offset
    /// estimate to the clock its times came from, so that drift between the clocks since the
    /// command arrived is accounted for.
    func timeline(of group: ItemGroupState, now: Timestamp) -> Timeline {
        guard let source = group.clockSource,
            let estimate = (peers[source.peer]?.clock ?? retiredClocks[source.peer])?.estimate(at: now.monotonic)
        else { return group.timeline }
        return group.timeline.shifted(by: -(estimate.offsetNanos - source.offsetNanos))
    }

    /// Keeps a playing player on the group's timeline as the clocks drift: re-anchors it when it
    /// is more than `Settings.driftCorrectionThreshold` off.
    private mutating func correctDrift(now: Timestamp) {
        guard !isSuspended, let item = player.item, let group = items[item.id], case .playing = group.timeline,
            player.rate > 0
        else { return }
        let target = timeline(of: group, now: now)
        guard case .playing(let rate, let position, let at) = target else { return }
        let error = player.position(at: now) - target.position(at: now.wall)
        guard abs(error) > settings.driftCorrectionThreshold.seconds else { return }
        player.play(rate: rate, position: position, at: at)
        counters.driftCorrections += 1
    }

    /// Makes the local player follow the group timeline of the current item.
    private mutating func follow(
        _ timeline: Timeline, cause: CommandEnvelope, now: Timestamp, into out: inout [Directive]
    ) {
        guard let item = player.item else { return }
        let before = player.position(at: now)
        let rateBefore = player.rate
        let who = originator(cause.dot.origin)
        func report(_ rate: Double, _ position: Double, _ reason: String) -> PlaybackReport {
            PlaybackReport(
                item: item.id, rate: rate, position: position, originator: who, reason: reason, dot: cause.dot)
        }
        defer {
            if player.rate != rateBefore {
                out.append(
                    .emit(.rateChanged(report(player.rate, player.position(at: now), cause.command.operation.name))))
            }
        }
        switch timeline {
        case .paused(let position):
            coordination = nil
            let shown = settings.pauseSnapsToOriginatorTime ? position : before
            player.pause(at: shown)
            out.append(.emit(.paused(report(0, shown, cause.command.operation.name))))
            if abs(shown - before) > 0.25 {
                out.append(.emit(.timeJumped(report(0, shown, cause.command.operation.name))))
            }
        case .waiting(let position, let rate, let trigger, let requestedAt):
            coordination = Coordination(
                trigger: trigger, item: item.id, rate: rate, position: position, requestedAt: requestedAt)
            player.prepare(at: position, now: now)
            out.append(.emit(.waiting(report(rate, position, cause.command.operation.name))))
            if abs(position - before) > 0.25 {
                out.append(.emit(.timeJumped(report(0, position, cause.command.operation.name))))
            }
            advancePlayer(now: now, into: &out)
        case .playing(let rate, let position, let at):
            coordination = nil
            if player.isReady {
                let wasMoving = player.rate > 0
                player.play(rate: rate, position: position, at: at)
                let reason = cause.command.operation.name
                out.append(
                    .emit(.playing(report(rate, timeline.position(at: max(now.wall, at)), wasMoving ? "rate" : reason)))
                )
                if abs(timeline.position(at: now.wall) - before) > 0.25, now.wall >= at {
                    out.append(.emit(.timeJumped(report(rate, timeline.position(at: now.wall), reason))))
                }
            } else {
                beginCatchUp(now: now, into: &out)
                prepareToCatchUp(timeline, now: now)
            }
        }
    }

    /// The player reported; act on it.
    private mutating func advancePlayer(now: Timestamp, into out: inout [Directive]) {
        for report in player.advance(now: now) {
            guard let item = player.item else { return }
            switch report {
            case .ready:
                if var coordination, coordination.item == item.id, !coordination.ready.contains(member) {
                    coordination.ready.insert(member)
                    self.coordination = coordination
                    if state.isJoined { out.append(.multicast(outgoing(.ready(trigger: coordination.trigger)))) }
                } else if catchingUp {
                    // Prepared where the group is: the stall is over (rejoins if it was the last suspension).
                    endSuspension(reason: Suspension.stallRecovery, now: now, into: &out)
                }
            case .stallEnded:
                if let group = items[item.id], case .playing = group.timeline {
                    prepareToCatchUp(timeline(of: group, now: now), now: now)
                    advancePlayer(now: now, into: &out)
                } else {
                    endSuspension(reason: Suspension.stallRecovery, now: now, into: &out)
                }
            case .ended:
                out.append(
                    .emit(
                        .paused(
                            PlaybackReport(
                                item: item.id, rate: 0, position: player.position(at: now),
                                originator: originator(member), reason: "ended",
                                dot: items[item.id]?.winner.dot ?? Dot(origin: member, counter: 0)))))
            }
        }
    }

    /// Seeks ahead by the buffering delay, so that the player is ready exactly where the group is.
    private mutating func prepareToCatchUp(_ timeline: Timeline, now: Timestamp) {
        let buffer = player.item?.bufferSeconds ?? 0
        let readyAt = now.wall + .nanoseconds(Int64(buffer * 1e9))
        player.prepare(at: timeline.position(at: readyAt), now: now)
    }

    /// Left behind (not ready for a start, or stalled): a `stallRecovery` suspension until caught up.
    private mutating func beginCatchUp(now: Timestamp, into out: inout [Directive]) {
        guard !catchingUp else { return }
        beginSuspension(Suspension.stallRecovery, now: now, into: &out)
    }

    // MARK: Coordinated start

    /// Issues the start when this agent decides it: the originator of the play or seek once all
    /// participants on the item are ready or the deadline passed; any participant with the
    /// lowest id once the grace after the deadline passed with no start. Called at the end of an
    /// input's handling, never while a batch of delivered commands is being applied.
    private mutating func decideStartIfDue(now: Timestamp, into out: inout [Directive]) {
        guard state.isJoined, let coordination, !coordination.decided, player.item?.id == coordination.item else {
            return
        }
        let deadline = coordination.requestedAt + settings.startDeadline
        let onItem = peers.values.filter { $0.liveness == .alive && $0.item == coordination.item }
        // Suspended participants take no part, except those suspended for a reason that makes the
        // others wait (while the group is within the limit): they hold the start, deadline or not.
        let waitFor = settings.suspensionReasonsThatTriggerWaiting
        let holding =
            onItem.count + 1 <= settings.participantLimitForWaiting
            ? onItem.filter { !waitFor.isDisjoint(with: $0.suspensions) } : []
        let participants = Set([member] + onItem.filter { $0.suspensions.isEmpty }.map(\.member))
        let isOriginator = coordination.trigger.origin == member
        let allReady = participants.isSubset(of: coordination.ready) && holding.isEmpty
        let deadlinePassed = now.wall >= deadline && holding.isEmpty
        let fallback =
            deadlinePassed && now.wall >= deadline + settings.startFallbackGrace
            && participants.map(\.id).min() == member.id
        guard (isOriginator && (allReady || deadlinePassed)) || fallback else { return }
        self.coordination?.decided = true
        let start = Operation.start(
            rate: coordination.rate, position: coordination.position, at: now.wall + settings.startLead,
            trigger: coordination.trigger)
        issueGroupCommand(Command(item: coordination.item, operation: start), now: now, into: &out)
    }

    /// Whether some live peer has delivered commands this agent has not (per its last digest).
    var isBehindPeers: Bool { peers.values.contains { !log.missing(comparedTo: $0.digest).isEmpty } }

    /// Follows the group's final state after the history has arrived (or the wait ran out).
    private mutating func followAfterHistory(now: Timestamp, into out: inout [Directive]) {
        guard let since = followDeferredSince else { return }
        guard !isBehindPeers || now.monotonic - since >= settings.historyCatchUpMax else { return }
        followDeferredSince = nil
        settle(activityChanged: true, currentItemChanged: true, now: now, into: &out)
    }

    mutating func playbackTick(now: Timestamp, into out: inout [Directive]) {
        expireCommandsAwaitingClock(now: now)
        expireUnreliableMessages(now: now)
        checkWhatHappened(now: now, into: &out)
        correctDrift(now: now)
        followAfterHistory(now: now, into: &out)
        advancePlayer(now: now, into: &out)
        decideStartIfDue(now: now, into: &out)
        if state.isJoined {
            let live = Set(peers.values.map(\.member) + [member])
            let gone = Set(log.delivered.entries.keys).subtracting(live)
            originsGoneSince = originsGoneSince.filter { gone.contains($0.key) }
            for origin in gone where originsGoneSince[origin] == nil { originsGoneSince[origin] = now.monotonic }
            let prunable = Set(originsGoneSince.filter { now.monotonic - $0.value >= settings.pruneAfter }.keys)
            if !prunable.isEmpty { log.prune(departed: prunable, liveDigests: peers.values.map(\.digest)) }
        }
    }

    /// When the playback side next needs a tick.
    func playbackWake(now: Timestamp) -> MonotonicInstant? {
        var due = [player.nextEvent(now: now), whatHappenedWake(now: now)].compactMap { $0 }.min()
        if let since = followDeferredSince {
            let giveUp = max(since + settings.historyCatchUpMax, now.monotonic + .milliseconds(1))
            due = due.map { min($0, giveUp) } ?? giveUp
        }
        if let coordination, !coordination.decided {
            let wall =
                coordination.requestedAt + settings.startDeadline
                + (coordination.trigger.origin == member ? .zero : settings.startFallbackGrace)
            // Once past, the deadline needs no wake of its own: every tick checks the decision again
            // (a wake in the past would spin).
            if wall > now.wall {
                let instant = now.monotonic + (wall - now.wall)
                due = due.map { min($0, instant) } ?? instant
            }
        }
        return due
    }

    // MARK: Items

    private mutating func makeCurrent(_ item: LoadedItem, source: String, now: Timestamp, into out: inout [Directive]) {
        coordination = nil
        // A stall belongs to the item it happened on: loading another ends its recovery.
        if let stall = suspensions.first(where: { $0.reason == Suspension.stallRecovery }) {
            suspensions.removeAll { $0 == stall }
            out.append(
                .emit(
                    .suspension(
                        SuspensionReport(
                            id: stall.id, reason: stall.reason, began: false, item: player.item?.id ?? item.id))))
        }
        let group = items[item.id]
        player.load(item, at: group.map { timeline(of: $0, now: now).position(at: now.wall) } ?? 0, now: now)
        out.append(.emit(.itemChanged(ItemReport(item: item, source: source, adoptedGroupState: group != nil))))
        announceStateChange(into: &out)
        if let group, !isSuspended {
            followGroup(group, now: now, into: &out)
        } else {
            advancePlayer(now: now, into: &out)
        }
    }

    private func item(for activity: Activity, duration: Double?, buffer: Double) -> LoadedItem {
        LoadedItem(id: activity.itemID, url: activity.url, durationSeconds: duration, bufferSeconds: buffer)
    }

    private mutating func remember(_ state: ItemGroupState, for item: String) {
        items[item] = state
        itemsChangeOrder.removeAll { $0 == item }
        itemsChangeOrder.append(item)
        while itemsChangeOrder.count > settings.itemsMax {
            let oldest = itemsChangeOrder.removeFirst()
            if oldest != player.item?.id { items[oldest] = nil } else { itemsChangeOrder.append(oldest) }
        }
    }

    func originator(_ origin: Member) -> Originator {
        if origin == member { return Originator(member: origin, name: identity.name, isLocal: true) }
        return Originator(
            member: origin, name: peers[origin.id]?.name ?? String(origin.id.description.prefix(8)), isLocal: false)
    }
}

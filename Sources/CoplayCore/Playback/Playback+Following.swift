/// The player following the group: the current item's group state applied to the player, and
/// coordinated starts (everyone prepares, reports ready, and starts at one instant).
extension Playback {
    /// Makes the player follow an item's group state (counted as one application).
    mutating func followGroup(
        _ group: ItemGroupState, _ context: PlaybackContext, into out: inout [Output]
    ) {
        out.append(.count(.commandsApplied))
        follow(timeline(of: group, context), cause: group.winner, context, into: &out)
    }

    /// Makes the local player follow the group timeline of the current item. One transition, one
    /// event, with the command that caused it: `paused`, `waiting` or `playing` when the player
    /// stops, waits or starts; `rate-changed` when it goes on moving at another rate; nothing when
    /// it already follows this timeline (a late joiner settling twice on the same state);
    /// `time-jumped` besides, when its position jumps. Positions are clamped to the item's length,
    /// as the player and `status` clamp them.
    private mutating func follow(
        _ timeline: Timeline, cause: CommandEnvelope, _ context: PlaybackContext, into out: inout [Output]
    ) {
        guard let item = player.item else { return }
        let now = context.now
        let before = player.position(at: now)
        let who = context.originator(cause.dot.origin)
        // A start that stands paused: the group left the item there (`freeze`), and says so.
        let reason: String
        switch (timeline, cause.command.operation) {
        case (.paused, .play), (.paused, .start), (.paused, .playNow), (.paused, .playReady), (.paused, .rate):
            reason = "left"
        default: reason = cause.command.operation.reason
        }
        func report(_ rate: Double, _ position: Double) -> PlaybackReport {
            PlaybackReport(
                item: item.id, rate: rate, position: player.clamp(position), originator: who, reason: reason,
                dot: cause.dot, liveEdge: player.live?.dates.upperBound)
        }
        func jumped(to position: Double) -> Bool {
            abs(player.clamp(position) - before) > settings.timeJumpReportedMin.seconds
        }
        switch timeline {
        case .paused(let position):
            coordination = .idle
            let shown = settings.pauseSnapsToOriginatorTime ? position : before
            tell(.pause(position: shown), into: &out)
            out.append(.emit(.paused(report(0, shown))))
            if jumped(to: shown) { out.append(.emit(.timeJumped(report(0, shown)))) }
        case .waiting(let position, let rate, let trigger, let requestedAt):
            coordination = .collecting(
                PendingStart(trigger: trigger, item: item.id, rate: rate, position: position, requestedAt: requestedAt))
            tell(.prepare(position: position), into: &out)
            out.append(.emit(.waiting(report(rate, position))))
            if jumped(to: position) { out.append(.emit(.timeJumped(report(0, position)))) }
        case .playing(let rate, let position, let at):
            coordination = .idle
            // Behind an interstitial the main player holds; it catches up when that ends.
            guard interstitials.playing == nil else { return }
            guard player.isReady else {
                beginCatchUp(context, into: &out)
                prepareToCatchUp(timeline, context, into: &out)
                return
            }
            let rateBefore = player.rate / (1 + correction.nudge)
            let following =
                rateBefore == rate
                && abs(before - player.clamp(timeline.position(at: now.wall)))
                    <= settings.driftCorrectionThreshold.seconds
            tell(.play(rate: rate, position: position, at: at), into: &out)
            if following { return }  // no transition: re-anchored silently
            let shown = timeline.position(at: max(now.wall, at))
            let changesRateOnly = rateBefore > 0 && rateBefore != rate
            out.append(.emit(changesRateOnly ? .rateChanged(report(rate, shown)) : .playing(report(rate, shown))))
            if now.wall >= at, jumped(to: timeline.position(at: now.wall)) {
                out.append(.emit(.timeJumped(report(rate, timeline.position(at: now.wall)))))
            }
        }
    }

    /// Seeks ahead by the buffering delay, so that the player is ready exactly where the group is.
    mutating func prepareToCatchUp(_ timeline: Timeline, _ context: PlaybackContext, into out: inout [Output]) {
        let buffer = player.item?.bufferSeconds ?? 0
        let readyAt = context.now.wall + .seconds(saturating: buffer)
        tell(.prepare(position: timeline.position(at: readyAt)), into: &out)
    }

    /// Left behind (not ready for a start, or stalled): a `stallRecovery` suspension until caught up.
    mutating func beginCatchUp(_ context: PlaybackContext, into out: inout [Output]) {
        guard !catchingUp else { return }
        beginSuspension(Suspension.stallRecovery, context, into: &out)
    }

    // MARK: Coordinated start

    /// Readiness from a peer for the start or seek `trigger`.
    mutating func onReady(_ trigger: Dot, from sender: Member) {
        guard case .collecting(var start) = coordination, start.trigger == trigger else { return }
        start.ready.insert(sender)
        coordination = .collecting(start)
    }

    /// This agent's player is ready: if a start is being collected, say so to the group.
    mutating func localReady(_ context: PlaybackContext, into out: inout [Output]) -> Bool {
        // Not while an interstitial plays here: the group resumes when everyone's has ended.
        guard case .collecting(var start) = coordination, start.item == player.item?.id,
            !start.ready.contains(context.member), interstitials.playing == nil
        else { return false }
        start.ready.insert(context.member)
        if context.isJoined {
            start.readySentAt = context.now.monotonic
            out.append(.ready(trigger: start.trigger))
        }
        coordination = .collecting(start)
        return true
    }

    /// While the start is collected, this agent's `ready` again every `readyRepeatInterval`:
    /// datagrams get lost, and a lost `ready` would hold everyone until the deadline.
    mutating func repeatReady(_ context: PlaybackContext) -> [Output] {
        guard context.isJoined, case .collecting(var start) = coordination, let sent = start.readySentAt,
            context.now.monotonic >= sent + settings.readyRepeatInterval
        else { return [] }
        start.readySentAt = context.now.monotonic
        coordination = .collecting(start)
        return [.ready(trigger: start.trigger)]
    }

    /// Issues the start when this agent decides it: the originator of the play or seek once all
    /// participants on the item are ready or the deadline passed; any participant with the
    /// lowest id once the grace after the deadline passed with no start. The router calls it at
    /// the end of an input's handling, never while a batch of delivered commands is applied.
    mutating func decideStartIfDue(_ context: PlaybackContext) -> [Output] {
        guard context.isJoined, case .collecting(let start) = coordination, player.item?.id == start.item else {
            return []
        }
        let now = context.now
        let deadline = start.requestedAt + settings.startDeadline
        let onItem = context.peers.values.filter { $0.liveness == .alive && $0.item == start.item }
        // Suspended participants take no part. But each participant applies its own waiting policy
        // to the others' suspensions and announces the result: while any participant on the item
        // (this one included) waits one out, the start is held, deadline or not. Whoever decides,
        // the outcome is the same.
        let holding = waitsOutSuspensions(among: context.peers) || onItem.contains { $0.waitsOutSuspensions }
        let participants = Set([context.member] + onItem.filter { $0.suspensions.isEmpty }.map({ $0.member }))
        let isOriginator = start.trigger.origin == context.member
        let allReady = participants.isSubset(of: start.ready) && !holding
        let deadlinePassed = now.wall >= deadline && !holding
        // The originator decides. One known to take no part (gone, suspected, or suspended: a
        // player that could not load the item it moved the group to) never will: then whoever has
        // the lowest id decides as soon as everyone is ready, not after the deadline and its grace.
        // (A record by id: an originator restarted under a new incarnation counts as taking part,
        // and its old start waits for the deadline as before.)
        let origin = context.peers[start.trigger.origin.id]
        let originatorOut = !isOriginator && (origin?.liveness != .alive || origin?.suspensions.isEmpty == false)
        let fallback =
            participants.map({ $0.id }).min() == context.member.id
            && ((originatorOut && allReady) || (deadlinePassed && now.wall >= deadline + settings.startFallbackGrace))
        guard (isOriginator && (allReady || deadlinePassed)) || fallback else { return [] }
        coordination = .decided(start)
        let lead = startLead(to: participants, context)
        let operation = Operation.start(
            rate: start.rate, position: start.position, at: now.wall + lead, trigger: start.trigger)
        return [.issue(Command(item: start.item, operation: operation))]
    }

    /// `play` when every participant is already known to be ready where the group paused (their
    /// announcements say ready, on this item, not waiting, not suspended; this player holds the
    /// group's position): the round of readies would only confirm it, and on a lossy or jittery
    /// path it costs the slowest of them (on the air, one retry among all the participants' frames
    /// holds everyone). The start goes out at once, at an instant a start's lead ahead: a
    /// play-ready (a play-now by another name). A participant it reaches late starts where the group is by then.
    ///
    /// Only after a pause (or on an item just shared, each player having said when its load was
    /// done): a pause leaves every player holding the frame it stopped on, where a seek sends
    /// each to fetch another, and a player's `pause` reports nothing when that is done (so after
    /// a seek the round of readies is what tells). Readiness travels in the announcements (a
    /// heartbeat, and at once on a change of item or suspension), so a stale one errs towards
    /// "not ready", the round of readies.
    func startKnownReady(rate: Double, item: String, _ context: PlaybackContext) -> Operation? {
        guard context.isJoined, settings.startWhenKnownReady, interstitials.playing == nil, player.isReady,
            player.rate == 0, case .idle = coordination
        else { return nil }
        let position: Double
        switch (items[item]?.timeline, items[item]?.winner.command.operation) {
        case (.paused(let held)?, .pause?): position = held
        case (nil, _): position = 0  // just shared: every agent loaded it at its start
        default: return nil
        }
        // A live item's start moved into its window is a new position: each player must fetch it.
        guard startPosition(position) == position, abs(player.position(at: context.now) - position) < 0.002 else {
            return nil
        }
        let onItem = context.peers.values.filter { $0.item == item }
        guard
            onItem.allSatisfy({
                $0.liveness == .alive && $0.isReady && !$0.isWaiting && $0.suspensions.isEmpty
                    && context.offset($0.member.id) != nil
            })
        else { return nil }
        let lead = startLead(to: Set([context.member] + onItem.map({ $0.member })), context)
        return .playReady(rate: rate, position: position, at: context.now.wall + lead)
    }

    /// How far ahead the start instant goes (`Settings.startLead`): far enough for the start to
    /// reach the participant furthest away, as its clock's round trips measured it.
    func startLead(to participants: Set<Member>, _ context: PlaybackContext) -> Duration {
        var lead = settings.startLeadMin
        for member in participants where member != context.member {
            guard let estimate = context.offset(member.id) else { return settings.startLead }
            lead = max(lead, .nanoseconds(2 * max(0, estimate.delayNanos)) + settings.startLeadMargin)
        }
        return min(lead, settings.startLeadMax)
    }

    /// Whether this agent's own waiting policy (suspensionReasonsThatTriggerWaiting, and the
    /// participant limit for it) waits out the suspension of some live participant on its item.
    func waitsOutSuspensions(among peers: [PeerID: PeerRecord]) -> Bool {
        let waitFor = settings.suspensionReasonsThatTriggerWaiting
        // On a live item nobody waits: the group stays on the live edge, and the one who stalled
        // rejoins where the group is by then, skipping what it missed.
        guard !waitFor.isEmpty, let item = player.item, !player.isLive else { return false }
        let onItem = peers.values.filter { $0.liveness == .alive && $0.item == item.id }
        guard onItem.count + 1 <= settings.participantLimitForWaiting else { return false }
        return onItem.contains { !waitFor.isDisjoint(with: $0.suspensions) }
    }

    /// When the coordinated start needs a look: its deadline (plus the fallback grace for those
    /// who did not originate it). Once past, no wake of its own: every tick checks again (a wake
    /// in the past would spin).
    func coordinationWake(_ context: PlaybackContext) -> MonotonicInstant? {
        guard case .collecting(let start) = coordination else { return nil }
        let repeatDue = start.readySentAt.map { $0 + settings.readyRepeatInterval }
        let wall =
            start.requestedAt + settings.startDeadline
            + (start.trigger.origin == context.member ? .zero : settings.startFallbackGrace)
        guard wall > context.now.wall else { return repeatDue }
        let deadline = context.now.monotonic + (wall - context.now.wall)
        return repeatDue.map { min($0, deadline) } ?? deadline
    }

    // MARK: Peers

    /// A peer joined, left or changed its announced state. Whom this agent's waiting policy waits
    /// out depends on the peers' suspensions and items: it says so at once when that changes, as
    /// for any other change of participant state.
    mutating func onPeersChanged(_ context: PlaybackContext) -> [Output] {
        let holds = waitForOthersInterstitials(context)
        let waitsOut = waitsOutSuspensions(among: context.peers)
        guard waitsOut != announcedWaitsOut, context.isJoined else { return holds }
        announcedWaitsOut = waitsOut
        return holds + [.announce]
    }

    /// Peer `departed` left. Timelines on its clock follow the lowest-id live participant's clock
    /// instead (the same one on every agent that sees the same group; this agent's own when
    /// lowest). Looked for only when some timeline is on its clock: a flood of invented peers
    /// leaving must cost nothing here.
    mutating func onPeerLeft(_ departed: PeerID, _ context: PlaybackContext) {
        guard followsClock(of: departed) else { return }
        var anchor: ClockSource?
        for peer in context.peers.keys.filter({ $0 != departed }).ordered() {
            guard let estimate = context.offset(peer) else { continue }
            anchor = ClockSource(peer: peer, offsetNanos: estimate.offsetNanos)
            break
        }
        reanchor(departed: departed, to: anchor.flatMap { $0.peer < context.member.id ? $0 : nil }, context)
    }
}

/// Interstitials: an ad or an intro played in a second player while the main item waits.
///
/// - For the whole group (`for=all`): `interstitial-at` schedules one at a main-item time on
///   every agent. When the group's timeline reaches it, each agent stops its main player there
///   and begins the interstitial at once (the timeline is the same everywhere, so they all begin
///   together), and one of them — the smallest id on the item, or after
///   `interstitialHoldStagger` times their rank the next — sends the hold: an `interstitial`
///   command that makes the item wait there for a coordinated start, requested for the
///   interstitial's end. Each agent reports ready only once its own interstitial has ended, so
///   the group resumes together when all have finished (or at the start's deadline, after which
///   a straggler catches up). Typed without `at=`, the hold is sent at once: it plays now.
/// - For this participant only (`for=me`): it runs under a `playingInterstitial` suspension,
///   now or when the item reaches `at=`. The others go on, and it catches up afterwards (the
///   suspension's end snaps it to the group) — unless their waiting policy
///   (`--wait-for playingInterstitial`) waits for it: then the one of them with the smallest id
///   holds the group where it is (a coordinated start, held while the suspension lasts).
extension Playback {
    static let interstitialUsage = ConsoleCommand.usages.first { $0.name == "interstitial" }!.synopsis

    // MARK: The command

    mutating func onInterstitialCommand(
        url: String, durationSeconds: Double, at: Double?, forAll: Bool, _ context: PlaybackContext
    ) -> [Output] {
        let usage = Self.interstitialUsage
        guard let item = player.item else { return [fail("no item is loaded (use load or share first)", usage: usage)] }
        if let at, let duration = item.durationSeconds, at > duration {
            return [fail("at=\(at) is past the item's end (\(duration) s)", usage: usage)]
        }
        interstitials.made += 1
        let interstitial = Interstitial(
            id: "\(context.member.id.description.prefix(6))-i\(interstitials.made)", url: url,
            durationSeconds: durationSeconds)
        var out: [Output] = []
        let now = context.now
        switch (forAll, at) {
        case (true, _) where !context.isJoined:
            return [fail("not joined (state \(context.state.name)); for=me plays it here only", usage: usage)]
        case (true, let at?):
            guard (interstitials.scheduled[item.id]?.count ?? 0) < settings.interstitialsScheduledMax else {
                return [
                    fail("\(settings.interstitialsScheduledMax) interstitials are scheduled on this item", usage: usage)
                ]
            }
            out.append(.issue(Command(item: item.id, operation: .scheduleInterstitial(interstitial, at: at))))
        case (true, nil):
            let (position, rate) = holdPoint(item.id, context)
            out.append(
                .issue(
                    Command(
                        item: item.id,
                        operation: .interstitial(interstitial, position: position, rate: rate, requestedAt: now.wall))))
        case (false, let at?):
            guard interstitials.localScheduled.count < settings.interstitialsScheduledMax else {
                return [fail("\(settings.interstitialsScheduledMax) interstitials are scheduled here", usage: usage)]
            }
            interstitials.localScheduled.append(
                ScheduledInterstitial(interstitial: interstitial, position: at, command: nil))
            out.append(
                .emit(
                    .interstitial(
                        InterstitialReport(
                            phase: .scheduled, interstitial: interstitial, item: item.id, position: at, forAll: false,
                            originator: context.originator(context.member)))))
        case (false, nil):
            beginInterstitial(
                interstitial, forAll: false, item: item.id, position: player.position(at: now),
                originator: context.member, context, into: &out)
        }
        return out
    }

    /// Where the item holds for an interstitial played now, and the rate it resumes at.
    private func holdPoint(_ item: String, _ context: PlaybackContext) -> (position: Double, rate: Double) {
        guard let group = items[item] else { return (player.position(at: context.now), 0) }
        switch timeline(of: group, context) {
        case .playing(let rate, _, _): return (groupPosition(of: item, context), rate)
        case .waiting(let position, let rate, _, _): return (position, rate)
        case .paused(let position): return (position, 0)
        }
    }

    // MARK: Delivered commands

    /// A delivered `interstitial-at`: scheduled on its item (once; at most
    /// `interstitialsScheduledMax` an item, on at most `itemsMax` items).
    mutating func schedule(
        _ interstitial: Interstitial, at position: Double, by envelope: CommandEnvelope, isHistory: Bool,
        _ context: PlaybackContext, into out: inout [Output]
    ) {
        let item = envelope.command.item
        var list = interstitials.scheduled[item] ?? []
        guard !list.contains(where: { $0.interstitial.id == interstitial.id }),
            !interstitials.resolved.contains(interstitial.id)
        else { return }
        guard list.count < settings.interstitialsScheduledMax,
            interstitials.scheduled[item] != nil || interstitials.scheduled.count < settings.itemsMax
        else { return out.append(.count(.interstitialsRefused)) }
        list.append(ScheduledInterstitial(interstitial: interstitial, position: position, command: envelope))
        interstitials.scheduled[item] = list
        guard !isHistory else { return }
        out.append(
            .emit(
                .interstitial(
                    InterstitialReport(
                        phase: .scheduled, interstitial: interstitial, item: item, position: position, forAll: true,
                        originator: context.originator(envelope.dot.origin)))))
    }

    /// A delivered `interstitial` (the hold): the scheduled one it names is resolved; if it is for
    /// the current item and now the item's state, it plays here (unless it already does).
    mutating func onHold(
        _ interstitial: Interstitial, position: Double, by envelope: CommandEnvelope, isCurrent: Bool,
        _ context: PlaybackContext, into out: inout [Output]
    ) {
        let item = envelope.command.item
        // Credit the one who scheduled it, as an agent that reaches it itself does: every agent
        // then names the same person (crediting the hold's issuer, whoever reached it first,
        // made two stories of one group). A hold typed without `at=` is its own origin.
        let scheduler = interstitials.scheduled[item]?.first { $0.interstitial.id == interstitial.id }?.command?.dot
            .origin
        interstitials.scheduled[item]?.removeAll { $0.interstitial.id == interstitial.id }
        if interstitials.scheduled[item]?.isEmpty == true { interstitials.scheduled[item] = nil }
        if interstitials.holdDue?.interstitial.id == interstitial.id { interstitials.holdDue = nil }
        guard isCurrent, !interstitials.resolved.contains(interstitial.id) else { return }
        resolve(interstitial.id)
        guard self.interstitials.playing?.interstitial.id != interstitial.id else { return }
        beginInterstitial(
            interstitial, forAll: true, item: item, position: position, originator: scheduler ?? envelope.dot.origin,
            context, into: &out)
    }

    /// The commands that scheduled group interstitials still to come (a snapshot carries them).
    var scheduledCommands: [CommandEnvelope] {
        interstitials.scheduled.values.flatMap { $0.compactMap({ $0.command }) }
    }

    private mutating func resolve(_ id: String) {
        interstitials.resolve(id, keeping: settings.interstitialsScheduledMax)
    }

    // MARK: Playing one

    /// Stops the main player at `position` and plays `interstitial` in the second player.
    mutating func beginInterstitial(
        _ interstitial: Interstitial, forAll: Bool, item: String, position: Double, originator: Member,
        _ context: PlaybackContext, into out: inout [Output]
    ) {
        if self.interstitials.playing != nil {
            endInterstitial(cutShort: "another interstitial began", context, into: &out)
        }
        let suspension = forAll ? nil : beginSuspension(Suspension.playingInterstitial, context, into: &out)
        if player.item?.id == item { tell(.pause(position: player.clamp(position)), into: &out) }
        tell(.interstitial(interstitial), into: &out)
        self.interstitials.playing = PlayingInterstitial(
            interstitial: interstitial, forAll: forAll, item: item, position: position,
            endsAt: context.now.monotonic + .seconds(saturating: interstitial.durationSeconds), suspension: suspension)
        out.append(
            .emit(
                .interstitial(
                    InterstitialReport(
                        phase: .began, interstitial: interstitial, item: item, position: position, forAll: forAll,
                        originator: context.originator(originator)))))
    }

    /// The interstitial is over (its time is up, or `cutShort` says why not): the second player
    /// stops. A participant's own ends its suspension (it snaps to the group); after a group one
    /// this agent says it is ready for the start — or, if the group started without it (its
    /// interstitial ran past the start's deadline), catches up.
    mutating func endInterstitial(cutShort: String, _ context: PlaybackContext) -> [Output] {
        var out: [Output] = []
        endInterstitial(cutShort: cutShort, context, into: &out)
        return out
    }

    mutating func endInterstitial(cutShort: String?, _ context: PlaybackContext, into out: inout [Output]) {
        guard let playing = interstitials.playing else { return }
        interstitials.playing = nil
        tell(.endInterstitial, into: &out)
        out.append(
            .emit(
                .interstitial(
                    InterstitialReport(
                        phase: .ended, interstitial: playing.interstitial, item: playing.item,
                        position: playing.position, forAll: playing.forAll,
                        originator: context.originator(context.member), cutShort: cutShort))))
        if let suspension = playing.suspension { return endSuspension(suspension, context, into: &out) }
        guard !isSuspended, let item = player.item, item.id == playing.item, let group = items[item.id] else { return }
        switch group.timeline {
        case .waiting: if player.isReady { _ = localReady(context, into: &out) }
        case .playing: followGroup(group, context, into: &out)
        case .paused: break
        }
    }

    // MARK: Reaching a scheduled one

    /// Each tick: the interstitial's end; a hold whose turn came; and the item reaching a
    /// scheduled interstitial while the group plays it.
    mutating func checkInterstitials(_ context: PlaybackContext) -> [Output] {
        var out: [Output] = []
        if let playing = interstitials.playing, context.now.monotonic >= playing.endsAt {
            endInterstitial(cutShort: nil, context, into: &out)
        }
        issueHoldIfDue(context, into: &out)
        guard let reached = reachedInterstitial(context) else { return out }
        let (scheduledOne, rate, reachedAt) = reached
        let item = player.item!.id
        if let command = scheduledOne.command {
            resolve(scheduledOne.interstitial.id)
            beginInterstitial(
                scheduledOne.interstitial, forAll: true, item: item, position: scheduledOne.position,
                originator: command.dot.origin, context, into: &out)
            let rank = Stagger.rank(of: context.member.id, on: item, among: context.peers)
            interstitials.holdDue = InterstitialHoldDue(
                interstitial: scheduledOne.interstitial, item: item, position: scheduledOne.position, rate: rate,
                reachedAt: reachedAt, due: context.now.monotonic + settings.interstitialHoldStagger * rank)
            // At rank 0 its turn is now: the hold goes in this same step.
            issueHoldIfDue(context, into: &out)
        } else {
            interstitials.localScheduled.removeAll { $0.interstitial.id == scheduledOne.interstitial.id }
            beginInterstitial(
                scheduledOne.interstitial, forAll: false, item: item, position: scheduledOne.position,
                originator: context.member, context, into: &out)
        }
        return out
    }

    /// The hold for a group interstitial this agent reached, once its turn came (`Stagger`),
    /// unless the group's hold came first.
    private mutating func issueHoldIfDue(_ context: PlaybackContext, into out: inout [Output]) {
        guard let hold = interstitials.holdDue, context.now.monotonic >= hold.due else { return }
        interstitials.holdDue = nil
        guard context.isJoined,
            interstitials.scheduled[hold.item]?.contains(where: { $0.interstitial.id == hold.interstitial.id }) == true
        else { return }
        out.append(
            .issue(
                Command(
                    item: hold.item,
                    operation: .interstitial(
                        hold.interstitial, position: hold.position, rate: hold.rate, requestedAt: hold.reachedAt))))
    }

    /// The first scheduled interstitial (the group's, else this participant's) that the playing
    /// group timeline passed since the last look, with the rate and the instant it was reached.
    /// Within one playing stretch each position is passed once; a new stretch (a start, a seek)
    /// passes its own first position too, so that an interstitial at 0:00 plays at the start.
    private mutating func reachedInterstitial(_ context: PlaybackContext) -> (
        ScheduledInterstitial, rate: Double, reachedAt: WallInstant
    )? {
        guard interstitials.playing == nil, let item = player.item,
            interstitials.scheduled[item.id] != nil || !interstitials.localScheduled.isEmpty,
            let group = items[item.id]
        else {
            interstitials.watch = nil
            return nil
        }
        let timeline = timeline(of: group, context)
        guard case .playing(let rate, let start, let startAt) = timeline, rate > 0, context.now.wall >= startAt else {
            interstitials.watch = nil
            return nil
        }
        let now = timeline.position(at: context.now.wall)
        let passed: (Double) -> Bool
        if let watch = interstitials.watch, watch.item == item.id, watch.stretch == group.winner.dot {
            passed = { $0 > watch.position && $0 <= now + 1e-6 }
        } else {
            passed = { $0 >= start && $0 <= now + 1e-6 }
        }
        interstitials.watch = (item.id, group.winner.dot, now)
        let groupOnes = isSuspended ? [] : (interstitials.scheduled[item.id] ?? [])
        guard
            let first = (groupOnes.filter { passed($0.position) }.min { $0.position < $1.position })
                ?? (interstitials.localScheduled.filter { passed($0.position) }.min { $0.position < $1.position })
        else { return nil }
        let reachedAt = startAt + .seconds(saturating: (first.position - start) / rate)
        return (first, rate, reachedAt)
    }

    /// When the interstitials next need a look: an end, a hold's turn, or the next scheduled
    /// position the playing item reaches.
    func interstitialWake(_ context: PlaybackContext) -> MonotonicInstant? {
        var due = [interstitials.playing?.endsAt, interstitials.holdDue?.due].compactMap { $0 }.min()
        // Read for every input's wake-up: nothing is computed while nothing is scheduled here.
        guard interstitials.playing == nil, let item = player.item,
            interstitials.scheduled[item.id] != nil || !interstitials.localScheduled.isEmpty,
            let group = items[item.id]
        else { return due }
        let timeline = timeline(of: group, context)
        guard case .playing(let rate, _, _) = timeline, rate > 0 else { return due }
        let now = timeline.position(at: context.now.wall)
        if let ahead = ((interstitials.scheduled[item.id] ?? []) + interstitials.localScheduled).map({ $0.position })
            .filter(
                { $0 > now }).min()
        {
            let reach = context.now.monotonic + .seconds(saturating: (ahead - now) / rate) + .microseconds(1)
            due = due.map { min($0, reach) } ?? reach
        }
        return due
    }

    // MARK: Waiting for another's

    /// A participant on this item plays an interstitial of its own and this agent's waiting
    /// policy waits for it (`playingInterstitial` among the reasons that trigger waiting, within
    /// the participant limit): the group holds where it is until that participant is back (the
    /// start is held while its suspension lasts). Sent by the one of smallest id among those not
    /// suspended that wait; two sent at once are two holds at about one position, the later wins.
    mutating func waitForOthersInterstitials(_ context: PlaybackContext) -> [Output] {
        guard context.isJoined, settings.suspensionReasonsThatTriggerWaiting.contains(Suspension.playingInterstitial),
            !isSuspended, interstitials.playing == nil, let item = player.item, let group = items[item.id],
            case .playing(let rate, _, _) = group.timeline
        else { return [] }
        let onItem = context.peers.values.filter { $0.liveness == .alive && $0.item == item.id }
        guard onItem.count + 1 <= settings.participantLimitForWaiting,
            onItem.contains(where: { $0.suspensions.contains(Suspension.playingInterstitial) }),
            !onItem.contains(where: {
                $0.suspensions.isEmpty && $0.waitsOutSuspensions && $0.member.id < context.member.id
            })
        else { return [] }
        let position = groupPosition(of: item.id, context)
        return [
            .issue(
                Command(item: item.id, operation: .play(rate: rate, position: position, requestedAt: context.now.wall)))
        ]
    }
}

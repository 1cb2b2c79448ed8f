/// The player's side of playback: its reports, drift correction, and the suspensions that
/// separate it from the group (stall recovery, what-happened, and those a person asks for).
extension Playback {
    // MARK: Player reports

    /// The player reported. (A user action is the router's: it becomes a group command.) A
    /// failure is said, and one of its item or of an interstitial leaves it.
    mutating func onPlayerReport(_ report: PlayerReport, _ context: PlaybackContext)
        -> [Output]
    {
        player.apply(report)
        switch report {
        case .failed(let text): return [.emit(.playerError(text))]
        case .loadFailed(let text, let problem):
            return [.emit(.playerError(text))] + onLoadFailed(problem, context)
        case .interstitialFailed(let text):
            return [.emit(.playerError(text))] + endInterstitial(cutShort: text, context)
        case .copyFound: return onCopyFound(context)
        case .anotherEncode:
            guard player.item != nil, !suspensions.playsAnotherEncode else { return [] }
            suspensions.playsAnotherEncode = true
            return [.announce]
        default: break
        }
        guard let item = player.item else { return [] }
        var out: [Output] = []
        switch report {
        case .ready:
            if !localReady(context, into: &out), catchingUp {
                // Prepared where the group is: the stall is over (rejoins if it was the last suspension).
                endSuspension(reason: Suspension.stallRecovery, context, into: &out)
            }
        case .stalled:
            beginCatchUp(context, into: &out)
        case .stallEnded:
            if let group = items[item.id], case .playing = group.timeline {
                prepareToCatchUp(timeline(of: group, context), context, into: &out)
            } else {
                endSuspension(reason: Suspension.stallRecovery, context, into: &out)
            }
        case .ended(let position):
            out.append(
                .emit(
                    .paused(
                        PlaybackReport(
                            item: item.id, rate: 0, position: position, originator: context.originator(context.member),
                            reason: "ended", dot: items[item.id]?.winner.dot ?? Dot(origin: context.member, counter: 0),
                            liveEdge: player.live?.dates.upperBound))))
        case .sample(let position, _, let at):
            correction.playerSamples = true
            (correction.samplePosition, correction.sampleAt) = (position, at)
            out.append(.count(.playerSamples))
            out += correct(toSample: position, at: at, context)
        case .liveWindow, .userAction, .failed, .loadFailed, .interstitialFailed, .duration, .copyFound, .anotherEncode:
            break
        }
        return out
    }

    /// Steers a player that reports samples onto the group's timeline: an error below
    /// `rateCorrectionDeadband` is left alone, one below `seekCorrectionThreshold` is steered away
    /// by a rate nudge (at most `rateNudgeMax` in steady state, `rateCatchUpMax` for a large error;
    /// no seek, no jump), a larger one is seeked away (re-anchored).
    mutating func correct(
        toSample position: Double, at: WallInstant, _ context: PlaybackContext
    )
        -> [Output]
    {
        guard !isSuspended, let item = player.item, let group = items[item.id], player.rate > 0,
            case .playing(let rate, let anchorPosition, let anchorAt) = timeline(of: group, context), at >= anchorAt
        else {
            correction.sampleError = nil
            correction.lastSampleAt = nil
            return []
        }
        let error = position - timeline(of: group, context).position(at: at)
        correction.sampleError = error
        var out: [Output] = []
        if abs(error) >= settings.seekCorrectionThreshold.seconds {
            correction.lastSeek = error
            correction.lastSampleAt = nil
            out.append(.count(.seekCorrections))
            tell(.play(rate: rate, position: anchorPosition, at: anchorAt), into: &out)
            return out
        }
        // A PI controller: the proportional part steers the error away over the horizon; the
        // integral part (`trim`) learns the player's own speed error, so that the error settles at
        // zero rather than at the offset a proportional nudge needs to cancel it. Critically
        // damped: the integral gain is a quarter of the square of the proportional one.
        let gain = 1 / settings.rateCorrectionHorizon.seconds
        let elapsed = correction.lastSampleAt.map { min(1, max(0, Double(at.unixNanos &- $0.unixNanos) / 1e9)) } ?? 0
        correction.lastSampleAt = at
        let limit = settings.rateNudgeMax
        let steer = abs(error) <= settings.rateCorrectionDeadband.seconds ? 0 : -error * gain
        // Steady state stays within `rateNudgeMax`; only an error too large for it catches up faster.
        let catchingUp = abs(steer) > limit
        // The trim learns the player's own speed error in steady state only: integrated through
        // a catch-up (27 ms after a real stall's rejoin) it wound up to the limit and then held
        // the player 2-3 ms off for seconds while it unwound (`coplay-bench stall`).
        if !catchingUp {
            correction.trim = min(max(correction.trim - error * gain * gain / 4 * elapsed, -limit), limit)
        }
        let bound = catchingUp ? settings.rateCatchUpMax : limit
        let wanted = min(max(correction.trim + steer, -bound), bound)
        guard abs(wanted - correction.nudge) >= settings.rateNudgeStep else { return [] }
        correction.nudge = wanted
        out.append(.count(.rateNudges))
        tell(.adjustRate(rate * (1 + wanted), at: context.now.wall), into: &out)
        return out
    }

    /// Keeps a playing player on the group's timeline as the clocks drift: re-anchors it when it
    /// is more than `Settings.driftCorrectionThreshold` off.
    /// (Only for a player that reports no samples: one that does is steered by `correct(toSample:)`.)
    mutating func correctDrift(_ context: PlaybackContext) -> [Output] {
        guard !correction.playerSamples, !isSuspended, let item = player.item, let group = items[item.id],
            case .playing = group.timeline,
            player.rate > 0
        else { return [] }
        let target = timeline(of: group, context)
        guard case .playing(let rate, let position, let at) = target else { return [] }
        let error = player.position(at: context.now) - target.position(at: context.now.wall)
        guard abs(error) > settings.driftCorrectionThreshold.seconds else { return [] }
        var out: [Output] = []
        tell(.play(rate: rate, position: position, at: at), into: &out)
        out.append(.count(.driftCorrections))
        return out
    }

    // MARK: Suspensions

    mutating func suspensionCommand(
        _ command: ConsoleCommand, _ context: PlaybackContext, into out: inout [Output]
    ) {
        switch command {
        case .suspend(let reason):
            guard !suspensions.isFull else {
                return out.append(
                    fail("already \(suspensions.active.count) suspensions (the limit)", usage: "resume <id>"))
            }
            beginSuspension(reason, context, into: &out)
        case .resume(let id, let proposedPosition):
            guard let suspension = suspensions.find(id: id) else {
                let active = suspensions.active.map { "\($0.id) (\($0.reason))" }.joined(separator: ", ")
                return out.append(
                    fail(
                        "no suspension \(id); active: \(active.isEmpty ? "none" : active)",
                        usage: "resume <id> [at=<seconds>]"))
            }
            if let proposedPosition, let item = player.item {
                suspensions.proposal = PendingProposal(
                    position: proposedPosition, item: item.id, winner: items[item.id]?.winner.dot)
                if suspensions.active.count > 1 {
                    out.append(
                        .emit(
                            .proposal(
                                ProposalReport(
                                    item: item.id, position: proposedPosition,
                                    outcome: .held(suspensionsRemaining: suspensions.active.count - 1)))))
                }
            }
            endSuspension(suspension, context, into: &out)
        case .whatHappened(let seconds):
            guard let item = player.item else {
                return out.append(fail("no item is loaded", usage: "what-happened [seconds]"))
            }
            guard !suspensions.contains(Suspension.whatHappened) else {
                return out.append(fail("already catching up on what happened", usage: "what-happened [seconds]"))
            }
            beginSuspension(Suspension.whatHappened, context, into: &out)
            let target = groupPosition(of: item.id, context)
            tell(
                .play(rate: whatHappenedRate(item: item.id), position: max(0, target - seconds), at: context.now.wall),
                into: &out)
        default:
            preconditionFailure("\(command) is not a suspension command")
        }
    }

    @discardableResult
    mutating func beginSuspension(
        _ reason: String, _ context: PlaybackContext, into out: inout [Output]
    )
        -> Suspension
    {
        let suspension = suspensions.begin(reason, now: context.now.monotonic)
        coordination = .idle  // a suspended participant takes no part in a coordinated start
        out.append(
            .emit(
                .suspension(
                    SuspensionReport(id: suspension.id, reason: reason, began: true, item: player.item?.id ?? ""))))
        out.append(.announce)
        return suspension
    }

    mutating func endSuspension(
        _ suspension: Suspension, _ context: PlaybackContext, into out: inout [Output]
    ) {
        guard suspensions.end(suspension) != nil else { return }
        out.append(
            .emit(
                .suspension(
                    SuspensionReport(
                        id: suspension.id, reason: suspension.reason, began: false, item: player.item?.id ?? ""))))
        out.append(.announce)
        if !suspensions.isSuspended { rejoinGroup(context, into: &out) }
    }

    mutating func endSuspension(
        reason: String, _ context: PlaybackContext, into out: inout [Output]
    ) {
        guard let suspension = suspensions.active.first(where: { $0.reason == reason }) else { return }
        endSuspension(suspension, context, into: &out)
    }

    /// The last suspension ended: send a pending proposal, or snap to the group's time and rate.
    private mutating func rejoinGroup(_ context: PlaybackContext, into out: inout [Output]) {
        guard let item = player.item else { return }
        if let proposal = suspensions.proposal {
            suspensions.proposal = nil
            func report(_ outcome: ProposalReport.Outcome) {
                out.append(
                    .emit(.proposal(ProposalReport(item: proposal.item, position: proposal.position, outcome: outcome)))
                )
            }
            if proposal.item != item.id {
                report(.superseded(by: "a change of item to \(item.id)"))
            } else if !context.isJoined {
                report(.superseded(by: "leaving the session"))
            } else if let winner = items[item.id]?.winner, winner.dot != proposal.winner {
                let who = context.originator(winner.dot.origin)
                report(
                    .superseded(by: "a \(winner.command.operation.reason) by \(who.isLocal ? "this agent" : who.name)"))
            } else {
                report(.sent)
                let resume: Double
                if case .waiting(_, let waitingRate, _, _)? = items[item.id]?.timeline {
                    resume = waitingRate
                } else {
                    resume = items[item.id]?.timeline.rate ?? 0
                }
                let seek = Operation.seek(
                    position: proposal.position, resumeRate: resume, requestedAt: context.now.wall)
                out.append(.issue(Command(item: item.id, operation: seek)))
                return
            }
        }
        if let group = items[item.id] { followGroup(group, context, into: &out) }
    }

    // MARK: What happened

    /// Twice the group's rate (at least 2): fast enough to catch up.
    func whatHappenedRate(item: String) -> Double { 2 * max(1, items[item]?.timeline.rate ?? 0) }

    /// Ends the what-happened suspension once the player has caught up with the group.
    mutating func checkWhatHappened(_ context: PlaybackContext) -> [Output] {
        guard let suspension = suspensions.active.first(where: { $0.reason == Suspension.whatHappened }),
            let item = player.item
        else { return [] }
        let caughtUp =
            player.position(at: context.now)
            >= groupPosition(of: item.id, context) - settings.whatHappenedCaughtUpTolerance.seconds
        guard caughtUp || player.rate == 0 else { return [] }
        var out: [Output] = []
        if suspensions.active.count > 1 {
            // Other suspensions remain, so the player does not rejoin the group yet; but the catch-up
            // is over: it goes on at the group's rate, not at twice it.
            let position = player.position(at: context.now)
            let rate = items[item.id]?.timeline.rate ?? 0
            tell(
                rate > 0 ? .play(rate: rate, position: position, at: context.now.wall) : .pause(position: position),
                into: &out)
        }
        endSuspension(suspension, context, into: &out)
        return out
    }

    /// When the what-happened catch-up will be done, for the wake-up.
    func whatHappenedWake(_ context: PlaybackContext) -> MonotonicInstant? {
        guard suspensions.contains(Suspension.whatHappened), let item = player.item, player.rate > 0 else { return nil }
        let gap = groupPosition(of: item.id, context) - player.position(at: context.now)
        let closing = player.rate - (items[item.id]?.timeline.rate ?? 0)
        guard closing > 0 else { return nil }
        return context.now.monotonic + .seconds(saturating: max(0, gap / closing)) + .microseconds(1)
    }

    // MARK: Timers

    /// The periodic part: what-happened, drift, and the history wait (`isBehind`: whether a
    /// peer's digest still shows commands this agent lacks; read only while waiting for them).
    mutating func tick(_ context: PlaybackContext, isBehind: () -> Bool) -> [Output] {
        var out = checkWhatHappened(context)
        out += checkInterstitials(context)
        out += repeatReady(context)
        out += correctDrift(context)
        out += checkStallRecovery(context)
        if case .catchingUp = history { out += followAfterHistory(isBehind: isBehind(), context) }
        return out
    }

    /// A stall its player never ends (an mpv that cannot seek where the group is: its server
    /// answers no byte ranges) ends after `stallRecoveryMax`, with the reason: the player is
    /// left as one that could not load the item, so that this agent neither stays suspended
    /// (its commands local only) nor keeps a suspension into the next item.
    private mutating func checkStallRecovery(_ context: PlaybackContext) -> [Output] {
        guard let ends = stallRecoveryEnds, context.now.monotonic >= ends, player.item != nil else { return [] }
        return onPlayerReport(.loadFailed("the player did not catch up with the group: it stands aside"), context)
    }

    /// When a stall its player has not ended is given up (`stallRecoveryMax` after it began).
    private var stallRecoveryEnds: MonotonicInstant? {
        suspensions.active.first { $0.reason == Suspension.stallRecovery }.map { $0.began + settings.stallRecoveryMax }
    }

    /// When playback next needs a tick.
    func nextWake(_ context: PlaybackContext) -> MonotonicInstant? {
        let stallEnds = stallRecoveryEnds.map { max($0, context.now.monotonic + .milliseconds(1)) }
        var due = [whatHappenedWake(context), coordinationWake(context), interstitialWake(context), stallEnds]
            .compactMap { $0 }
            .min()
        if case .catchingUp(let since) = history {
            let giveUp = max(since + settings.historyCatchUpMax, context.now.monotonic + .milliseconds(1))
            due = due.map { min($0, giveUp) } ?? giveUp
        }
        return due
    }

    /// The player could not load its item: it leaves the item, and any suspension waiting for
    /// the player to catch up ends, so that neither this agent nor the group waits on a
    /// readiness that will never come (its announcements name no item: a coordinated start does
    /// not wait for it). Sharing an item loads again.
    private mutating func onLoadFailed(_ problem: PlaybackProblem, _ context: PlaybackContext) -> [Output] {
        guard let item = player.item else { return [] }
        var out: [Output] = []
        suspensions.cannotPlay = problem
        suspensions.playsAnotherEncode = false  // it plays nothing of the item now
        for reason in [Suspension.stallRecovery, Suspension.whatHappened] {
            guard let ended = suspensions.end(reason: reason) else { continue }
            out.append(
                .emit(.suspension(SuspensionReport(id: ended.id, reason: ended.reason, began: false, item: item.id))))
        }
        tell(.unload, into: &out)
        out.append(.emit(.itemUnloaded(item: item.id, reason: "the player could not load it")))
        out.append(.announce)  // the group sees why at once
        return out
    }

    /// The player has a copy of the group's item now (a file the person picked, a folder that
    /// gained it), after it could not load it: loaded again, where the group is (`makeCurrent`
    /// clears `cannotPlay` and announces). Only then: a player with an item, or one that never
    /// failed, is not reloaded by a report it may send at any moment.
    private mutating func onCopyFound(_ context: PlaybackContext) -> [Output] {
        guard player.item == nil, suspensions.cannotPlay != nil, let proposed = sharedActivity else { return [] }
        let local = localItemSettings?.itemID == proposed.itemID ? localItemSettings : nil
        var out: [Output] = []
        makeCurrent(LoadedItem(activity: proposed, buffer: local?.buffer ?? 0), source: "own copy", context, into: &out)
        return out
    }
}

/// Coordinated playback: the group's activity and the group state of every item (the winning
/// command of each), the local player's part in it (following the current item's group state,
/// coordinated starts, catching up), and this participant's suspensions.
///
/// It reads delivered commands, readiness from peers, the player's reports and console transport
/// commands, and answers with `Output`s: commands for the player, group commands to issue,
/// events. It never touches the player or the network itself.
struct Playback: Sendable {
    enum Output: Hashable, Sendable {
        /// Tell the player (the model has already been updated to believe it done).
        case player(PlayerCommand)
        case emit(Event)
        /// Issue this group command (the router delivers it back here through `apply`).
        case issue(Command)
        /// Multicast readiness for the coordinated start or seek `trigger`.
        case ready(trigger: Dot)
        /// This participant's state changed: announce it now rather than at the next heartbeat.
        case announce
        /// Something to count in `Counters`.
        case count(Counters.Tally)
    }

    /// The buffering delay this agent gave with its own `share` (local: it describes this agent's
    /// player), used when the share is delivered. The duration travels with the share itself.
    struct LocalItemSettings: Hashable, Sendable {
        var itemID: String
        var buffer: Double
    }

    /// Whether the player follows each delivered command, or waits for repaired history.
    ///
    /// Legal transitions: `current` → `catchingUp` (commands delivered while a peer's digest shows
    /// more); `catchingUp` → `current` (nothing more is missing, or `historyCatchUpMax` passed).
    enum History: Hashable, Sendable {
        case current
        /// History is still arriving since `since`: follow the final state once it is here.
        case catchingUp(since: MonotonicInstant)
    }

    var settings: Settings { sharedSettings.value }
    private let sharedSettings: SharedSettings
    /// What the core believes the local player is doing.
    var player = PlayerModel()
    /// The winning `share`: the group's activity.
    var activity: CommandEnvelope?
    /// The group state of each item. At most `Settings.itemsMax`; the least recently changed
    /// (other than the current item) are forgotten first.
    var items: [String: ItemGroupState] = [:]
    private var itemsChangeOrder: [String] = []
    var coordination: Coordination = .idle
    var suspensions = Suspensions()
    private var localItemSettings: LocalItemSettings?
    var history: History = .current
    var correction = Correction()
    /// Whether the last announcement said this agent waits out a suspension (the answer changes
    /// with the peers' announcements: a change is announced at once). Kept across memberships.
    var announcedWaitsOut = false
    /// The interstitial playing here, if any (`Playback+Interstitials`).
    var interstitial: PlayingInterstitial?
    /// Group interstitials still to come, by item (at most `itemsMax` items,
    /// `interstitialsScheduledMax` each).
    var scheduled: [String: [ScheduledInterstitial]] = [:]
    /// This participant's own, on its current item (at most `interstitialsScheduledMax`).
    var localScheduled: [ScheduledInterstitial] = []
    /// The hold to send for a group interstitial the item reached, when its turn comes.
    var holdDue: InterstitialHoldDue?
    /// Where the playing item was at the last look for scheduled interstitials: the item, the
    /// command that began the playing stretch, the position.
    var interstitialWatch: (item: String, stretch: Dot, position: Double)?
    /// Group interstitials begun or resolved here lately (the last `interstitialsScheduledMax`):
    /// reaching one and then receiving its hold plays it once.
    var resolvedInterstitials: [String] = []
    /// Interstitials typed here, for their ids.
    var interstitialsMade = 0

    init(settings: Settings) { self.sharedSettings = SharedSettings(settings) }

    /// A new membership: the group's state is learned afresh (the player keeps what it has).
    mutating func reset() {
        activity = nil
        items.removeAll()
        itemsChangeOrder.removeAll()
        coordination = .idle
        history = .current
        scheduled.removeAll()
        holdDue = nil
        interstitialWatch = nil
    }

    /// The agent left: no coordinated start is waited for (the player keeps what it was doing).
    mutating func onLeft() { coordination = .idle }

    /// The session ended for everyone (`end`, sent or received). The shared activity is over: the
    /// player stops where it is and unloads the item, the group's state is forgotten, and the
    /// item's own suspensions (stall recovery, what-happened) end. A later `join` starts from
    /// nothing loaded and no activity, like a new agent.
    mutating func onSessionEnded(_ context: PlaybackContext) -> [Output] {
        var out: [Output] = []
        coordination = .idle
        endInterstitial(cutShort: "the session ended", context, into: &out)
        localScheduled.removeAll()
        if let item = player.item {
            let position = player.position(at: context.now)
            if player.rate > 0 {
                tell(.pause(position: position), into: &out)
                out.append(
                    .emit(
                        .paused(
                            PlaybackReport(
                                item: item.id, rate: 0, position: position,
                                originator: context.originator(context.member), reason: "end",
                                dot: items[item.id]?.winner.dot ?? Dot(origin: context.member, counter: 0)))))
            }
            for reason in [Suspension.stallRecovery, Suspension.whatHappened] {
                if let ended = suspensions.end(reason: reason) {
                    out.append(
                        .emit(
                            .suspension(
                                SuspensionReport(id: ended.id, reason: ended.reason, began: false, item: item.id))))
                }
            }
            tell(.unload, into: &out)
            out.append(.emit(.itemUnloaded(item: item.id, reason: "the session ended")))
        }
        suspensions.proposal = nil
        reset()
        return out
    }

    var isSuspended: Bool { suspensions.isSuspended }
    var catchingUp: Bool { suspensions.contains(Suspension.stallRecovery) }
    var sharedActivity: Activity? {
        switch activity?.command.operation {
        case .share(let activity)?: return activity
        case .queue(.advance(_, let item, _, _))?: return item.activity
        default: return nil
        }
    }

    // MARK: Console commands

    /// A transport or suspension command typed here.
    mutating func onCommand(_ command: ConsoleCommand, _ context: PlaybackContext)
        -> [Output]
    {
        var out: [Output] = []
        switch command {
        case .suspend, .resume, .whatHappened:
            suspensionCommand(command, context, into: &out)
            return out
        case .load, .stall:
            break
        default:
            guard context.isJoined else {
                return [fail("not joined (state \(context.state.name))", usage: "join")]
            }
        }
        if isSuspended, actLocallyWhileSuspended(command, context, into: &out) { return out }
        let now = context.now
        switch command {
        case .load(let item):
            makeCurrent(item, source: "load", context, into: &out)
        case .share(var proposed, let durationSeconds, let bufferSeconds):
            proposed.durationSeconds = proposed.durationSeconds ?? durationSeconds
            if sharedActivity?.itemID == proposed.itemID {
                // Already the activity: not re-shared; just make sure it is current here.
                if player.item?.id != proposed.itemID {
                    makeCurrent(
                        LoadedItem(activity: proposed, buffer: bufferSeconds),
                        source: "share", context, into: &out)
                }
                out.append(.emit(.activityUnchanged(proposed)))
                return out
            }
            localItemSettings = LocalItemSettings(itemID: proposed.itemID, buffer: bufferSeconds)
            out.append(.issue(Command(item: proposed.itemID, operation: .share(proposed))))
        case .play(let rate):
            guard let item = requireItem(into: &out) else { break }
            if let start = startKnownReady(rate: rate, item: item.id, context) {
                out.append(.issue(Command(item: item.id, operation: start)))
                break
            }
            out.append(
                .issue(
                    Command(
                        item: item.id,
                        operation: .play(rate: rate, position: player.position(at: now), requestedAt: now.wall))))
        case .playNow(let rate):
            guard let item = requireItem(into: &out) else { break }
            out.append(
                .issue(
                    Command(
                        item: item.id, operation: .playNow(rate: rate, position: player.position(at: now), at: now.wall)
                    )
                ))
        case .pause:
            guard let item = requireItem(into: &out) else { break }
            out.append(
                .issue(Command(item: item.id, operation: .pause(position: player.position(at: now), at: now.wall))))
        case .seek(let seconds):
            guard let item = requireItem(into: &out) else { break }
            let resumeRate: Double
            switch items[item.id]?.timeline {
            case .playing(let rate, _, _)?, .waiting(_, let rate, _, _)?: resumeRate = rate
            case .paused?, nil: resumeRate = player.rate
            }
            out.append(
                .issue(
                    Command(
                        item: item.id,
                        operation: .seek(position: seconds, resumeRate: resumeRate, requestedAt: now.wall)
                    )))
        case .rate(let rate):
            guard let item = requireItem(into: &out) else { break }
            let position = player.position(at: now)
            let operation: Operation
            if rate == 0 {
                operation = .pause(position: position, at: now.wall)
            } else if case .playing? = items[item.id]?.timeline {
                operation = .rate(rate: rate, position: position, at: now.wall)
            } else {
                operation = .play(rate: rate, position: position, requestedAt: now.wall)
            }
            out.append(.issue(Command(item: item.id, operation: operation)))
        case .stall(let seconds):
            guard requireItem(into: &out) != nil else { break }
            out.append(.player(.simulateStall(seconds: seconds)))
        case .status, .peers, .help, .quit, .leave, .join, .end, .suspend, .resume, .whatHappened,
            .message, .queue,
            .next, .previous, .interstitial:
            preconditionFailure("\(command) is not a playback command")
        }
        return out
    }

    /// While suspended, transport commands change only the local player. Returns false for the
    /// commands that are not transport commands.
    private mutating func actLocallyWhileSuspended(
        _ command: ConsoleCommand, _ context: PlaybackContext, into out: inout [Output]
    ) -> Bool {
        guard let item = player.item else { return false }
        let now = context.now
        let position = player.position(at: now)
        let reason: String
        switch command {
        case .play(let rate):
            tell(.play(rate: rate, position: position, at: now.wall), into: &out)
            reason = "play"
        case .playNow(let rate):
            tell(.play(rate: rate, position: position, at: now.wall), into: &out)
            reason = "play-now"
        case .pause:
            tell(.pause(position: position), into: &out)
            reason = "pause"
        case .seek(let seconds):
            tell(
                player.rate > 0 ? .play(rate: player.rate, position: seconds, at: now.wall) : .pause(position: seconds),
                into: &out)
            reason = "seek"
        case .rate(let rate):
            tell(
                rate == 0 ? .pause(position: position) : .play(rate: rate, position: position, at: now.wall), into: &out
            )
            reason = "rate"
        default:
            return false
        }
        let report = PlaybackReport(
            item: item.id, rate: player.rate, position: player.position(at: now),
            originator: context.originator(context.member), reason: "\(reason) (local: suspended)",
            dot: Dot(origin: context.member, counter: 0))
        out.append(.emit(player.rate > 0 ? .playing(report) : .paused(report)))
        return true
    }

    func fail(_ message: String, usage: String) -> Output {
        .emit(.commandError(.init(message: message, usage: usage)))
    }

    private func requireItem(into out: inout [Output]) -> LoadedItem? {
        guard let item = player.item else {
            out.append(fail("no item is loaded (use load or share first)", usage: "share <url>"))
            return nil
        }
        return item
    }

    /// Tells the player, and believes it done.
    mutating func tell(_ command: PlayerCommand, into out: inout [Output]) {
        switch command {
        case .adjustRate: break
        case .play:
            correction.nudge = 0
            correction.lastSampleAt = nil
        case .load, .prepare, .pause, .unload:
            correction.nudge = 0
            correction.lastSampleAt = nil
            correction.sampleError = nil  // not playing: no error to show
        case .simulateStall, .interstitial, .endInterstitial: break
        }
        player.apply(command)
        out.append(.player(command))
    }

    // MARK: Applying delivered commands

    /// Delivered commands, in causal order: each updates the group state it is for; then the
    /// player follows the final state once (a late joiner repaired with the whole history
    /// adopts where the group is now, rather than replaying every change). `isHistory`: more of
    /// the group's history is known to be on its way.
    mutating func apply(
        _ batch: [Ordering.Delivered], isHistory: Bool, _ context: PlaybackContext
    ) -> [Output] {
        guard !batch.isEmpty else { return [] }
        var out: [Output] = []
        var activityChanged = false
        var currentItemChanged = false
        // The item that will be current once the batch is applied (a share in it changes it).
        var incomingItem = player.item?.id
        let isDeferring = history != .current
        for delivered in batch {
            let envelope = delivered.envelope
            let command = envelope.command
            if case .share(let proposed) = command.operation {
                guard activity.map({ envelope.orderKey > $0.orderKey }) ?? true else { continue }
                activity = envelope
                activityChanged = true
                incomingItem = proposed.itemID
                out.append(.emit(.activityChanged(proposed, originator: context.originator(envelope.dot.origin))))
                continue
            }
            // A move to a queue entry shares its item, and is that item's first group state
            // (paused at its start, or a coordinated start from there).
            if case .queue(.advance(_, let item, _, _)) = command.operation,
                activity.map({ envelope.orderKey > $0.orderKey }) ?? true
            {
                activity = envelope
                activityChanged = true
                incomingItem = item.id
                out.append(.emit(.activityChanged(item.activity, originator: context.originator(envelope.dot.origin))))
            }
            if case .scheduleInterstitial(let interstitial, let position) = command.operation {
                schedule(
                    interstitial, at: position, by: envelope, isHistory: isHistory, context, into: &out)
                continue
            }
            guard let timeline = Timeline(command.operation, dot: envelope.dot) else { continue }
            if let existing = items[command.item], existing.winner.orderKey > envelope.orderKey {
                out.append(.count(.commandsSuperseded))
                continue  // a concurrent command that loses to the one in force: nothing changes
            }
            remember(
                ItemGroupState(winner: envelope, timeline: timeline, clockSource: delivered.clockSource),
                for: command.item)
            if case .interstitial(let interstitial, let position, _, _) = command.operation {
                onHold(
                    interstitial, position: position, by: envelope,
                    isCurrent: incomingItem == command.item && player.item?.id == command.item && !isHistory
                        && !isDeferring, context, into: &out)
            }
            if incomingItem == command.item {
                currentItemChanged = true
            } else if !isHistory && !isDeferring {  // history is adopted, not reported
                out.append(
                    .emit(
                        .commandIgnored(
                            IgnoredCommand(
                                commandItem: command.item, currentItem: player.item?.id,
                                operation: command.operation.reason,
                                originator: context.originator(envelope.dot.origin),
                                dot: envelope.dot))))
            }
        }
        if isHistory {
            // More of the group's history is on its way: follow its final state once it is here.
            if case .current = history { history = .catchingUp(since: context.now.monotonic) }
            return out
        }
        settle(
            activityChanged: activityChanged, currentItemChanged: currentItemChanged, context,
            into: &out)
        return out
    }

    /// A command was taken in: while catching up on history, the commands just delivered may
    /// have closed the gap (`isBehind` is read only then: it compares every peer's digest).
    mutating func onHistoryProgress(isBehind: () -> Bool, _ context: PlaybackContext)
        -> [Output]
    {
        guard case .catchingUp = history else { return [] }
        return followAfterHistory(isBehind: isBehind(), context)
    }

    /// Follows the group's final state once the history has arrived (`isBehind` is false) or
    /// the wait ran out.
    mutating func followAfterHistory(isBehind: Bool, _ context: PlaybackContext) -> [Output] {
        guard case .catchingUp(let since) = history else { return [] }
        guard !isBehind || context.now.monotonic - since >= settings.historyCatchUpMax else { return [] }
        history = .current
        var out: [Output] = []
        settle(activityChanged: true, currentItemChanged: true, context, into: &out)
        return out
    }

    /// After group state changed: loads the group's activity if it is not the current item here,
    /// otherwise makes the player follow the current item's group state (unless suspended).
    private mutating func settle(
        activityChanged: Bool, currentItemChanged: Bool, _ context: PlaybackContext,
        into out: inout [Output]
    ) {
        if activityChanged, let proposed = sharedActivity, player.item?.id != proposed.itemID {
            let local = localItemSettings?.itemID == proposed.itemID ? localItemSettings : nil
            makeCurrent(
                LoadedItem(activity: proposed, buffer: local?.buffer ?? 0),
                source: "share", context, into: &out)
        } else if currentItemChanged, !isSuspended, let item = player.item, let group = items[item.id] {
            followGroup(group, context, into: &out)
        }
    }

    // MARK: Items

    private mutating func makeCurrent(
        _ item: LoadedItem, source: String, _ context: PlaybackContext, into out: inout [Output]
    ) {
        // An interstitial and those scheduled here belong to the item they interrupt.
        if interstitial?.item != item.id {
            endInterstitial(cutShort: "the item changed to \(item.id)", context, into: &out)
        }
        localScheduled.removeAll()
        interstitialWatch = nil
        coordination = .idle
        // A stall belongs to the item it happened on: loading another ends its recovery.
        if let stall = suspensions.end(reason: Suspension.stallRecovery) {
            out.append(
                .emit(
                    .suspension(
                        SuspensionReport(
                            id: stall.id, reason: stall.reason, began: false, item: player.item?.id ?? item.id))))
        }
        let group = items[item.id]
        let now = context.now
        tell(.load(item, position: group.map { timeline(of: $0, context).position(at: now.wall) } ?? 0), into: &out)
        out.append(.emit(.itemChanged(ItemReport(item: item, source: source, adoptedGroupState: group != nil))))
        out.append(.announce)
        if let group, !isSuspended { followGroup(group, context, into: &out) }
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

    /// A group state's timeline on the local clock now: re-mapped through the current offset
    /// estimate to the clock its times came from, so that drift between the clocks since the
    /// command arrived is accounted for.
    func timeline(of group: ItemGroupState, _ context: PlaybackContext) -> Timeline {
        guard let source = group.clockSource,
            let estimate = context.offset(source.peer)
        else { return group.timeline }
        return group.timeline.shifted(by: -(estimate.offsetNanos &- source.offsetNanos))
    }

    /// Whether some item's timeline is read through `peer`'s clock.
    func followsClock(of peer: PeerID) -> Bool { items.values.contains { $0.clockSource?.peer == peer } }

    /// Peer `departed` left: the timelines read through its clock follow a live clock from now
    /// on — `anchor`'s (nil: this agent's own), taken as they stand now. A departed clock is only
    /// extrapolated from its last samples, and two agents' extrapolations part at the difference
    /// of their drift estimates (tens of ppm after a short acquaintance: milliseconds within a
    /// minute); a live clock keeps being sampled, so agents that follow the same one stay together.
    mutating func reanchor(departed: PeerID, to anchor: ClockSource?, _ context: PlaybackContext) {
        for (item, group) in items where group.clockSource?.peer == departed {
            var moved = group
            moved.timeline = timeline(of: group, context)
            moved.clockSource = anchor
            items[item] = moved
        }
    }

    /// The group's position for `item` now (the local player's when the group has none).
    func groupPosition(of item: String, _ context: PlaybackContext) -> Double {
        guard let group = items[item] else { return player.position(at: context.now) }
        return timeline(of: group, context).position(at: context.now.wall)
    }
}

extension LoadedItem {
    init(activity: Activity, buffer: Double) {
        self.init(
            id: activity.itemID, url: activity.url, durationSeconds: activity.durationSeconds, bufferSeconds: buffer)
    }
}

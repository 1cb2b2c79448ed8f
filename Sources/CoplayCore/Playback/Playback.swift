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

    @inline(__always) var settings: Settings { sharedSettings.value }
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
    var localItemSettings: LocalItemSettings?
    var history: History = .current
    var correction = Correction()
    /// Whether the last announcement said this agent waits out a suspension (the answer changes
    /// with the peers' announcements: a change is announced at once). Kept across memberships.
    var announcedWaitsOut = false
    /// Interstitials: the one playing here, the group's and this participant's still to come,
    /// the hold due (`Interstitials`, `Playback+Interstitials`).
    var interstitials = Interstitials()

    init(settings: Settings) { self.sharedSettings = SharedSettings(settings) }

    /// A new membership: the group's state is learned afresh (the player keeps what it has).
    mutating func reset() {
        activity = nil
        items.removeAll()
        itemsChangeOrder.removeAll()
        coordination = .idle
        history = .current
        interstitials.onNewMembership()
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
        interstitials.localScheduled.removeAll()
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
                                dot: items[item.id]?.winner.dot ?? Dot(origin: context.member, counter: 0),
                                liveEdge: player.live?.dates.upperBound))))
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
    /// The commands that make the group's state, for a snapshot: each item's, the activity and
    /// the interstitials scheduled.
    var winners: [CommandEnvelope] {
        items.values.map({ $0.winner }) + (activity.map { [$0] } ?? []) + scheduledCommands
    }
    var catchingUp: Bool { suspensions.contains(Suspension.stallRecovery) }
    var sharedActivity: Activity? {
        switch activity?.command.operation {
        case .share(let activity)?: return activity
        case .queue(.advance(_, let item, _, _))?: return item.activity
        default: return nil
        }
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
        let leaving = sharedActivity
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
        if activityChanged, let leaving, sharedActivity?.itemID != leaving.itemID {
            freeze(leaving, context)
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

    mutating func makeCurrent(
        _ item: LoadedItem, source: String, _ context: PlaybackContext, into out: inout [Output]
    ) {
        // An interstitial and those scheduled here belong to the item they interrupt.
        if interstitials.playing?.item != item.id {
            endInterstitial(cutShort: "the item changed to \(item.id)", context, into: &out)
        }
        interstitials.localScheduled.removeAll()
        interstitials.watch = nil
        coordination = .idle
        // A stall belongs to the item it happened on: loading another ends its recovery.
        if let stall = suspensions.end(reason: Suspension.stallRecovery) {
            out.append(
                .emit(
                    .suspension(
                        SuspensionReport(
                            id: stall.id, reason: stall.reason, began: false, item: player.item?.id ?? item.id))))
        }
        suspensions.cannotPlay = nil  // another item: this player may well play it
        suspensions.playsAnotherEncode = false
        let group = items[item.id]
        let now = context.now
        tell(.load(item, position: group.map { timeline(of: $0, context).position(at: now.wall) } ?? 0), into: &out)
        out.append(.emit(.itemChanged(ItemReport(item: item, source: source, adoptedGroupState: group != nil))))
        out.append(.announce)
        if let group, !isSuspended { followGroup(group, context, into: &out) }
    }

    /// The group left `left` for another item: its state stops there, paused where it was (at
    /// 0:00 once past its end), rather than run on while nobody watches. Local to this agent (it
    /// applied the share a few milliseconds before or after the others did); a re-share of the
    /// item says the position to everyone (`leftPosition`).
    private mutating func freeze(_ left: Activity, _ context: PlaybackContext) {
        guard let group = items[left.itemID], case .playing = group.timeline else { return }
        let position = leftPosition(of: group, duration: left.durationSeconds, context)
        items[left.itemID]?.timeline = .paused(position: position)
    }

    /// Where an item the group left stands: its position now (a frozen state's: where it was
    /// left), within its duration, and 0 once it had ended.
    func leftPosition(of group: ItemGroupState, duration: Double?, _ context: PlaybackContext) -> Double {
        let position = max(0, timeline(of: group, context).position(at: context.now.wall))
        guard let duration, duration > 0 else { return position }
        return position >= duration - settings.endedMargin.seconds ? 0 : position
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
            id: activity.itemID, url: activity.url, durationSeconds: activity.durationSeconds, bufferSeconds: buffer,
            live: activity.live)
    }
}

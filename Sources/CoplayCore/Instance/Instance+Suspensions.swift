/// One reason this participant is separated from the group's playback (AVCoordinatedPlaybackSuspension).
public struct Suspension: Hashable, Sendable {
    public var id: UInt32
    /// A built-in reason (`Suspension.builtInReasons`) or any other string.
    public var reason: String
    public var began: MonotonicInstant

    public static let stallRecovery = "stallRecovery"
    public static let whatHappened = "whatHappened"
    /// The reasons AVFoundation defines; any other string is a custom reason.
    public static let builtInReasons = [
        "audioSessionInterrupted", "stallRecovery", "playingInterstitial", "coordinatedPlaybackNotPossible",
        "userActionRequired", "userIsChangingCurrentTime",
    ]
}

/// A time proposed with `resume <id> at=<seconds>` while other suspensions remained: it is sent
/// to the group when the last one ends, unless a group command for the item arrived meanwhile.
struct PendingProposal: Hashable, Sendable {
    var position: Double
    var item: String
    /// The item's winning command when the proposal was made.
    var winner: Dot?
}

extension Instance {
    public var isSuspended: Bool { !suspensions.isEmpty }
    public var catchingUp: Bool { suspensions.contains { $0.reason == Suspension.stallRecovery } }

    // MARK: Console commands

    mutating func suspensionCommand(_ command: ConsoleCommand, now: Timestamp, into out: inout [Directive]) {
        switch command {
        case .suspend(let reason):
            guard suspensions.count < Announcement.suspensionsMax else {
                return out.append(
                    .emit(
                        .commandError(
                            .init(message: "already \(suspensions.count) suspensions (the limit)", usage: "resume <id>")
                        )))
            }
            beginSuspension(reason, now: now, into: &out)
        case .resume(let id, let proposedPosition):
            guard let suspension = suspensions.first(where: { $0.id == id }) else {
                let active = suspensions.map { "\($0.id) (\($0.reason))" }.joined(separator: ", ")
                return out.append(
                    .emit(
                        .commandError(
                            .init(
                                message: "no suspension \(id); active: \(active.isEmpty ? "none" : active)",
                                usage: "resume <id> [at=<seconds>]"))))
            }
            if let proposedPosition, let item = player.item {
                pendingProposal = PendingProposal(
                    position: proposedPosition, item: item.id, winner: items[item.id]?.winner.dot)
            }
            endSuspension(suspension, now: now, into: &out)
        case .whatHappened(let seconds):
            guard let item = player.item else {
                return out.append(
                    .emit(.commandError(.init(message: "no item is loaded", usage: "what-happened [seconds]"))))
            }
            guard !suspensions.contains(where: { $0.reason == Suspension.whatHappened }) else {
                return out.append(
                    .emit(
                        .commandError(
                            .init(message: "already catching up on what happened", usage: "what-happened [seconds]"))))
            }
            beginSuspension(Suspension.whatHappened, now: now, into: &out)
            let target = groupPosition(of: item.id, now: now)
            player.play(rate: whatHappenedRate(item: item.id), position: max(0, target - seconds), at: now.wall)
        default:
            preconditionFailure("\(command) is not a suspension command")
        }
    }

    // MARK: Beginning and ending

    @discardableResult
    mutating func beginSuspension(_ reason: String, now: Timestamp, into out: inout [Directive]) -> Suspension {
        let suspension = Suspension(id: nextSuspensionID, reason: reason, began: now.monotonic)
        nextSuspensionID &+= 1
        suspensions.append(suspension)
        coordination = nil  // a suspended participant takes no part in a coordinated start
        out.append(
            .emit(
                .suspension(
                    SuspensionReport(id: suspension.id, reason: reason, began: true, item: player.item?.id ?? ""))))
        announceStateChange(into: &out)
        return suspension
    }

    mutating func endSuspension(_ suspension: Suspension, now: Timestamp, into out: inout [Directive]) {
        guard let index = suspensions.firstIndex(of: suspension) else { return }
        suspensions.remove(at: index)
        out.append(
            .emit(
                .suspension(
                    SuspensionReport(
                        id: suspension.id, reason: suspension.reason, began: false, item: player.item?.id ?? ""))))
        announceStateChange(into: &out)
        if suspensions.isEmpty { rejoinGroup(now: now, into: &out) }
    }

    mutating func endSuspension(reason: String, now: Timestamp, into out: inout [Directive]) {
        if let suspension = suspensions.first(where: { $0.reason == reason }) {
            endSuspension(suspension, now: now, into: &out)
        }
    }

    /// The last suspension ended: send a pending proposal, or snap to the group's time and rate.
    private mutating func rejoinGroup(now: Timestamp, into out: inout [Directive]) {
        guard let item = player.item else { return }
        if let proposal = pendingProposal {
            pendingProposal = nil
            if proposal.item == item.id, items[item.id]?.winner.dot == proposal.winner, state.isJoined {
                let rate = items[item.id]?.timeline.rate ?? 0
                let resume: Double
                if case .waiting(_, let waitingRate, _, _)? = items[item.id]?.timeline {
                    resume = waitingRate
                } else {
                    resume = rate
                }
                issueGroupCommand(
                    Command(
                        item: item.id,
                        operation: .seek(position: proposal.position, resumeRate: resume, requestedAt: now.wall)),
                    now: now, into: &out)
                return
            }
        }
        if let group = items[item.id] { followGroup(group, now: now, into: &out) }
    }

    /// Broadcasts the new participant state at once (rather than at the next heartbeat).
    mutating func announceStateChange(into out: inout [Directive]) {
        if state.isJoined { out.append(.multicast(outgoing(.heartbeat(announcement(isReply: false))))) }
    }

    // MARK: What happened

    /// The group's position for `item` now (the local player's when the group has none).
    func groupPosition(of item: String, now: Timestamp) -> Double {
        guard let group = items[item] else { return player.position(at: now) }
        return timeline(of: group, now: now).position(at: now.wall)
    }

    /// Twice the group's rate (at least 2): fast enough to catch up.
    func whatHappenedRate(item: String) -> Double { 2 * max(1, items[item]?.timeline.rate ?? 0) }

    /// Ends the what-happened suspension once the player has caught up with the group.
    mutating func checkWhatHappened(now: Timestamp, into out: inout [Directive]) {
        guard let suspension = suspensions.first(where: { $0.reason == Suspension.whatHappened }),
            let item = player.item
        else { return }
        if player.position(at: now) >= groupPosition(of: item.id, now: now) - 0.000_5 || player.rate == 0 {
            endSuspension(suspension, now: now, into: &out)
        }
    }

    /// When the what-happened catch-up will be done, for the wake-up.
    func whatHappenedWake(now: Timestamp) -> MonotonicInstant? {
        guard suspensions.contains(where: { $0.reason == Suspension.whatHappened }), let item = player.item,
            player.rate > 0
        else { return nil }
        let gap = groupPosition(of: item.id, now: now) - player.position(at: now)
        let closing = player.rate - (items[item.id]?.timeline.rate ?? 0)
        guard closing > 0 else { return nil }
        return now.monotonic + .nanoseconds(Int64(max(0, gap / closing) * 1e9) + 1_000)
    }
}

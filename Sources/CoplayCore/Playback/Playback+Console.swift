/// What a person typed, for playback: a load, a share, the transport commands (a group command
/// each, or, while suspended, this player's alone), and suspensions.
extension Playback {
    /// A transport or suspension command typed here.
    mutating func onCommand(_ command: ConsoleCommand, _ context: PlaybackContext)
        -> [Output]
    {
        var out: [Output] = []
        switch command {
        case .suspend, .resume, .whatHappened:
            suspensionCommand(command, context, into: &out)
            return out
        case .interstitial(let url, let duration, let at, let forAll):
            return onInterstitialCommand(url: url, durationSeconds: duration, at: at, forAll: forAll, context)
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
            // An item the group left and comes back to resumes where it was left (`leftPosition`),
            // paused: said as a group command, so that every agent (a late joiner too) agrees.
            if let group = items[proposed.itemID] {
                let position = leftPosition(of: group, duration: proposed.durationSeconds, context)
                out.append(.issue(Command(item: proposed.itemID, operation: .pause(position: position, at: now.wall))))
            }
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
                        operation: .play(
                            rate: rate, position: startPosition(player.position(at: now)), requestedAt: now.wall))))
        case .playNow(let rate):
            guard let item = requireItem(into: &out) else { break }
            out.append(
                .issue(
                    Command(
                        item: item.id,
                        operation: .playNow(rate: rate, position: startPosition(player.position(at: now)), at: now.wall)
                    )))
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
                        operation: .seek(
                            position: startPosition(seconds), resumeRate: resumeRate, requestedAt: now.wall)
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
                operation = .play(rate: rate, position: startPosition(position), requestedAt: now.wall)
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
    mutating func actLocallyWhileSuspended(
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
            dot: Dot(origin: context.member, counter: 0), liveEdge: player.live?.dates.upperBound)
        out.append(.emit(player.rate > 0 ? .playing(report) : .paused(report)))
        return true
    }

    /// Where a start or a seek issued here lands: on a live item, inside its window and near its
    /// edge (`LiveTimeline.clamp`, `Settings.live.holdbackTargets`), since a group paused for long
    /// (or an item just shared, at 0) is behind the segments the playlist still lists; any other
    /// item's position as it is.
    func startPosition(_ position: Double) -> Double {
        // Past a known end: to the end, on every participant alike (the command carries it).
        guard let live = player.live else { return player.clamp(position) }
        return LiveTimeline.clamp(
            position, window: live.dates, holdback: settings.live.holdbackTargets * live.targetDuration)
    }

    func fail(_ message: String, usage: String) -> Output {
        .emit(.commandError(.init(message: message, usage: usage)))
    }

    func requireItem(into out: inout [Output]) -> LoadedItem? {
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
}

/// How a real player follows the group's timeline: the core's `PlayerCommand`s and the player's
/// primitive observations in, primitive actions for the player and `PlayerReport`s for the core
/// out. It is the one place where a start is timed, a seek's cost and a start's bias are learnt,
/// a pause is snapped, a late start is caught up, a rate is applied (dithered around a dead band,
/// or replaced by skips where the rate cannot steer) and a position is sampled. An adapter (mpv's
/// IPC, a page's `<video>`) only performs the actions and says what the player did.
///
/// Sans-IO like the rest of the core: every input carries the shell's `Timestamp`; the follower
/// wants to be called again at `nextWake` (`advance`). Modelled on AVPlayer's
/// `setRate(_:time:atHostTime:)`: the core says where to be and when, the follower makes a player
/// with only play, pause, seek and rate get there.
public struct PlayerFollower: Sendable {
    /// What the player can do, as its adapter declares it.
    public struct Capabilities: Hashable, Sendable {
        /// Its rate steers it (mpv's `speed`, most engines' `playbackRate`). When false, or once
        /// found not to follow its rate (where `checksRate`), it is steered by skips alone.
        public var steersByRate: Bool
        /// Whether its rate steers is not known: the follower checks that the media follows the
        /// rates asked (`FollowerSettings.rateCheckMisses`). A player known to steer is not
        /// checked: a check that misfires (Chromium's clock set back at each rate change, a
        /// freeze) costs the precision of rate steering for good.
        public var checksRate: Bool
        /// Rates within this of 1 it plays as exactly 1 (Chromium's audio renderer): a rate
        /// inside twice this is made by alternating either side of it (0: none).
        public var rateDeadBand: Double
        /// A pause or unpause made in the player is the person's (a player with its own
        /// controls: mpv), a group command. When false it is the platform's (a browser pausing a
        /// hidden page's video): a stall of this participant, retried.
        public var ownPausesArePersons: Bool
        /// The seek to where the group paused waits for the player's word that it paused (mpv:
        /// that word is what the other players wait on, and a seek sent with the pause held it).
        public var snapsAfterPausing: Bool
        /// A seek not done within `FollowerSettings.seekPatience` reloads the media (`.reload`).
        public var reloadsStuckSeeks: Bool
        /// Its position readings move in steps (Firefox's `currentTime`, every 40 ms or so):
        /// each is where it was up to a step before, and it is steered by the highest of its
        /// recent readings carried forward (`FollowerSettings.steppedReadingsSpan`).
        public var readsInSteps: Bool
        /// Its clock may stand still for a while just after an unpause (Chromium's ran 30 ms, then
        /// stood 65 ms while its audio output started): a start is judged at the first reading that
        /// has run at the rate since the one before, read every `FollowerSettings.startReadingInterval`
        /// until then. A reading taken while it stood found a phone's join 44 ms late when it was
        /// 75 ms late, and the rest took the nudges 2 s more.
        public var standsAfterStart: Bool
        /// How late its clock starts after a load or a seek, as far as is known before any start is
        /// learnt from (seconds, within ±`FollowerSettings.startBiasMax`): the start bias begins
        /// here. A joiner's first start is the one a person watches: Chromium's stood 72-98 ms in
        /// five joins, and a start not told so began 86 ms behind.
        public var startLateness: Double
        /// It answers each change asked of it (mpv: each `set_property` with its request id), and
        /// says so (`.answered`): a change asked is its own until its echo has had time to come
        /// after that answer (`Echoes`). One that answers nothing is taken to have made a change
        /// the moment it was asked.
        public var answersAsks: Bool

        public init(
            steersByRate: Bool = true, checksRate: Bool = false, rateDeadBand: Double = 0,
            ownPausesArePersons: Bool = true, snapsAfterPausing: Bool = true, reloadsStuckSeeks: Bool = false,
            readsInSteps: Bool = false, standsAfterStart: Bool = false, startLateness: Double = 0,
            answersAsks: Bool = false
        ) {
            self.steersByRate = steersByRate
            self.checksRate = checksRate
            self.rateDeadBand = rateDeadBand
            self.ownPausesArePersons = ownPausesArePersons
            self.snapsAfterPausing = snapsAfterPausing
            self.reloadsStuckSeeks = reloadsStuckSeeks
            self.readsInSteps = readsInSteps
            self.standsAfterStart = standsAfterStart
            self.startLateness = startLateness
            self.answersAsks = answersAsks
        }

        /// mpv: its own controls are the person's, its speed steers, and it answers each change.
        public static let mpv = Capabilities(answersAsks: true)
        /// A page's `<video>`: no controls of its own (the page's buttons are commands), a pause
        /// it makes is the browser's, a stuck seek reloads.
        public static let video = Capabilities(
            ownPausesArePersons: false, snapsAfterPausing: false, reloadsStuckSeeks: true)
    }

    /// What the player is asked to do.
    public enum Action: Hashable, Sendable {
        /// Open the item, paused; say `.loaded` once it knows the media (seeks may go), and
        /// `.restarted` once it holds a frame it can play from.
        case load(LoadedItem)
        /// Go to the position (exactly); say `.restarted` once every seek asked is done.
        case seek(Double)
        case pause
        case play
        case setRate(Double)
        /// Say where it is (`.position`), stamped when it was read.
        case readPosition
        /// Load the current item afresh at the position (its pipeline is stuck).
        case reload(Double)
        case unload
        case interstitial(Interstitial)
        case endInterstitial
    }

    /// What the player says.
    public enum Observation: Hashable, Sendable {
        /// It knows the media of the item loaded: seeks may go.
        case loaded
        /// It holds a frame where it was sent: every seek asked is done, and it can play.
        case restarted
        /// The answer to `.readPosition`: it was at `position` at wall instant `at`.
        case position(Double, at: WallInstant)
        /// It could not say (an audio clock not started yet).
        case positionUnavailable
        /// It paused (true) or plays (false), asked or not: late, or coalesced with other changes.
        case paused(Bool)
        /// Its rate changed to this, asked or not: late, or coalesced with other changes.
        case rate(Double)
        /// It answered the oldest change of this kind asked of it and not yet answered (a player
        /// whose `Capabilities.answersAsks`): it has made it.
        case answered(Asked)
        /// A seek not asked for began (the person's), and where it landed.
        case personSeekBegan
        case personSeekLanded(Double)
        /// It ran out of media (true), or has it again (false).
        case starved(Bool)
        /// It reached the end of the item.
        case ended
        /// It refused the seek asked (a server without byte ranges).
        case seekRefused
        /// The item's length, found once loaded.
        case duration(Double)
        /// The page it plays in was hidden (true) or shown again (false).
        case hidden(Bool)
        /// It refused to play (a browser that wants a gesture).
        case playRefused
    }

    /// A change asked of the player that it answers (`Observation.answered`).
    public enum Asked: Hashable, Sendable { case pause, rate }

    /// One step's work: actions for the player, in order, and reports for the core.
    public struct Output: Hashable, Sendable {
        public var actions: [Action] = []
        public var reports: [PlayerReport] = []
        public init() {}
    }

    /// The timeline played: at wall instant `at` the media is at `position`, moving at `rate`.
    struct Anchor: Hashable, Sendable {
        var rate: Double
        var position: Double
        var at: WallInstant
        func position(at instant: WallInstant) -> Double { position + rate * (instant - at).seconds }
    }

    /// How the player came to hold the frame a start unpauses from. mpv's audio clock jumps
    /// differently at the unpause: after a load or a seek it is off by the codec's priming and by
    /// how long the audio output waits for the first frame; after a pause it goes on from where
    /// it stopped. One average over both kinds was wrong for each.
    enum Hold: Hashable, Sendable { case restart, pause }

    public let capabilities: Capabilities
    let settings: FollowerSettings
    /// The bounds of a catch-up and of what a command may carry (the core's settings).
    let catchUpRate: Double
    let speedDisturbanceMax: Double

    private(set) var item: LoadedItem?
    private var loaded = false
    private var durationReported = false
    /// A load or prepare waiting to be ready at this position; the seek to make once loaded.
    private var preparing: Double?
    private var seekOnLoad: Double?
    /// The position it holds while paused, when known.
    private var held: Double?
    /// The seek to the group's pause position, made once the player says it paused.
    private var snapOnPause: Double?
    /// A seek asked is not done; since when (its cost is learnt), and where it goes.
    private(set) var seeking = false
    private var seekSentAt: MonotonicInstant?
    private var seekTarget = 0.0
    private var seekDeadline: MonotonicInstant?
    /// A seek refused while preparing is asked again at `seekDeadline` (after
    /// `FollowerSettings.seekRefusalRetry`), once per item; refused again, the player fails.
    private var seekRefusedInItem = false
    private var seekedInItem = false
    /// What a seek costs, from the command to the restart (seconds, learnt).
    private(set) var seekCost: Double
    /// What the follower last asked: paused, and the speed (or the speed the player was found at,
    /// changed by something else); the speed it last asked itself.
    private var askedPause = true
    private var askedAnything = false
    private var askedSpeed = 1.0
    private var ownSpeed = 1.0
    /// The pauses (1: paused, 0: playing) and rates asked that the player may still report back.
    private var pauseEchoes = Echoes()
    private var rateEchoes = Echoes()
    /// What the player last said: paused or not.
    private var playerPaused = true
    /// The group's rate; the rate the core last asked (the group's with its nudge).
    private var groupRate = 1.0
    private var wantedRate = 1.0
    private var catchUpUntil: MonotonicInstant? { didSet { if catchUpUntil == nil { catchUpLatest = nil } } }
    /// A catch-up ended by its readings (a player with a dead band) ends by this at the latest.
    private var catchUpLatest: MonotonicInstant?
    private var ended = false
    private var starved = false
    private var hidden = false
    private var anchor: Anchor?
    /// When to unpause for a start (local wall clock), and the kind of hold it unpauses from.
    private var unpauseAt: WallInstant?
    private var unpauseHold = Hold.restart
    private var hold = Hold.restart
    private(set) var startBias = (restart: 0.0, pause: 0.0)
    private var measureStartBias = false { didSet { startReading = nil } }
    /// Steered by skips: the start's last reading while it waits for one that runs at the rate
    /// (`FollowerSettings.startSettledWithin`), and how many it has read.
    private var startReading: (position: Double, at: WallInstant, count: Int)?
    /// Bumped whenever the timeline changes: a position asked for before is stale.
    private var generation = 0
    private var nextSampleAt: MonotonicInstant?
    private var sampleAsked: (generation: Int, at: MonotonicInstant)?
    private var lastSample: (position: Double, at: WallInstant)?
    /// Steering by skips (the rate does not steer): the last skip, and the check of the rate.
    private(set) var skipsOnly: Bool
    private(set) var skips = 0
    private var lastSkipAt: MonotonicInstant?
    /// The start being measured was a skip made again at once (it landed late): not again until
    /// the next skip or the next timeline.
    private var reskipped = false
    /// Since when every reading of a player steered by skips has been more than `skipSettledFrom` off,
    /// and on which side (forgotten at a seek, and when the page is hidden or shown).
    private var offSince: (at: WallInstant, ahead: Bool)?
    /// The rate check's window: where and when it began, the last reading and the rate asked
    /// since, and how far from the group's rate the asked rates took the media (rate × seconds).
    private var rateCheck: (position: Double, at: WallInstant, last: WallInstant, asked: Double, away: Double)? {
        didSet { if rateCheck == nil { steppedReadings.removeAll() } }  // a gap in the readings
    }
    /// The readings in a row of a player that reads in steps, oldest first, within
    /// `steppedReadingsSpan` (fewer than `steppedReadingsMax`).
    private var steppedReadings: [(position: Double, at: WallInstant)] = []
    private var rateMisses = 0
    /// A rate inside the dead band, made by alternating: the share of the period above 1, and
    /// when the side changes next.
    private var dither: (high: Double, above: Bool, switchAt: MonotonicInstant)?
    private var retryPlayAt: MonotonicInstant?
    /// Where the platform paused the player (a browser pausing a hidden page's video), until it
    /// plays again: it stands there meanwhile.
    private var platformPausedAt: Double?

    public init(_ capabilities: Capabilities, settings: Settings) {
        self.capabilities = capabilities
        self.settings = settings.follower
        self.catchUpRate = settings.rateCatchUpMax
        self.speedDisturbanceMax = settings.playerSpeedDisturbanceMax
        self.seekCost = settings.follower.seekCostInitial
        let lateness = capabilities.startLateness.isFinite ? capabilities.startLateness : 0
        self.startBias.restart = -min(max(lateness, -settings.follower.startBiasMax), settings.follower.startBiasMax)
        self.skipsOnly = !capabilities.steersByRate
    }

    // MARK: The core's commands

    public mutating func command(_ command: PlayerCommand, now: Timestamp) -> Output {
        var out = Output()
        switch command {
        case .load(let item, let position):
            self.item = item
            (loaded, durationReported, seekedInItem, seeking, seekDeadline) = (false, false, false, false, nil)
            seekRefusedInItem = false
            // A stall is the item's: one never said to be over must not hold the next one back.
            (starved, ended, hold, snapOnPause, held) = (false, false, .restart, nil, nil)
            stopTimeline()
            setPause(true, &out)
            preparing = position
            seekOnLoad = position > 0.0005 ? position : nil
            out.actions.append(.load(item))
        case .prepare(let position):
            guard item != nil else { break }
            stopTimeline()
            setPause(true, &out)
            // Already held there (the group paused here): ready at once. A seek to where it is
            // would cost the coordinated start tens of milliseconds for nothing.
            if loaded, !seeking, seekOnLoad == nil, snapOnPause == nil, !starved, let held,
                abs(held - position) < settings.heldWithin
            {
                preparing = nil
                out.reports.append(.ready(position: position))
                break
            }
            (snapOnPause, preparing, held) = (nil, position, nil)
            // Also where a load is going already: the seek, made as the file is loaded, ends with
            // the load's own restart (three mpvs began an item 5 ms apart without it, 1 ms with).
            if loaded { seek(to: position, now: now, &out) } else { seekOnLoad = position }
        case .play(let rate, let position, let at):
            guard item != nil else { break }
            play(Anchor(rate: rate, position: position, at: at), now: now, &out)
        case .adjustRate(let rate, _):
            guard !askedPause, anchor != nil else { break }
            wantedRate = rate
            if catchUpUntil == nil { applyRate(rate, now: now, &out) }
        case .pause(let position):
            guard item != nil else { break }
            let current = estimate(at: now.wall)
            let wasPlaying = !askedPause
            if wasPlaying { hold = .pause }
            stopTimeline()
            setPause(true, &out)
            snapOnPause = nil
            if loaded, abs(current - position) > settings.heldWithin {
                if wasPlaying, capabilities.snapsAfterPausing {
                    snapOnPause = position
                } else {
                    seek(to: position, now: now, &out)
                }
            }
            held = position
        case .unload:
            stopTimeline()
            setPause(true, &out)
            (item, loaded, starved, preparing, held, snapOnPause, seeking) = (nil, false, false, nil, nil, nil, false)
            out.actions.append(.unload)
        case .simulateStall:
            break  // a real player stalls for real, or not at all
        case .interstitial(let interstitial):
            out.actions.append(.interstitial(interstitial))
        case .endInterstitial:
            out.actions.append(.endInterstitial)
        }
        noteAsks(out, now: now)
        return out
    }

    /// Every pause, unpause and rate in `out` is an ask the player may report back (`Echoes`).
    private mutating func noteAsks(_ out: Output, now: Timestamp) {
        let answered = !capabilities.answersAsks
        for action in out.actions {
            switch action {
            case .pause: pauseEchoes.asked(1, now: now.monotonic, answered: answered, max: FollowerSettings.echoesMax)
            case .play: pauseEchoes.asked(0, now: now.monotonic, answered: answered, max: FollowerSettings.echoesMax)
            case .setRate(let rate):
                rateEchoes.asked(rate, now: now.monotonic, answered: answered, max: FollowerSettings.echoesMax)
            default: break
            }
        }
    }

    private mutating func play(_ new: Anchor, now: Timestamp, _ out: inout Output) {
        let catchingUp = catchUpUntil != nil && new.rate == groupRate
        (groupRate, wantedRate) = (new.rate, new.rate)
        if !askedPause, anchor != nil || lastSample != nil,
            abs(estimate(at: now.wall) - new.position(at: now.wall)) < settings.playWithoutSeekWithin.seconds,
            new.at <= now.wall
        {
            // Already playing about there (a re-anchor, a rate change, the person's own unpause):
            // no seek, no jump; the rate nudges close the rest.
            anchor = new
            // A catch-up goes on through a re-anchor at the same rate (a joiner's clock refined):
            // the player is still as far behind. Ended there, it left a phone's join 80 ms late
            // and unread for 1.3 s, until the catch-up's own end.
            if catchingUp { return }
            catchUpUntil = nil
            let soon = now.monotonic + settings.sampleInterval
            nextSampleAt = min(nextSampleAt ?? soon, soon)
            applyRate(new.rate, now: now, &out)
            return
        }
        catchUpUntil = nil
        stopTimeline()
        applyRate(new.rate, now: now, &out)
        anchor = new
        let lead = restartLead(rate: new.rate)
        // A snap not yet made: the player is not where it is thought to hold.
        let snapPending = snapOnPause != nil
        snapOnPause = nil
        // The unpause comes the start bias after the instant: a start that arrives after its
        // instant but before then is still on time.
        let unpauseDelay = bias(hold) / max(new.rate, 0.01)
        if askedPause, let held, preparing == nil, !seeking, !snapPending,
            abs(held - new.position) < settings.heldWithin,
            (new.at - now.wall).seconds + unpauseDelay >= 0
        {
            unpauseAt = new.at  // prepared where the start is: unpause at the instant
        } else if new.at > now.wall + lead {
            setPause(true, &out)
            seek(to: new.position, now: now, &out)
            unpauseAt = new.at
        } else {
            // Late: seek to where the timeline will be once the seek is done, and play from there.
            let start = now.wall + lead
            setPause(true, &out)
            seek(to: new.position(at: start), now: now, &out)
            unpauseAt = start
        }
        unpauseHold = hold
    }

    /// How long after a seek is asked the player plays on from its target: the seek's cost, and
    /// how late its clock starts after a restart where that is learnt (a browser's audio output
    /// starts some 50 ms after the frame is shown; mpv's clock is ahead instead, which a start
    /// waits out at the unpause).
    private func restartLead(rate: Double) -> Duration {
        .seconds(saturating: seekCost + max(0, -startBias.restart) / max(rate, 0.01))
    }

    private func bias(_ hold: Hold) -> Double {
        switch hold {
        case .restart: startBias.restart
        case .pause: startBias.pause
        }
    }

    /// Forgets the timeline played: stale positions are discarded, no start is pending.
    private mutating func stopTimeline() {
        (anchor, unpauseAt, nextSampleAt, lastSample, sampleAsked) = (nil, nil, nil, nil, nil)
        (measureStartBias, catchUpUntil, dither, retryPlayAt, rateCheck) = (false, nil, nil, nil, nil)
        (platformPausedAt, reskipped, offSince) = (nil, false, nil)
        generation += 1
    }

    /// Where the player is at `instant`, as far as it is known without asking.
    func estimate(at instant: WallInstant) -> Double {
        if let platformPausedAt { return platformPausedAt }
        if !askedPause, let lastSample { return lastSample.position + askedSpeed * (instant - lastSample.at).seconds }
        if !askedPause, let anchor, instant >= anchor.at { return anchor.position(at: instant) }
        return held ?? preparing ?? 0
    }

    // MARK: The timer

    public func nextWake(now: Timestamp) -> MonotonicInstant? {
        var due: [MonotonicInstant?] = [catchUpUntil, dither?.switchAt, retryPlayAt, seekDeadline]
        due.append(pauseEchoes.settleDue(grace: FollowerSettings.echoGrace))
        due.append(rateEchoes.settleDue(grace: FollowerSettings.echoGrace))
        if let unpauseAt, !seeking {
            let delay = (unpauseAt - now.wall).seconds + bias(unpauseHold) / max(groupRate, 0.01)
            due.append(now.monotonic + .seconds(saturating: max(0, delay)))
        }
        if let sampleAsked {
            due.append(sampleAsked.at + settings.sampleAnswerPatience)
        } else {
            due.append(nextSampleAt)
        }
        return due.compactMap { $0 }.min()
    }

    public mutating func advance(now: Timestamp) -> Output {
        var out = Output()
        runTimers(now: now, &out)
        noteAsks(out, now: now)
        return out
    }

    private mutating func runTimers(now: Timestamp, _ out: inout Output) {
        // The last ask's echo never came after an older one's: asked again, as the player may
        // stand at the older value.
        if let due = pauseEchoes.settleDue(grace: FollowerSettings.echoGrace), due <= now.monotonic {
            pauseEchoes.settled()
            if playerPaused != askedPause { out.actions.append(askedPause ? .pause : .play) }
        }
        if let due = rateEchoes.settleDue(grace: FollowerSettings.echoGrace), due <= now.monotonic {
            rateEchoes.settled()
            askedSpeed = ownSpeed
            out.actions.append(.setRate(ownSpeed))
        }
        if let due = catchUpUntil, due <= now.monotonic {
            catchUpUntil = nil
            applyRate(wantedRate, now: now, &out)
        }
        if let due = seekDeadline, due <= now.monotonic {
            seekDeadline = nil
            if !seeking, let position = preparing, loaded {
                seek(to: position, now: now, &out)  // refused once (`.seekRefused`): asked again
            } else if seeking, capabilities.reloadsStuckSeeks {
                // Playing, it reloads where the group will be once reloaded.
                let target = anchor.map { $0.position(at: now.wall + .seconds(saturating: seekCost)) } ?? seekTarget
                seekSentAt = now.monotonic
                out.actions.append(.reload(max(0, target)))
            }
        }
        if let unpauseAt, !seeking,
            (now.wall - unpauseAt).seconds >= bias(unpauseHold) / max(groupRate, 0.01) - 0.0002
        {
            self.unpauseAt = nil
            setPause(false, &out)
            held = nil
            measureStartBias = true
            nextSampleAt = now.monotonic + settings.firstSampleDelay
        }
        if let asked = sampleAsked, now.monotonic - asked.at >= settings.sampleAnswerPatience {
            sampleAsked = nil  // the answer never came: ask again
        }
        if let due = nextSampleAt, due <= now.monotonic, sampleAsked == nil, !askedPause, anchor != nil {
            nextSampleAt = now.monotonic + settings.sampleInterval
            if !seeking, preparing == nil, !starved, !hidden {
                sampleAsked = (generation, now.monotonic)
                out.actions.append(.readPosition)
            }
        }
        if let dither, dither.switchAt <= now.monotonic {
            ditherStep(above: !dither.above, high: dither.high, now: now, &out)
        }
        if let due = retryPlayAt, due <= now.monotonic {
            retryPlayAt = nil
            if !askedPause, playerPaused, anchor != nil {
                if !hidden { out.actions.append(.play) }
                retryPlayAt = now.monotonic + settings.playRetryInterval
            }
        }
    }

    // MARK: What the player says

    public mutating func observe(_ observation: Observation, now: Timestamp) -> Output {
        var out = Output()
        switch observation {
        case .loaded:
            loaded = true
            if let position = seekOnLoad {
                seekOnLoad = nil
                seek(to: position, now: now, &out)
            }
        case .restarted:
            restarted(now: now, &out)
        case .position(let position, let at):
            sampled(position, at: at, now: now, &out)
        case .positionUnavailable:
            sampleAsked = nil
        case .paused(let paused):
            pausedChanged(paused, now: now, &out)
        case .rate(let rate):
            guard rate.isFinite, !rateEchoes.heard(rate, now: now.monotonic, grace: FollowerSettings.echoGrace),
                abs(rate - askedSpeed) > Echoes.sameWithin
            else { break }
            // Not asked: something else changed it (within `speedDisturbanceMax` of the speed
            // asked: corrected by the next rate asked), or the person did (mpv's `]` multiplies
            // the speed by 1.1): the group's rate becomes the person's change of it, without the
            // follower's own nudge or catch-up in the speed it changed.
            askedSpeed = rate
            let change = rate / max(ownSpeed, 0.01)
            guard !askedPause, anchor != nil, dither == nil, abs(change - 1) > speedDisturbanceMax else { break }
            let chosen = (groupRate * change * 10_000).rounded() / 10_000
            if let action = PlayerReport.UserAction.play(rate: chosen).checked {
                out.reports.append(.userAction(action))
            }
        case .answered(let asked):
            switch asked {
            case .pause: pauseEchoes.answered(now: now.monotonic)
            case .rate: rateEchoes.answered(now: now.monotonic)
            }
        case .personSeekBegan:
            stopTimeline()
        case .personSeekLanded(let position):
            guard position.isFinite else { break }
            if let action = PlayerReport.UserAction.seek(position: max(0, position)).checked {
                out.reports.append(.userAction(action))
            }
        case .starved(let nowStarved):
            guard nowStarved != starved, item != nil, !nowStarved || !askedPause else { break }
            (starved, rateCheck) = (nowStarved, nil)
            let position = estimate(at: now.wall)
            if nowStarved {
                stopTimeline()
                held = position
                out.reports.append(.stalled(position: position))
            } else {
                out.reports.append(.stallEnded(position: position))
            }
        case .ended:
            guard item != nil, loaded, !ended else { break }
            ended = true
            let position = item?.durationSeconds ?? estimate(at: now.wall)
            stopTimeline()
            // A player at its end may not have paused itself (mpv's keep-open, seen with 0.35:
            // one player of three did), and one left unpaused would start the next item the
            // moment it loads: paused here, explicitly.
            askedPause = false
            setPause(true, &out)
            held = position
            out.reports.append(.ended(position: position))
        case .seekRefused:
            (seeking, seekSentAt, seekDeadline) = (false, nil, nil)
            // A seek beyond what is cached needs a server that takes byte ranges: the player
            // cannot be prepared where the group is, and says why rather than wait for a restart
            // that never comes.
            guard let position = preparing, seekOnLoad == nil else { break }
            // Once per item it is asked again shortly: mpv refuses a seek for a moment, too, while
            // it is still opening a network stream.
            guard seekRefusedInItem else {
                (seekRefusedInItem, seekDeadline) = (true, now.monotonic + FollowerSettings.seekRefusalRetry)
                break
            }
            out.reports.append(
                .failed(
                    "the player cannot seek to \((position * 1000).rounded() / 1000) s in \(item?.url ?? "the stream"):"
                        + " it can seek only where it has cached unless the server takes byte ranges (Range requests)"))
        case .duration(let seconds):
            // The file's length, once per load, for an item shared without one (the core's one check).
            guard PlayerReport.duration(seconds).refusal() == nil, let item, item.durationSeconds == nil, !item.live,
                !durationReported
            else { break }
            durationReported = true
            out.reports.append(.duration(seconds))
        case .hidden(let nowHidden):
            guard nowHidden != hidden else { break }
            hidden = nowHidden
            (rateCheck, offSince) = (nil, nil)  // a gap in the readings
            if nowHidden {
                // Hidden, a page's timers run once a second, then once a minute: it plays at the
                // group's rate unsteered (clocks drift apart by parts per million) until shown.
                dither = nil
                setRate(groupRate, &out)
            } else if !askedPause, anchor != nil {
                if playerPaused, !seeking { out.actions.append(.play) }
                applyRate(catchUpUntil == nil ? wantedRate : askedSpeed, now: now, &out)
                nextSampleAt = now.monotonic  // at once: what drifted while hidden is corrected
            }
        case .playRefused:
            guard !askedPause, anchor != nil else { break }
            if !starved {
                starved = true
                out.reports.append(.stalled(position: estimate(at: now.wall)))
            }
            retryPlayAt = now.monotonic + settings.playRetryInterval
        }
        runTimers(now: now, &out)
        noteAsks(out, now: now)
        return out
    }

    private mutating func restarted(now: Timestamp, _ out: inout Output) {
        if seeking, let sent = seekSentAt {
            let cost = (now.monotonic - sent).seconds
            if cost >= 0, cost < settings.seekCostLearnedMax {
                seekCost = min(max(settings.seekCostKeep * seekCost + (1 - settings.seekCostKeep) * cost, 0.001), 1)
            }
        }
        (seeking, seekSentAt, seekDeadline) = (false, nil, nil)
        if let position = preparing, loaded, seekOnLoad == nil {
            preparing = nil
            held = position
            if !starved { out.reports.append(.ready(position: position)) }
        }
        if !askedPause, anchor != nil { nextSampleAt = now.monotonic + settings.firstSampleDelay }
    }

    private mutating func pausedChanged(_ paused: Bool, now: Timestamp, _ out: inout Output) {
        if paused, askedPause, let position = snapOnPause {
            snapOnPause = nil
            seek(to: position, now: now, &out)
        }
        let was = playerPaused
        playerPaused = paused
        if !paused, let stopped = platformPausedAt {
            // Playing again after the platform's pause: on from where it stopped.
            (platformPausedAt, lastSample) = (nil, (stopped, now.wall))
        }
        // A pause or unpause asked, however late its report: the player is on its way to the last.
        let echo = pauseEchoes.heard(paused ? 1 : 0, now: now.monotonic, grace: FollowerSettings.echoGrace)
        guard paused != askedPause, !echo else { return }
        snapOnPause = nil
        // Where it stopped, read while it still counts as moving.
        let position = estimate(at: now.wall)
        guard capabilities.ownPausesArePersons else {
            // The platform paused it (a hidden page, another page's audio): this participant
            // stalls, the group plays on; it is asked to play again until it does.
            guard paused, was != paused, !ended else { return }
            (platformPausedAt, rateCheck) = (position, nil)
            if !starved {
                starved = true
                out.reports.append(.stalled(position: position))
            }
            retryPlayAt = now.monotonic + settings.playRetryInterval
            return
        }
        askedPause = paused
        if paused {
            guard !ended else { return }
            stopTimeline()
            held = position
            hold = .pause
            out.reports.append(.userAction(.pause))
            return
        }
        unpauseAt = nil
        lastSample = held.map { ($0, now.wall) }
        out.reports.append(.userAction(.play(rate: groupRate)))
    }

    private mutating func sampled(_ position: Double, at: WallInstant, now: Timestamp, _ out: inout Output) {
        guard let asked = sampleAsked else { return }
        sampleAsked = nil
        guard asked.generation == generation, (0...WireFormat.positionMax).contains(position), let anchor, !askedPause
        else { return }
        lastSample = (position, at)
        if measureStartBias {
            if skipsOnly || capabilities.standsAfterStart, !startSettled(position, at: at) {
                let soon = now.monotonic + settings.startReadingInterval
                nextSampleAt = min(nextSampleAt ?? soon, soon)
                return
            }
            measureStartBias = false
            let error = position - anchor.position(at: at)
            let limit = settings.startBiasMax
            if abs(error) < limit {
                let updated = min(max(bias(unpauseHold) + settings.startBiasGain * error, -limit), limit)
                switch unpauseHold {
                case .restart: startBias.restart = updated
                case .pause: startBias.pause = updated
                }
            }
            let rate = max(groupRate, 0.01)
            let slowsInstead = capabilities.standsAfterStart && !skipsOnly
            if seekedInItem, error > settings.startCorrectedFrom, error < limit, !slowsInstead {
                // It started early: it holds still for as long and is back on the group's
                // timeline, rather than be steered in at the catch-up rate for a second. (After a
                // load the first reading is ahead by mpv's priming, and that passes.) A player
                // whose clock stands after a start and whose rate steers is slowed instead (below):
                // its unpause would stand again (Chromium's held 13 ms and stood 90). One steered
                // by skips has no other way to trim an early landing.
                setPause(true, &out)
                (held, rateCheck) = (position, nil)
                unpauseAt = now.wall + .seconds(saturating: error / rate)
                unpauseHold = .pause
                lastSample = nil
                return
            }
            if seekedInItem, skipsOnly, !reskipped, error < -settings.reskipFrom, error > -limit {
                // A player steered by skips cannot make a late start up by rate, and a landing
                // inside `skipBeyond` would stay that late (Chromium forced to skips: 36 ms behind
                // for good). It skips again at once, once, aimed early by the lateness the bias
                // did not learn and a margin: it lands a little early, and holding still (above)
                // trims that.
                reskipped = true
                skips += 1
                lastSkipAt = now.monotonic
                let early = -error * (1 - settings.startBiasGain) + settings.reskipAimEarly
                let lead = restartLead(rate: anchor.rate) + .seconds(saturating: early / rate)
                seek(to: anchor.position(at: now.wall + lead), now: now, &out)
                (measureStartBias, unpauseHold) = (true, .restart)
                return
            }
            if seekedInItem, abs(error) > settings.startCorrectedFrom, abs(error) < limit, !skipsOnly {
                // It started late (or early, where it cannot hold still): it plays at the
                // catch-up rate (or as far below the group's) for as long as makes the time up
                // (20 ms at 5%: 0.4 s), and no reading reaches the nudges' controller meanwhile:
                // it would close the gap exponentially, over a second or more.
                (dither, rateCheck) = (nil, nil)
                setRate(groupRate * (1 + (error < 0 ? catchUpRate : -catchUpRate)), &out)
                let until = now.monotonic + .seconds(saturating: abs(error) / (rate * catchUpRate))
                catchUpUntil = until
                lastSample = nil
                guard capabilities.rateDeadBand > 0 else {
                    nextSampleAt = until + settings.sampleInterval
                    return
                }
                // A player with a dead band (Chromium) sets its clock back as its rate leaves 1
                // (25 ms; PLAYERS.md): a catch-up timed from the error fell short by as much. It
                // is read meanwhile, and ends when its readings are even, or at the latest when
                // twice the time and `catchUpSlack` have passed.
                catchUpLatest = until + (until - now.monotonic) + settings.catchUpSlack
                nextSampleAt = now.monotonic + settings.sampleInterval
                return
            }
        }
        if catchUpUntil != nil, let latest = catchUpLatest {
            // Catching up, read (a player with a dead band): on until the readings are even.
            let late = anchor.position(at: at) - position
            let toMakeUp = askedSpeed >= groupRate ? late : -late  // slowing down, it is what is ahead
            lastSample = nil
            guard toMakeUp > settings.catchUpEvenWithin else {
                catchUpUntil = nil  // and its latest with it
                applyRate(wantedRate, now: now, &out)
                return
            }
            let left = Duration.seconds(saturating: toMakeUp / (max(groupRate, 0.01) * catchUpRate))
            catchUpUntil = min(now.monotonic + left, latest)
            return
        }
        let position = capabilities.readsInSteps ? fresh(position, at: at) : position
        if skipsOnly {
            steerBySkips(position, at: at, anchor: anchor, now: now, &out)
            return
        }
        if capabilities.checksRate {
            checkRateFollows(position, at: at, now: now, &out)
            guard !skipsOnly else { return }  // the rate was found not to steer: skips from now on
        }
        let rate = dither != nil ? wantedRate : askedSpeed
        out.reports.append(.sample(position: position, rate: rate, at: at))
    }

    /// Where a player that reads in steps is: the highest of its recent readings, each carried
    /// forward at the rate asked (a reading far below them begins the readings again).
    private mutating func fresh(_ position: Double, at: WallInstant) -> Double {
        let rate = dither != nil ? wantedRate : askedSpeed
        steppedReadings.removeAll { at - $0.at > settings.steppedReadingsSpan || $0.at > at }
        let best = steppedReadings.map { $0.position + (at - $0.at).seconds * rate }.max() ?? position
        let fallenBehind = best - position > settings.readingStepMax
        // Fallen behind, the readings begin again; so they do when full (readings that all
        // carry one instant never leave the span).
        if fallenBehind || steppedReadings.count >= settings.steppedReadingsMax { steppedReadings.removeAll() }
        steppedReadings.append((position, at))
        return fallenBehind ? position : max(best, position)
    }

    /// Whether a reading of a start on a player steered by skips is one to judge it by: it has
    /// run at the rate since the reading before (or is the last one waited for).
    private mutating func startSettled(_ position: Double, at: WallInstant) -> Bool {
        let last = startReading
        let count = (last?.count ?? 0) + 1
        startReading = (position, at, count)
        if count >= settings.startReadingsMax { return true }
        guard let last, at > last.at else { return false }
        let within = capabilities.readsInSteps ? settings.readingStepMax : settings.startSettledWithin
        let ran = (position - last.position) - max(groupRate, 0) * (at - last.at).seconds
        return abs(ran) <= within
    }

    /// Skip-only steering: a seek ahead of the error once it passes `skipBeyond` (or has stayed
    /// past `skipSettledFrom` for `skipSettled`), and then none for `skipQuiet`.
    private mutating func steerBySkips(
        _ position: Double, at: WallInstant, anchor: Anchor, now: Timestamp, _ out: inout Output
    ) {
        let error = position - anchor.position(at: at)
        // An error past `skipSettledFrom` that every reading for `skipSettled` has kept, on one side,
        // is the player's own (a start that settled late, as Chromium's does after its first
        // reading), not the readings' noise: it is skipped as one past `skipBeyond` is.
        if abs(error) < settings.skipSettledFrom || offSince.map({ $0.ahead != (error > 0) }) == true {
            offSince = nil
        }
        if abs(error) >= settings.skipSettledFrom, offSince == nil { offSince = (at, error > 0) }
        let settled = offSince.map { at - $0.at >= settings.skipSettled } ?? false
        guard abs(error) >= settings.skipBeyond.seconds || settled else { return }
        if let last = lastSkipAt, now.monotonic - last < settings.skipQuiet { return }
        lastSkipAt = now.monotonic
        skips += 1
        (reskipped, offSince) = (false, nil)
        // It plays on through the seek: it lands where the timeline will be once it plays again,
        // and the first reading after teaches how late that was (a restart's bias).
        seek(to: anchor.position(at: now.wall + restartLead(rate: anchor.rate)), now: now, &out)
        (measureStartBias, unpauseHold) = (true, .restart)
    }

    /// Whether the media follows the rates asked: over a window, the media's own slope must move
    /// from the group's rate toward the rates asked (on average: they change with every nudge;
    /// WebKit's GStreamer pipeline played a rate changed every 100 ms at 1), by half as far or by
    /// `rateCheckMovedMin`, whichever is less (Chromium, catching up at 5%, moves less than half
    /// as far: each change of its rate sets its clock back a few milliseconds).
    private mutating func checkRateFollows(_ position: Double, at: WallInstant, now: Timestamp, _ out: inout Output) {
        let asked = dither != nil ? wantedRate : askedSpeed
        // A window is readings in a row: a gap (a hold, a stall, the platform's pause, a seek)
        // begins a new one, or the time the media stood still would count as a rate not followed.
        guard var check = rateCheck, at - check.last <= settings.rateCheckWindow else {
            rateCheck = (position, at, at, asked, 0)
            return
        }
        check.away += (check.asked - groupRate) * (at - check.last).seconds
        (check.last, check.asked) = (at, asked)
        rateCheck = check
        let elapsed = (at - check.at).seconds
        guard elapsed >= settings.rateCheckWindow.seconds else { return }
        let away = check.away / elapsed
        if abs(away) >= settings.rateCheckAskedMin {
            let moved = ((position - check.position) / elapsed - groupRate) * (away < 0 ? -1 : 1)
            rateMisses = moved < min(abs(away) / 2, settings.rateCheckMovedMin) ? rateMisses + 1 : 0
            if rateMisses >= settings.rateCheckMisses {
                skipsOnly = true
                dither = nil
                setRate(groupRate, &out)
            }
        }
        rateCheck = (position, at, at, asked, 0)
    }

    // MARK: Asking the player

    private mutating func setPause(_ paused: Bool, _ out: inout Output) {
        guard paused != askedPause || !askedAnything else { return }
        (askedPause, askedAnything) = (paused, true)
        steppedReadings.removeAll()
        if paused { retryPlayAt = nil }
        out.actions.append(paused ? .pause : .play)
    }

    private mutating func setRate(_ rate: Double, _ out: inout Output) {
        guard abs(rate - askedSpeed) > 1e-9 else { return }
        (askedSpeed, ownSpeed) = (rate, rate)
        out.actions.append(.setRate(rate))
    }

    /// The rate the core wants, as this player can make it: the group's alone where it steers by
    /// skips or cannot be seen; alternated either side of a dead band inside it.
    private mutating func applyRate(_ rate: Double, now: Timestamp, _ out: inout Output) {
        dither = nil
        if skipsOnly || hidden {
            setRate(groupRate, &out)
            return
        }
        // Exactly 1 is alternated too, from the start (before the unpause): Chromium's clock is
        // set back 25 ms each time its rate leaves 1 (PLAYERS.md). A start at 1 paid that at its
        // first nudge, and a catch-up that ended at 1 at the next, which the nudges then chased
        // for a second: a party's phone was in sync 1.6-1.9 s after Join, now 0.5-1.0 s.
        let edge = 2 * capabilities.rateDeadBand
        guard edge > 0, abs(rate - 1) < edge else {
            setRate(rate, &out)
            return
        }
        ditherStep(above: true, high: (rate - (1 - edge)) / (2 * edge), now: now, &out)
    }

    private mutating func ditherStep(above: Bool, high: Double, now: Timestamp, _ out: inout Output) {
        let edge = 2 * capabilities.rateDeadBand
        let share = above ? high : 1 - high
        setRate(above ? 1 + edge : 1 - edge, &out)
        dither = (high, above, now.monotonic + .seconds(saturating: share * settings.rateDitherPeriod.seconds))
    }

    private mutating func seek(to position: Double, now: Timestamp, _ out: inout Output) {
        seekedInItem = loaded
        steppedReadings.removeAll()
        offSince = nil  // the readings before a seek are of another landing
        (hold, lastSample, ended) = (.restart, nil, false)
        (seeking, seekSentAt, seekTarget) = (true, now.monotonic, max(0, position))
        seekDeadline = capabilities.reloadsStuckSeeks ? now.monotonic + settings.seekPatience : nil
        out.actions.append(.seek(max(0, position)))
    }

    /// A seek the adapter held back (mpv in a live stream waits until its cache holds the
    /// target) goes now: where to, if the wait made its start late (then to where the timeline
    /// will be once this seek is done, and the start moves there), else `position` as asked.
    public mutating func seekGoesNow(_ position: Double, now: Timestamp) -> Double {
        seekSentAt = now.monotonic
        let lead = restartLead(rate: anchor?.rate ?? 1)
        guard let anchor, let due = unpauseAt, due < now.wall + lead else { return position }
        let start = now.wall + lead
        unpauseAt = start
        return anchor.position(at: start)
    }

    /// How it steers (for a display): by skips, how many it made, and the seek cost learnt.
    public var steersBySkips: Bool { skipsOnly }
    public var skipCount: Int { skips }
    public var learnedSeekCost: Double { seekCost }
}

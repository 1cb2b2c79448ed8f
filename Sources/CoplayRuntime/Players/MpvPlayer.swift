import CoplayCore
import Glibc

/// mpv, driven over its JSON IPC (`--input-ipc-server`): one JSON object per line each way,
/// commands carrying a `request_id` that the reply repeats, and events (`seek`,
/// `playback-restart`, `file-loaded`, `end-file`, and `property-change` for the properties it
/// observes).
///
/// - A load or prepare is ready once mpv has loaded the file and finished the seek to the
///   position (`playback-restart`), not when the command was sent.
/// - A start at instant T unpauses mpv at T, shifted by how far its audio clock jumps at an
///   unpause (measured after each start, apart for a frame reached by a load or seek and one
///   where a pause stopped it), from a frame it already holds; otherwise it seeks to where the
///   timeline will be once the seek is done (the seek latency is measured too) and plays from
///   there.
/// - A group pause pauses at once; the seek to the position the group paused at follows mpv's
///   word that it paused, so that the word (what the others wait for) is not held behind it.
/// - While playing it asks for `audio-pts` (µs-smooth; `time-pos` steps by frames) every
///   `Settings.playerSampleInterval` and reports each answer as a sample, stamped at the middle
///   of the request's round trip: the core steers by them with rate nudges (`speed`, with
///   `scaletempo2` keeping the pitch).
/// - A change of `pause`, `speed` or a `seek` that coplay did not ask for is the person in front
///   of mpv: it is reported as a user action (a group command), so commands applied to mpv never
///   echo back. A speed change within `Settings.playerSpeedDisturbanceMax` of the group's rate is
///   treated as a disturbance (the correction takes it back), not as a choice.
/// - `paused-for-cache` is a stall; `eof-reached` the end; a failed load is reported as a failure.
/// - An interstitial plays in a second mpv, started for it (on top, with the same `--mpv-option`s
///   and `--length` of its duration, tied to the agent: `ChildProcess.spawnTied`) and ended with
///   SIGTERM; one that exits with an error before its end is reported (`interstitialFailed`).
struct MpvPlayer: PlayerDriver {
    let kind = "mpv"
    private let socket: LineSocket
    /// The mpv process, when the agent started it (then it quits it when exiting).
    private let process: ChildProcess?
    /// The IPC socket of the mpv this agent started, which mpv leaves behind: removed at close.
    private let ownedSocketPath: String?
    private let settings: Settings
    /// The `--mpv-option`s, for the second mpv.
    private let options: [String]
    /// The second mpv, while it shows an interstitial; and those asked to end, until reaped.
    private var interstitialProcess: ChildProcess?
    private var endingProcesses: [ChildProcess] = []
    private var processCheckAt: MonotonicInstant?

    /// The timeline it plays: at wall instant `at` the media is at `position`, moving at `rate`.
    private struct Anchor: Hashable {
        var rate: Double
        var position: Double
        var at: WallInstant
        func position(at instant: WallInstant) -> Double {
            position + rate * Double(instant.unixNanos &- at.unixNanos) / 1e9
        }
    }

    private enum Request {
        case sample(sentAt: Timestamp, generation: Int)
        case seek
        /// `demuxer-cache-state`, asked before a seek in a live stream.
        case cacheRanges
        case userSeekPosition
        case other
    }

    private var nextRequestID: Int64 = 1
    private var requests: [Int64: Request] = [:]
    private var requestOrder: [Int64] = []

    private var item: LoadedItem?
    private var fileLoaded = false
    /// This load's length was reported (`PlayerReport.duration`: mpv says it as the file loads;
    /// a later change is a live stream's, which the core ignores anyway).
    private var durationReported = false
    /// A load or prepare waiting to be ready at this position.
    private var preparing: Double?
    /// The seek to make once the file is loaded (mpv refuses a seek before).
    private var seekOnLoad: Double?
    /// The position it holds while paused, when known.
    private var held: Double?
    /// The seek to the group's pause position, sent once mpv says it paused: sent with the
    /// pause, it held mpv's word of the pause back, and that word is what the others wait on
    /// (PLAYERS.md).
    private var snapOnPause: Double?
    /// Seeks sent whose `seek` event has not come yet (any other `seek` event is the user's).
    private var ownSeeks = 0
    /// The last restart followed a seek in the loaded item (not the load itself).
    private var seekedInItem = false
    /// The segment a live load starts at (`loadLive`), counted from the playlist's end.
    private var liveStartSegment: Int?
    /// A seek in a live stream waiting for mpv's cache to hold its target (counted in
    /// `ownSeeks` already).
    private var liveSeek: LiveSeek?
    private var seekSentAt: MonotonicInstant?
    /// How long a seek takes, from the command to `playback-restart` (moving average, seconds).
    private var seekLatency = 0.03
    /// What coplay last set; a property change to anything else is the user's doing.
    private var expectedPause = true
    private var expectedSpeed = 1.0
    /// The group's rate of the timeline played (the speed without the nudge).
    private var groupRate = 1.0
    /// The speed the core last asked for (the group's rate with its nudge): what a catch-up
    /// returns to.
    private var wantedSpeed = 1.0
    /// A start found behind plays at the catch-up rate until then (`receive`), steered by no sample.
    private var catchUpUntil: MonotonicInstant?
    private var eofReached = false
    private var stalled = false
    private var userSeekPending = false
    private var anchor: Anchor?
    /// When to unpause for a start at an instant (local wall clock).
    private var unpauseAt: WallInstant?
    /// How mpv came to hold the frame a start unpauses from. Its audio clock (`audio-pts`) jumps
    /// differently at the unpause: after a load or a seek (`playback-restart`) it is off the
    /// position asked for by the audio codec's priming (AAC's encoder delay, with mpv 0.35) and
    /// by how long the audio output waits for the first video frame, where after a pause it goes
    /// on from where it stopped. One average over both kinds was wrong for each.
    private enum Hold { case restart, pause }
    private var hold = Hold.restart
    /// How far ahead of its timeline mpv's clock is just after an unpause, for each kind of hold
    /// (moving averages, seconds): a start is delayed by it.
    private var startBias = (restart: 0.0, pause: 0.0)
    /// The kind of hold of the pending (or last) unpause, whose bias the first sample measures.
    private var unpauseHold = Hold.restart
    private var measureStartBias = false
    /// Bumped whenever the timeline changes: a sample asked for before is stale.
    private var generation = 0
    private var nextSampleAt: MonotonicInstant?
    private var sampleInFlight = false
    /// The clock sampled: the audio's, or the frames' for an item found to have no audio
    /// (`audioUnavailableMax` answers in a row said so; a load asks the audio's again).
    private var positionProperty = "audio-pts"
    private var audioUnavailable = 0
    private var lastSample: (position: Double, at: WallInstant)?

    /// Properties observed, by observation id.
    private static let observed = ["pause", "speed", "paused-for-cache", "eof-reached", "duration"]
    /// mpv's `video-timing-offset` under coplay, in seconds (mpv's own is 0.05): how long before
    /// a frame's time its video output renders it, and then blocks until that time.
    static let videoTimingOffset = 0.01
    /// How long after an unpause mpv's audio clock is first read: it jumps in its first tens of
    /// milliseconds (the audio output starting, the codec's priming skipped), and read inside
    /// them, as at 30 ms, the start bias learnt from it differed from one player to the next.
    static let firstSampleDelay: Duration = .milliseconds(60)

    init(
        socket: LineSocket, process: ChildProcess?, settings: Settings, options: [String] = [],
        ownedSocketPath: String? = nil
    ) {
        self.socket = socket
        self.process = process
        self.ownedSocketPath = ownedSocketPath
        self.settings = settings
        self.options = options
        for (index, name) in Self.observed.enumerated() {
            send(["observe_property", .int(Int64(index + 1)), .string(name)], as: .other)
        }
        // Pitch-keeping time stretch, inserted before anything plays so that a later speed change
        // is seamless (mpv would otherwise insert it at the first change, with a glitch).
        send(["af", "add", "@coplay:scaletempo2"], as: .other)
        // coplay moves from one file to the next itself (a `loadfile` when the group advances), so
        // mpv's gapless audio buys nothing and costs a transition: with it, a file loaded after the
        // previous one ended waited some 40 ms for the old audio output (4–9 ms without).
        send(["set_property", "gapless-audio", "no"], as: .other)
        // mpv's video output renders each frame `video-timing-offset` (50 ms) before its time and
        // then blocks until that time; a `loadfile` or a seek waits for it. A `next` while playing
        // (or right after a pause) paid for it before mpv even opened the file: the first lines
        // of `coplay-bench queue` time a `loadfile` right after a pause, p50 22 ms at 50 ms and
        // 6 ms at 10 ms. 10 ms is still ample for a frame's rendering; a value given with
        // --mpv-option wins.
        if !options.contains(where: { $0.hasPrefix("video-timing-offset=") }) {
            send(["set_property", "video-timing-offset", .double(Self.videoTimingOffset)], as: .other)
        }
        // At the end mpv holds the last frame (keep-open) without pausing itself: coplay pauses it
        // (`eof-reached`). A pause of mpv's own there would look like the person's, a group pause,
        // and it came before `eof-reached` once gapless audio was off.
        send(["set_property", "keep-open-pause", "no"], as: .other)
        // The playlist keys move the group through its queue: mpv's own playlist holds one file
        // (coplay loads each entry with `replace`), so they are bound, over mpv's defaults, to
        // messages coplay reads (`client-message`).
        send(
            [
                "define-section", "coplay",
                ">\tscript-message coplay-next\n<\tscript-message coplay-previous\nNEXT\tscript-message coplay-next\nPREV\tscript-message coplay-previous\n",
                "force",
            ], as: .other)
        send(["enable-section", "coplay"], as: .other)
        setPause(true)
    }

    // MARK: Commands

    mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        switch command {
        case .load(let item, let position):
            seekedInItem = false
            (positionProperty, audioUnavailable) = ("audio-pts", 0)
            if liveSeek != nil {
                liveSeek = nil
                ownSeeks = max(0, ownSeeks - 1)
            }
            self.item = item
            fileLoaded = false
            durationReported = false
            // A stall is the file's: one mpv never said was over (the group moved on first) must
            // not hold back the next item's readiness.
            stalled = false
            hold = .restart
            snapOnPause = nil
            eofReached = false
            stopTimeline()
            setPause(true)
            preparing = position
            seekOnLoad = position > 0.0005 ? position : nil
            held = nil
            // A live item's position is the stream's own media time (the transport stream's PTS,
            // the same for every player of the stream), which `LivePlayer` maps to program dates:
            // mpv must neither move it to 0 nor refuse to seek in the live window it has cached.
            // It starts at the segment `liveStartSegment` names (from the end of the playlist, as
            // ffmpeg's live_start_index counts), so that its cache holds where it is sent.
            let start = liveStartSegment.map { ",demuxer-lavf-o-append=live_start_index=\($0)" } ?? ""
            let options = item.live ? ["rebase-start-time=no,force-seekable=yes" + start] : []
            send(["loadfile", .string(item.url), "replace"] + options.map { .string($0) }, as: .other)
        case .prepare(let position):
            guard item != nil else { return [] }
            stopTimeline()
            setPause(true)
            // Already held there (the group paused here): ready at once. A seek to where it is
            // would cost the coordinated start tens of milliseconds for nothing.
            if fileLoaded, ownSeeks == 0, seekOnLoad == nil, snapOnPause == nil, !stalled, let held,
                abs(held - position) < 0.002
            {
                preparing = nil
                return [.ready(position: position)]
            }
            snapOnPause = nil
            preparing = position
            held = nil
            // Also where a load is going already (a transition loads the next item and at once
            // asks to prepare at its start): the seek, sent as the file is loaded, ends with the
            // load's own restart, and mpv's audio then starts at the unpause. Without it, after a
            // load at an item's end mpv began its audio output while paused, its clock read some
            // 20 ms ahead after the unpause, and three players began an item 5 ms apart (p50,
            // `coplay-bench queue`), against 1 ms with it; the transition was no quicker.
            if fileLoaded { seek(to: position, now: now) } else { seekOnLoad = position }
        case .play(let rate, let position, let at):
            guard item != nil else { return [] }
            play(Anchor(rate: rate, position: position, at: at), now: now)
        case .adjustRate(let rate, _):
            guard !expectedPause, anchor != nil else { return [] }
            wantedSpeed = rate
            if catchUpUntil == nil { setSpeed(rate) }
        case .pause(let position):
            guard item != nil else { return [] }
            let current = estimate(at: now.wall)
            let wasPlaying = !expectedPause
            if wasPlaying { hold = .pause }
            stopTimeline()
            setPause(true)
            snapOnPause = nil
            if fileLoaded, abs(current - position) > 0.002 {
                if wasPlaying { snapOnPause = position } else { seek(to: position, now: now) }
            }
            held = position
        case .unload:
            stopTimeline()
            snapOnPause = nil
            item = nil
            fileLoaded = false
            stalled = false
            preparing = nil
            held = nil
            send(["stop"], as: .other)
        case .simulateStall:
            break  // mpv stalls for real, or not at all
        case .interstitial(let interstitial):
            stopInterstitial()
            endingProcesses.removeAll { $0.exitStatus() != nil }
            guard endingProcesses.count <= settings.interstitialPlayersEndingMax else {
                processCheckAt = processCheckAt ?? now.monotonic + Self.processCheckInterval
                return [
                    .interstitialFailed(
                        "\(endingProcesses.count) interstitial players are still ending: \(interstitial.url) is not shown"
                    )
                ]
            }
            let arguments =
                [
                    "mpv", "--no-terminal", "--keep-open=yes", "--ontop", "--title=coplay: interstitial",
                    "--length=\(interstitial.durationSeconds)",
                    "--input-ipc-client=fd://\(ChildProcess.connectionDescriptor)",
                ] + options.map { "--\($0)" } + ["--", interstitial.url]
            do {
                interstitialProcess = try ChildProcess.spawnTied(arguments)
                processCheckAt = now.monotonic + Self.processCheckInterval
            } catch {
                return [
                    .interstitialFailed("mpv could not show the interstitial \(interstitial.url): \(error)")
                ]
            }
        case .endInterstitial:
            stopInterstitial()
        }
        return []
    }

    /// How often the second mpv is looked at (has it failed? have the ended ones exited?).
    private static let processCheckInterval: Duration = .milliseconds(100)

    private mutating func stopInterstitial() {
        guard let process = interstitialProcess else { return }
        interstitialProcess = nil
        process.terminate()
        endingProcesses.append(process)
    }

    /// Reaps the second mpvs that ended; reports one that failed while it should be showing.
    private mutating func checkProcesses(now: Timestamp) -> [PlayerReport] {
        guard let due = processCheckAt, now.monotonic >= due else { return [] }
        endingProcesses.removeAll { $0.exitStatus() != nil }
        var reports: [PlayerReport] = []
        if let process = interstitialProcess, let status = process.exitStatus() {
            interstitialProcess = nil
            if status != 0 {
                reports.append(.interstitialFailed("the interstitial's mpv exited with status \(status)"))
            }
        }
        processCheckAt =
            interstitialProcess != nil || !endingProcesses.isEmpty
            ? now.monotonic + Self.processCheckInterval : nil
        return reports
    }

    private mutating func play(_ new: Anchor, now: Timestamp) {
        groupRate = new.rate
        wantedSpeed = new.rate
        catchUpUntil = nil
        setSpeed(new.rate)
        if !expectedPause, anchor != nil || lastSample != nil,
            abs(estimate(at: now.wall) - new.position(at: now.wall)) < settings.playerPlayWithoutSeekWithin.seconds,
            new.at <= now.wall
        {
            // Already playing about there (a re-anchor, a rate change, the user's own unpause):
            // no seek, no jump; the rate nudges close the rest.
            anchor = new
            return
        }
        stopTimeline()
        anchor = new
        let leadNanos = Int64(seekLatency * 1e9)
        // A snap not yet made: mpv is not where it is thought to hold.
        let snapPending = snapOnPause != nil
        snapOnPause = nil
        // The unpause comes the start bias after the instant: a start that reaches this agent
        // after its instant but before then is still on time.
        let unpauseDelay = bias(hold) / max(new.rate, 0.01)
        if expectedPause, let held, preparing == nil, !snapPending, abs(held - new.position) < 0.002,
            Double(new.at.unixNanos &- now.wall.unixNanos) / 1e9 + unpauseDelay >= 0
        {
            unpauseAt = new.at  // prepared where the start is: unpause at the instant
        } else if new.at.unixNanos > now.wall.unixNanos &+ leadNanos {
            setPause(true)
            seek(to: new.position, now: now)
            unpauseAt = new.at
        } else {
            // Late: seek to where the timeline will be once the seek is done, and play from there.
            let start = WallInstant(unixNanos: now.wall.unixNanos &+ leadNanos)
            setPause(true)
            seek(to: new.position(at: start), now: now)
            unpauseAt = start
        }
        unpauseHold = hold
    }

    private func bias(_ hold: Hold) -> Double {
        switch hold {
        case .restart: startBias.restart
        case .pause: startBias.pause
        }
    }

    /// Forgets the timeline played: stale samples are discarded, no start is pending.
    private mutating func stopTimeline() {
        anchor = nil
        unpauseAt = nil
        nextSampleAt = nil
        lastSample = nil
        measureStartBias = false
        catchUpUntil = nil
        generation += 1
    }

    /// Where mpv is at `instant`, as far as it is known without asking.
    private func estimate(at instant: WallInstant) -> Double {
        if !expectedPause, let lastSample {
            return lastSample.position + expectedSpeed * Double(instant.unixNanos &- lastSample.at.unixNanos) / 1e9
        }
        if !expectedPause, let anchor, instant >= anchor.at { return anchor.position(at: instant) }
        return held ?? preparing ?? 0
    }

    // MARK: Timer

    func nextEvent(now: Timestamp) -> MonotonicInstant? {
        var due: MonotonicInstant?
        if let unpauseAt, liveSeek == nil {
            let delay =
                Double(unpauseAt.unixNanos &- now.wall.unixNanos) / 1e9 + bias(unpauseHold) / max(groupRate, 0.01)
            due = now.monotonic + .seconds(saturating: max(0, delay))
        }
        if let nextSampleAt, !sampleInFlight { due = due.map { min($0, nextSampleAt) } ?? nextSampleAt }
        if let processCheckAt { due = due.map { min($0, processCheckAt) } ?? processCheckAt }
        if let lookAt = liveSeek?.lookAt { due = due.map { min($0, lookAt) } ?? lookAt }
        if let catchUpUntil { due = due.map { min($0, catchUpUntil) } ?? catchUpUntil }
        return due
    }

    mutating func advance(now: Timestamp) -> [PlayerReport] {
        let reports = checkProcesses(now: now)
        if let lookAt = liveSeek?.lookAt, lookAt <= now.monotonic {
            liveSeek?.lookAt = nil
            send(["get_property", "demuxer-cache-state"], as: .cacheRanges)
        }
        if let due = catchUpUntil, due <= now.monotonic {
            catchUpUntil = nil
            setSpeed(wantedSpeed)
        }
        if let unpauseAt, liveSeek == nil,
            Double(now.wall.unixNanos &- unpauseAt.unixNanos) / 1e9 >= bias(unpauseHold) / max(groupRate, 0.01) - 0.0002
        {
            self.unpauseAt = nil
            setPause(false)
            held = nil
            measureStartBias = true
            nextSampleAt = now.monotonic + Self.firstSampleDelay
        }
        if let due = nextSampleAt, due <= now.monotonic, !sampleInFlight, !expectedPause, anchor != nil {
            nextSampleAt = now.monotonic + settings.playerSampleInterval
            if ownSeeks == 0, preparing == nil, !stalled {
                sampleInFlight = true
                send(["get_property", .string(positionProperty)], as: .sample(sentAt: now, generation: generation))
            }
        }
        return reports
    }

    // MARK: What mpv says

    mutating func receive(line: [UInt8], at now: Timestamp) -> [PlayerReport] {
        guard let message = try? JSONParser.parse(line) else { return [] }
        if let event = message["event"]?.string { return handle(event: event, message, now: now) }
        guard let id = message["request_id"]?.integer, let request = forget(id) else { return [] }
        let succeeded = message["error"]?.string == "success"
        switch request {
        case .sample(let sentAt, let sampleGeneration):
            sampleInFlight = false
            if positionProperty == "audio-pts" {
                // Unavailable once, it is the audio not started yet (just after a load or a seek
                // over a slow link); unavailable again and again, the item has no audio.
                let unavailable = !succeeded && message["error"]?.string == "property unavailable"
                audioUnavailable = unavailable ? audioUnavailable + 1 : 0
                if audioUnavailable >= Self.audioUnavailableMax { positionProperty = "time-pos" }
            }
            guard succeeded, sampleGeneration == generation, let position = message["data"]?.number,
                (0...WireFormat.positionMax).contains(position), let anchor, !expectedPause
            else { return [] }
            let middle = WallInstant(
                unixNanos: sentAt.wall.unixNanos &+ (now.wall.unixNanos &- sentAt.wall.unixNanos) / 2)
            lastSample = (position, middle)
            if measureStartBias {
                measureStartBias = false
                let error = position - anchor.position(at: middle)
                if abs(error) < 0.25 {
                    let updated = min(max(bias(unpauseHold) + error / 2, -0.25), 0.25)
                    switch unpauseHold {
                    case .restart: startBias.restart = updated
                    case .pause: startBias.pause = updated
                    }
                }
                if seekedInItem, error > Self.earlyStartHeldMin, error < 0.25 {
                    // It started early: it holds still for as long and is back on the group's
                    // timeline, rather than be steered in at the catch-up rate for a second. A
                    // restart after a seek in the item (a rejoin after a stall) started 15-25 ms
                    // earlier than a restart after a load, whose bias it had learned (ao=null).
                    // (After a load the first reading is ahead by mpv's priming, and that passes.)
                    setPause(true)
                    held = position
                    unpauseAt = WallInstant(unixNanos: now.wall.unixNanos &+ Int64(error / max(groupRate, 0.01) * 1e9))
                    unpauseHold = .pause
                    lastSample = nil
                    return []
                }
                if seekedInItem, error < -Self.earlyStartHeldMin, error > -0.25 {
                    // It started late: it plays at the catch-up rate for as long as makes the time
                    // up (20 ms at 5%: 0.4 s), and no sample steers it meanwhile. The nudges'
                    // controller would close the gap exponentially, over a second or more.
                    let faster = settings.rateCatchUpMax
                    setSpeed(groupRate * (1 + faster))
                    let until = now.monotonic + .seconds(saturating: -error / (max(groupRate, 0.01) * faster))
                    catchUpUntil = until
                    nextSampleAt = until + settings.playerSampleInterval
                    lastSample = nil
                    return []
                }
            }
            return [.sample(position: position, rate: expectedSpeed, at: middle)]
        case .seek:
            guard !succeeded else { return [] }
            if ownSeeks > 0 { ownSeeks -= 1 }  // refused: no event will follow
            // mpv seeks in a network stream beyond its cache only where the server takes byte
            // ranges (Python's http.server does not): the player cannot be prepared where the
            // group is, and says why rather than waiting for a restart that never comes.
            guard let position = preparing, ownSeeks == 0, seekOnLoad == nil else { return [] }
            let url = item?.url ?? "the stream"
            return [
                .failed(
                    "mpv cannot seek to \((position * 1000).rounded() / 1000) s in \(url): it can seek only where it"
                        + " has cached unless the server takes byte ranges (Range requests)")
            ]
        case .cacheRanges:
            liveSeekCache(succeeded ? message["data"] : nil, now: now)
            return []
        case .userSeekPosition:
            guard succeeded, let position = message["data"]?.number, position.isFinite else { return [] }
            return PlayerReport.UserAction.seek(position: max(0, position)).checked.map { [.userAction($0)] } ?? []
        case .other:
            return []
        }
    }

    private mutating func handle(event: String, _ message: JSONValue, now: Timestamp) -> [PlayerReport] {
        switch event {
        case "property-change":
            return propertyChanged(message["name"]?.string ?? "", to: message["data"] ?? .null, now: now)
        case "seek":
            if ownSeeks > 0 {
                ownSeeks -= 1
            } else {
                userSeekPending = true
                stopTimeline()
            }
        case "playback-restart":
            if let sent = seekSentAt, ownSeeks == 0 {
                let latency = Double((now.monotonic - sent).nanoseconds) / 1e9
                seekLatency = min(max(0.8 * seekLatency + 0.2 * latency, 0.001), 1)
                seekSentAt = nil
            }
            var reports: [PlayerReport] = []
            if userSeekPending {
                userSeekPending = false
                send(["get_property", "time-pos"], as: .userSeekPosition)
            }
            if let position = preparing, fileLoaded, ownSeeks == 0, seekOnLoad == nil {
                preparing = nil
                held = position
                if !stalled { reports.append(.ready(position: position)) }
            }
            if !expectedPause, anchor != nil { nextSampleAt = now.monotonic + Self.firstSampleDelay }
            return reports
        case "start-file":
            // A new file: seeks sent to the last one are void. mpv answers a seek it cannot make
            // (a stream without byte ranges) with success and then nothing, neither `seek` nor
            // `playback-restart`: counted as pending, they held back every later item's ready.
            ownSeeks = 0
            seekSentAt = nil
            userSeekPending = false
        case "file-loaded":
            fileLoaded = true
            if let position = seekOnLoad {
                seekOnLoad = nil
                seek(to: position, now: now)
            }
        case "client-message":
            switch message["args"]?.array?.first?.string {
            case "coplay-next": return [.userAction(.next)]
            case "coplay-previous": return [.userAction(.previous)]
            default: return []
            }
        case "end-file":
            guard message["reason"]?.string == "error" else { return [] }
            fileLoaded = false
            preparing = nil
            return [Self.loadFailure(url: item?.url, fileError: message["file_error"]?.string ?? "unknown error")]
        default:
            break
        }
        return []
    }

    private mutating func propertyChanged(_ name: String, to value: JSONValue, now: Timestamp) -> [PlayerReport] {
        switch name {
        case "pause":
            if value.bool == true, expectedPause, let position = snapOnPause {
                snapOnPause = nil
                seek(to: position, now: now)
            }
            guard let paused = value.bool, paused != expectedPause else { return [] }
            snapOnPause = nil
            // Where it stopped, read while it still counts as moving (paused, the estimate is the
            // held position: none, after an unpause, and the group's pause would seek it there).
            let position = estimate(at: now.wall)
            expectedPause = paused
            if paused {
                guard !eofReached else { return [] }
                stopTimeline()
                held = position
                hold = .pause
                return [.userAction(.pause)]
            }
            unpauseAt = nil
            lastSample = held.map { ($0, now.wall) }
            return [.userAction(.play(rate: groupRate))]
        case "speed":
            guard let speed = value.number, speed.isFinite, abs(speed - expectedSpeed) > 1e-6 else { return [] }
            expectedSpeed = speed
            guard !expectedPause, anchor != nil,
                abs(speed / max(groupRate, 0.01) - 1) > settings.playerSpeedDisturbanceMax
            else { return [] }
            return PlayerReport.UserAction.play(rate: speed).checked.map { [.userAction($0)] } ?? []
        case "paused-for-cache":
            let nowStalled = value.bool ?? false
            guard nowStalled != stalled, item != nil else { return [] }
            stalled = nowStalled
            let position = estimate(at: now.wall)
            if nowStalled {
                stopTimeline()
                held = position
                return [.stalled(position: position)]
            }
            return [.stallEnded(position: position)]
        case "duration":
            // The file's length, once per load, for an item shared without one.
            guard let seconds = value.number, seconds.isFinite, seconds > 0, let item, item.durationSeconds == nil,
                !item.live, !durationReported
            else { return [] }
            durationReported = true
            // mpv's number is checked like any player's (the core's one check).
            return PlayerReport.duration(seconds).refusal(settings: settings) == nil ? [.duration(seconds)] : []
        case "eof-reached":
            let reached = value.bool ?? false
            defer { eofReached = reached }
            // Only the current file's end: an end of the previous file that comes after a
            // `loadfile` (the group moved on as it ended here too) is not the new one's.
            guard reached, !eofReached, item != nil, fileLoaded else { return [] }
            let position = item?.durationSeconds ?? estimate(at: now.wall)
            stopTimeline()
            // keep-open holds the last frame; mpv does not always set `pause` there (seen with
            // 0.35: one player of three did), and one left unpaused would start the next file
            // the moment it loads, before the group's start. So it is paused here, explicitly.
            expectedPause = false
            setPause(true)
            held = position
            return [.ended(position: position)]
        default:
            return []
        }
    }

    // MARK: Sending

    private mutating func setPause(_ paused: Bool) {
        guard paused != expectedPause || nextRequestID == 1 else { return }
        expectedPause = paused
        send(["set_property", "pause", .bool(paused)], as: .other)
    }

    private mutating func setSpeed(_ speed: Double) {
        guard abs(speed - expectedSpeed) > 1e-9 else { return }
        expectedSpeed = speed
        send(["set_property", "speed", .double(speed)], as: .other)
    }

    private mutating func seek(to position: Double, now: Timestamp) {
        seekedInItem = fileLoaded
        hold = .restart
        lastSample = nil
        if item?.live == true {
            // In a live stream mpv seeks exactly only inside what it has cached: a seek beyond
            // goes to ffmpeg's HLS demuxer, which lands a second or more off (and as the file
            // loads, nothing is cached yet). The seek waits until the cache holds its target.
            if liveSeek == nil { ownSeeks += 1 }
            liveSeek = LiveSeek(position: position, giveUpAt: now.monotonic + Self.liveSeekWaitMax)
            send(["get_property", "demuxer-cache-state"], as: .cacheRanges)
            return
        }
        ownSeeks += 1
        seekSentAt = now.monotonic
        send(["seek", .double(max(0, position)), "absolute+exact"], as: .seek)
    }

    /// Loads the live `item` from the segment `fromEnd` segments before the playlist's end
    /// (negative, as ffmpeg's live_start_index): mpv caches the stream from there on, so that a
    /// seek to a date in it is exact.
    mutating func loadLive(_ item: LoadedItem, fromEnd: Int, now: Timestamp) -> [PlayerReport] {
        liveStartSegment = fromEnd
        defer { liveStartSegment = nil }
        return perform(.load(item, position: 0), now: now)
    }

    /// Answers in a row that an item's `audio-pts` is unavailable before its frames' clock is
    /// sampled instead (samples are 100 ms apart).
    static let audioUnavailableMax = 3

    /// A start found this far ahead by its first sample holds still for as long (`receive`): a
    /// smaller error is the rate nudges' to close (5 ms: where they turn to catching up).
    static let earlyStartHeldMin = 0.005

    /// A seek in a live stream waiting for mpv's cache to hold its target.
    private struct LiveSeek {
        var position: Double
        /// The next time to look at the cache; the time after which the seek goes anyway.
        var lookAt: MonotonicInstant?
        var giveUpAt: MonotonicInstant
        /// The end of the cached range that stops short of the target, and since when it has
        /// not grown (`liveSeekCache`).
        var shortEnd: (position: Double, since: MonotonicInstant)?
        /// The end mpv was last moved inside: it is moved once per end, not at every look.
        var steppedTo: Double?
    }

    /// The longest a live seek waits for mpv's cache before it goes anyway.
    static let liveSeekWaitMax: Duration = .seconds(3)
    static let liveSeekLookInterval: Duration = .milliseconds(20)
    /// A cached range short of a live seek's target that has not grown for this long has
    /// stopped: mpv's read-ahead reached its bound (`liveSeekCache`).
    static let liveSeekStepAfter: Duration = .milliseconds(100)
    /// How far inside that range's end mpv is moved, so that the seek lands in what is cached.
    static let liveSeekStepInside = 0.1

    /// mpv's cache, for the live seek waiting: the seek goes once a seekable range holds it.
    private mutating func liveSeekCache(_ state: JSONValue?, now: Timestamp) {
        guard let waiting = liveSeek else { return }
        let ranges: [(start: Double, end: Double)] = (state?["seekable-ranges"]?.array ?? []).compactMap { range in
            guard let start = range["start"]?.number, let end = range["end"]?.number, start <= end else { return nil }
            return (start, end)
        }
        let covered = ranges.contains { $0.start <= waiting.position && waiting.position <= $0.end }
        guard covered || now.monotonic >= waiting.giveUpAt else {
            liveSeek?.lookAt = now.monotonic + Self.liveSeekLookInterval
            // mpv reads ahead only so far from where it stands (`cache-secs`): held at the load's
            // start, its cache can stop short of a target beyond that and never reach it (a
            // rejoin after a stall waited the full 3 s, then went to the HLS demuxer and landed
            // seconds off, with `cache-secs=2`). Once the range short of the target has stopped
            // growing, mpv moves to its end, inside the cache (exact), and reads on from there.
            let short = ranges.filter { $0.start <= waiting.position }.max { $0.end < $1.end }
            guard let short else { return }
            guard let seen = waiting.shortEnd, seen.position == short.end else {
                liveSeek?.shortEnd = (short.end, now.monotonic)
                return
            }
            guard now.monotonic - seen.since >= Self.liveSeekStepAfter, short.end > waiting.steppedTo ?? -.infinity
            else { return }
            liveSeek?.steppedTo = short.end
            ownSeeks += 1
            send(
                ["seek", .double(max(short.start, short.end - Self.liveSeekStepInside)), "absolute+exact"],
                as: .seek)
            return
        }
        liveSeek = nil
        seekSentAt = now.monotonic
        var position = waiting.position
        if let anchor, let due = unpauseAt, due.unixNanos < now.wall.unixNanos &+ Int64(seekLatency * 1e9) {
            // The start it was sent for is (nearly) past: the wait for the cache made it late
            // (some 200 ms on the Wi-Fi model). Seek to where the timeline will be once this seek
            // is done, and play from there, as a late start does.
            let start = WallInstant(unixNanos: now.wall.unixNanos &+ Int64(seekLatency * 1e9))
            position = anchor.position(at: start)
            unpauseAt = start
        }
        send(["seek", .double(max(0, position)), "absolute+exact"], as: .seek)
    }

    private mutating func send(_ command: [JSONValue], as request: Request) {
        let id = nextRequestID
        nextRequestID += 1
        requests[id] = request
        requestOrder.append(id)
        if requestOrder.count > settings.playerRequestsMax {
            // An answer that never came: forget the oldest request.
            if case .sample = requests.removeValue(forKey: requestOrder.removeFirst()) { sampleInFlight = false }
        }
        socket.send(JSONValue.object([("command", .array(command)), ("request_id", .int(id))]).serialized)
    }

    private mutating func forget(_ id: Int64) -> Request? {
        guard let request = requests.removeValue(forKey: id) else { return nil }
        if let index = requestOrder.firstIndex(of: id) { requestOrder.remove(at: index) }
        return request
    }

    // MARK: Ending

    /// mpv closed its connection: the person closed its window (or it quit with the agent). Not
    /// an error: the agent leaves and exits, and says why (`AgentShell`).
    func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) { ([], true) }

    mutating func close() {
        stopInterstitial()
        for ending in endingProcesses { ending.waitForExit(patience: .seconds(1)) }
        if let process {
            socket.send(JSONValue.object([("command", .array(["quit"]))]).serialized)
            process.waitForExit(patience: .seconds(2))
        }
        socket.close()
        if let ownedSocketPath { unlink(ownedSocketPath) }
    }
}

extension MpvPlayer {
    /// Starts mpv (or attaches to the user's) and connects to its IPC. The caller starts reading
    /// the socket's lines and hands them to `receive(line:at:)`.
    ///
    /// An mpv the agent starts is reached through one end of a socket pair, whose other end mpv
    /// gets as `--input-ipc-client`: mpv quits when that connection closes, so it ends with the
    /// agent however the agent ends (a crash, `kill -9`), and there is no socket file to leave
    /// behind. With `--mpv-socket PATH` it also listens on PATH, for other tools.
    static func connect(_ options: MpvOptions, settings: Settings) throws(SocketError) -> (MpvPlayer, LineSocket) {
        if options.attach {
            guard let path = options.socketPath else { throw SocketError("--mpv-attach needs --mpv-socket PATH") }
            let socket = try LineSocket.connect(path: path, patience: .zero)
            return (
                MpvPlayer(socket: socket, process: nil, settings: settings, options: options.options),
                socket
            )
        }
        let pair = try ChildProcess.connectionPair()
        let arguments =
            [
                "mpv", "--idle=yes", "--keep-open=yes", "--pause", "--no-terminal",
                "--input-ipc-client=fd://\(ChildProcess.connectionDescriptor)",
            ]
            + (options.socketPath.map { ["--input-ipc-server=\($0)"] } ?? [])
            + options.options.map { "--\($0)" }
        let process: ChildProcess
        do {
            defer { Glibc.close(pair.child) }
            process = try ChildProcess.spawn(arguments, connection: pair.child)
        } catch {
            Glibc.close(pair.agent)
            throw error
        }
        let socket = LineSocket(descriptor: pair.agent)
        do {
            try awaitAnswer(on: socket, from: process, patience: .seconds(10))
        } catch {
            process.waitForExit(patience: .zero)
            socket.close()
            if let path = options.socketPath { unlink(path) }
            throw error
        }
        return (
            MpvPlayer(
                socket: socket, process: process, settings: settings, options: options.options,
                ownedSocketPath: options.socketPath),
            socket
        )
    }

    /// Asks the mpv just started a question and waits until it answers, so that an mpv that
    /// exits at start (an option it refused) is an error that says so. The answer is left
    /// unread: its `request_id` 0 is none of the player's, which start at 1.
    private static func awaitAnswer(
        on socket: LineSocket, from process: ChildProcess, patience: Duration
    ) throws(SocketError) {
        socket.send(#"{"command":["get_property","mpv-version"],"request_id":0}"#)
        let deadline = AgentClock.read(CLOCK_MONOTONIC) + patience.nanoseconds
        while true {
            switch socket.waitReadable(milliseconds: 20) {
            case .data: return
            case .closed:
                // mpv closed its end: it is exiting. Its status, when it comes within a second.
                for _ in 0..<50 {
                    if let status = process.exitStatus() { throw exitedAtStart(status) }
                    usleep(20_000)
                }
                throw exitedAtStart(nil)
            case .nothing:
                if let status = process.exitStatus() { throw exitedAtStart(status) }
                guard AgentClock.read(CLOCK_MONOTONIC) < deadline else {
                    throw SocketError("mpv did not answer within \(patience)", code: 0)
                }
            }
        }
    }

    private static func exitedAtStart(_ status: Int32?) -> SocketError {
        SocketError(
            "mpv exited\(status.map { " with status \($0)" } ?? "") at start: check the --mpv-option values "
                + "(mpv --NAME=VALUE alone prints mpv's own complaint)",
            code: 0)
    }

    /// What mpv's failure to load `url` was, in words and as a kind: mpv says "loading failed"
    /// for a missing file and an unreachable server alike, so a path is looked at here.
    static func loadFailure(url: String?, fileError: String) -> PlayerReport {
        let shown = url ?? "the item"
        let path = url.map { $0.hasPrefix("file://") ? String($0.dropFirst(7)) : $0 }
        if let path, path.hasPrefix("/") || !path.contains("://") {
            var status = stat()
            if stat(path, &status) != 0 {
                return .loadFailed(
                    "mpv could not play \(shown): no such file (\(String(cString: strerror(errno))))",
                    problem: .notFound)
            }
        }
        let problem: PlaybackProblem = fileError.contains("unrecognized file format") ? .format : .other
        return .loadFailed("mpv could not play \(shown): \(fileError)", problem: problem)
    }
}

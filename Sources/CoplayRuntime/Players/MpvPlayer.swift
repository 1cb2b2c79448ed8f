import CoplayCore
import Glibc

/// mpv, driven over its JSON IPC: one JSON object per line each way, commands carrying a
/// `request_id` that the reply repeats, and events (`seek`, `playback-restart`, `file-loaded`,
/// `end-file`, and `property-change` for the properties it observes).
///
/// An adapter only: how mpv follows the group's timeline (when a start unpauses, what a seek
/// costs, a start's bias, the pause snap, catching up, sampling) is the core's `PlayerFollower`.
/// This turns its actions into IPC commands and what mpv says into its observations:
///
/// - `playback-restart` once no seek of coplay's is pending is `.restarted`; a `seek` event
///   coplay did not ask for is the person's.
/// - A position is read from `audio-pts` (µs-smooth; `time-pos` steps by frames; the frames' clock
///   for an item with no audio), stamped at the middle of the request's round trip.
/// - `pause` and `speed` changes go to the follower, which knows which ones it asked for, however
///   late mpv reports them (each ask's answer is passed on: `Echoes`): the others are the person
///   in front of mpv (group commands).
/// - `paused-for-cache` is a stall; `eof-reached` the end; a failed load is reported as a failure.
/// - In a live stream mpv seeks exactly only inside what it has cached: a seek waits until the
///   cache holds its target (`liveSeekCache`).
/// - An interstitial plays in a second mpv, started for it (on top, with the same `--mpv-option`s
///   and `--length` of its duration, tied to the agent: `ChildProcess.spawnTied`) and ended with
///   SIGTERM; one that exits with an error before its end is reported (`interstitialFailed`).
struct MpvPlayer: FollowingPlayer {
    let kind = "mpv"
    private let socket: LineSocket
    /// The mpv process, when the agent started it (then it quits it when exiting).
    private let process: ChildProcess?
    /// The IPC socket of the mpv this agent started, which mpv leaves behind: removed at close.
    private let ownedSocketPath: String?
    private let settings: Settings
    /// The `--mpv-option`s, for the second mpv.
    private let options: [String]
    var follower: PlayerFollower
    /// The second mpv, while it shows an interstitial; and those asked to end, until reaped.
    private var interstitialProcess: ChildProcess?
    private var endingProcesses: [ChildProcess] = []
    private var processCheckAt: MonotonicInstant?

    /// What a request asked, for its answer (`cacheRanges`: before a seek in a live stream).
    private enum Request {
        case sample(sentAt: Timestamp)
        case seek, cacheRanges, personSeekPosition, other
        case load
        /// A pause, an unpause or a speed the follower asked: its answer tells the follower that
        /// mpv made it (the echo, a `property-change`, may come later).
        case asked(PlayerFollower.Asked)
    }

    private var requests: PendingRequests<Request>
    /// The position request whose answer the follower waits for (an older one's is stale).
    private var sampleRequest: Int64?

    private var item: LoadedItem?
    private var fileLoaded = false
    private(set) var openFile: String?
    /// The file the last `loadfile` plays, as mpv numbers it (its answer's `playlist_entry_id`),
    /// and the one whose `start-file` came last. A `file-loaded` is the last load's only once
    /// mpv has answered that load (it answers a command before any event of what it started)
    /// and the file started is the one it named: a `file-loaded` of the file before, which
    /// came after the next `loadfile` was sent, must not let the follower seek, since mpv
    /// refuses a seek until the new file is loaded, and a refused seek reads as a server with
    /// no byte ranges (a joiner's mpv failed so once under the fast tier's load).
    private var loadAnswered: (request: Int64, entry: Int64?, answered: Bool)?
    private var startedEntry: Int64?
    /// Seeks sent whose `seek` event has not come yet (any other `seek` event is the person's).
    private var ownSeeks = 0
    private var personSeekPending = false
    private var eofReached = false
    /// The segment a live load starts at (`loadLive`), counted from the playlist's end.
    private var liveStartSegment: Int?
    /// A seek in a live stream waiting for mpv's cache to hold its target (counted in `ownSeeks`).
    private var liveSeek: LiveSeek?
    /// The clock read: the audio's, or the frames' for an item found to have no audio
    /// (`audioUnavailableMax` answers in a row said so; a load asks the audio's again).
    private var positionProperty = "audio-pts"
    private var audioUnavailable = 0

    /// Properties observed, by observation id.
    private static let observed = ["pause", "speed", "paused-for-cache", "eof-reached", "duration", "path"]
    /// Answers in a row that `audio-pts` is unavailable before the frames' clock is read instead.
    static let audioUnavailableMax = 3

    init(
        socket: LineSocket, process: ChildProcess?, settings: Settings, options: [String] = [],
        ownedSocketPath: String? = nil
    ) {
        self.socket = socket
        self.process = process
        self.ownedSocketPath = ownedSocketPath
        self.settings = settings
        self.options = options
        self.requests = PendingRequests(limit: settings.playerRequestsMax)
        self.follower = PlayerFollower(.mpv, settings: settings)
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
        // A shorter wait of the video output before each frame (`Settings.mpvVideoTimingOffset`),
        // unless --mpv-option gives one.
        if !options.contains(where: { $0.hasPrefix("video-timing-offset=") }) {
            send(["set_property", "video-timing-offset", .double(settings.mpvVideoTimingOffset.seconds)], as: .other)
        }
        // At the end mpv holds the last frame (keep-open) without pausing itself: the follower
        // pauses it. A pause of mpv's own there would look like the person's, a group pause.
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
        send(["set_property", "pause", true], as: .other)
    }

    // MARK: The follower's actions

    mutating func carryOut(_ action: PlayerFollower.Action, now: Timestamp) -> [PlayerReport] {
        switch action {
        case .load(let item):
            (positionProperty, audioUnavailable) = ("audio-pts", 0)
            if liveSeek != nil {
                liveSeek = nil
                ownSeeks = max(0, ownSeeks - 1)
            }
            (self.item, fileLoaded, eofReached) = (item, false, false)
            // A live item's position is the stream's own media time (the transport stream's PTS,
            // the same for every player of the stream), which `LivePlayer` maps to program dates:
            // mpv must neither move it to 0 nor refuse to seek in the live window it has cached.
            // It starts at the segment `liveStartSegment` names (from the end of the playlist, as
            // ffmpeg's live_start_index counts), so that its cache holds where it is sent.
            let start = liveStartSegment.map { ",demuxer-lavf-o-append=live_start_index=\($0)" } ?? ""
            let options = item.live ? ["rebase-start-time=no,force-seekable=yes" + start] : []
            let request = send(["loadfile", .string(item.url), "replace"] + options.map { .string($0) }, as: .load)
            loadAnswered = (request, nil, !requests.contains(request))  // forgotten at once: not waited for
        case .seek(let position):
            seek(to: position, now: now)
        case .reload(let position): seek(to: position, now: now)  // mpv's pipeline does not get stuck
        case .pause: send(["set_property", "pause", true], as: .asked(.pause))
        case .play: send(["set_property", "pause", false], as: .asked(.pause))
        case .setRate(let rate): send(["set_property", "speed", .double(rate)], as: .asked(.rate))
        case .readPosition: sampleRequest = send(["get_property", .string(positionProperty)], as: .sample(sentAt: now))
        case .unload:
            (item, fileLoaded) = (nil, false)
            send(["stop"], as: .other)
        case .interstitial(let interstitial): return showInterstitial(interstitial, now: now)
        case .endInterstitial: stopInterstitial()
        }
        return []
    }

    private mutating func seek(to position: Double, now: Timestamp) {
        if item?.live == true {
            // In a live stream mpv seeks exactly only inside what it has cached: a seek beyond
            // goes to ffmpeg's HLS demuxer, which lands a second or more off (and as the file
            // loads, nothing is cached yet). The seek waits until the cache holds its target.
            if liveSeek == nil { ownSeeks += 1 }
            liveSeek = LiveSeek(position: position, giveUpAt: now.monotonic + settings.live.mpvSeekWaitMax)
            send(["get_property", "demuxer-cache-state"], as: .cacheRanges)
            return
        }
        ownSeeks += 1
        send(["seek", .double(max(0, position)), "absolute+exact"], as: .seek)
    }

    // MARK: The interstitial's mpv

    private mutating func showInterstitial(_ interstitial: Interstitial, now: Timestamp) -> [PlayerReport] {
        stopInterstitial()
        endingProcesses.removeAll { $0.exitStatus() != nil }
        guard endingProcesses.count <= settings.interstitialPlayersEndingMax else {
            processCheckAt = processCheckAt ?? now.monotonic + settings.mpvProcessCheckInterval
            return [
                .interstitialFailed(
                    "\(endingProcesses.count) interstitial players are still ending: \(interstitial.url) is not shown")
            ]
        }
        let arguments =
            [
                "mpv", "--no-terminal", "--keep-open=yes", "--ontop", "--title=coplay: interstitial",
                "--length=\(interstitial.durationSeconds)",
                "--input-ipc-client=fd://\(ChildProcess.connectionDescriptor)",
            ] + options.map { "--\($0)" } + ["--", interstitial.url]
        do {
            interstitialProcess = try ChildProcess.spawnTied(arguments, output: try Self.output())
            processCheckAt = now.monotonic + settings.mpvProcessCheckInterval
        } catch {
            return [.interstitialFailed("mpv could not show the interstitial \(interstitial.url): \(error)")]
        }
        return []
    }

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
            ? now.monotonic + settings.mpvProcessCheckInterval : nil
        return reports
    }

    // MARK: Timer

    func nextEvent(now: Timestamp) -> MonotonicInstant? {
        [follower.nextWake(now: now), processCheckAt, liveSeek?.lookAt].compactMap { $0 }.min()
    }

    mutating func advance(now: Timestamp) -> [PlayerReport] {
        var reports = checkProcesses(now: now)
        if let lookAt = liveSeek?.lookAt, lookAt <= now.monotonic {
            liveSeek?.lookAt = nil
            send(["get_property", "demuxer-cache-state"], as: .cacheRanges)
        }
        reports += carry(follower.advance(now: now), now: now)
        return reports
    }

    // MARK: What mpv says

    mutating func receive(line: [UInt8], at now: Timestamp) -> [PlayerReport] {
        guard let message = try? JSONParser.parse(line) else { return [] }
        if let event = message["event"]?.string { return handle(event: event, message, now: now) }
        guard let id = message["request_id"]?.integer, let request = forget(id) else { return [] }
        let succeeded = message["error"]?.string == "success"
        switch request {
        case .sample(let sentAt):
            guard id == sampleRequest else { return [] }  // stale: a newer one is asked
            sampleRequest = nil
            if positionProperty == "audio-pts" {
                // Unavailable once, it is the audio not started yet (just after a load or a seek
                // over a slow link); unavailable again and again, the item has no audio.
                let unavailable = !succeeded && message["error"]?.string == "property unavailable"
                audioUnavailable = unavailable ? audioUnavailable + 1 : 0
                if audioUnavailable >= Self.audioUnavailableMax { positionProperty = "time-pos" }
            }
            guard succeeded, let position = message["data"]?.number, position.isFinite else {
                return observe(.positionUnavailable, now: now)
            }
            let middle = WallInstant(
                unixNanos: sentAt.wall.unixNanos &+ (now.wall.unixNanos &- sentAt.wall.unixNanos) / 2)
            return observe(.position(position, at: middle), now: now)
        case .seek:
            guard !succeeded else { return [] }
            if ownSeeks > 0 { ownSeeks -= 1 }  // refused: no event will follow
            // mpv seeks in a network stream beyond its cache only where the server takes byte
            // ranges (Python's http.server does not).
            return ownSeeks == 0 ? observe(.seekRefused, now: now) : []
        case .cacheRanges:
            liveSeekCache(succeeded ? message["data"] : nil, now: now)
            return []
        case .personSeekPosition:
            guard succeeded, let position = message["data"]?.number else { return [] }
            return observe(.personSeekLanded(position), now: now)
        case .load:
            // An mpv that names no entry (before 0.33) is taken at its next `file-loaded`.
            guard loadAnswered?.request == id else { return [] }
            loadAnswered = (id, message["data"]?["playlist_entry_id"]?.integer, true)
            return []
        case .asked(let asked):
            return observe(.answered(asked), now: now)
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
                personSeekPending = true
                return observe(.personSeekBegan, now: now)
            }
        case "playback-restart":
            if personSeekPending {
                personSeekPending = false
                send(["get_property", "time-pos"], as: .personSeekPosition)
            }
            return ownSeeks == 0 && fileLoaded ? observe(.restarted, now: now) : []
        case "start-file":
            // A new file: seeks sent to the last one are void. mpv answers a seek it cannot make
            // (a stream without byte ranges) with success and then nothing, neither `seek` nor
            // `playback-restart`: counted as pending, they held back every later item's ready.
            ownSeeks = liveSeek == nil ? 0 : 1
            personSeekPending = false
            startedEntry = message["playlist_entry_id"]?.integer
        case "file-loaded":
            // Not the last load's file: one it replaced (above).
            if let load = loadAnswered {
                guard load.answered, load.entry == nil || startedEntry == nil || load.entry == startedEntry else {
                    return []
                }
            }
            fileLoaded = true
            return observe(.loaded, now: now)
        case "client-message":
            switch message["args"]?.array?.first?.string {
            case "coplay-next": return [.userAction(.next)]
            case "coplay-previous": return [.userAction(.previous)]
            default: return []
            }
        case "end-file":
            guard message["reason"]?.string == "error" else { return [] }
            // A file the last load replaced failed: not the item's failure.
            if let load = loadAnswered,
                !load.answered
                    || (load.entry != nil && message["playlist_entry_id"]?.integer.map { $0 != load.entry } == true)
            {
                return []
            }
            fileLoaded = false
            return [Self.loadFailure(url: item?.url, fileError: message["file_error"]?.string ?? "unknown error")]
        default:
            break
        }
        return []
    }

    private mutating func propertyChanged(_ name: String, to value: JSONValue, now: Timestamp) -> [PlayerReport] {
        switch name {
        case "pause":
            guard let paused = value.bool else { return [] }
            return observe(.paused(paused), now: now)
        case "speed":
            guard let speed = value.number else { return [] }
            return observe(.rate(speed), now: now)
        case "paused-for-cache":
            return observe(.starved(value.bool ?? false), now: now)
        case "duration":
            guard let seconds = value.number else { return [] }
            return observe(.duration(seconds), now: now)
        case "path":
            // A file on this disk (a person's mpv, attached, opened it): kept after it closes. A
            // relative path is from mpv's working directory, which is not this agent's: not kept.
            if let path = value.string, path.utf8.count <= Settings.OwnCopies.pathBytesMax,
                let local = OwnCopies.localPath(path), local.hasPrefix("/")
            {
                openFile = local
            }
            return []
        case "eof-reached":
            let reached = value.bool ?? false
            defer { eofReached = reached }
            // Only the current file's end: an end of the previous file that comes after a
            // `loadfile` (the group moved on as it ended here too) is not the new one's.
            guard reached, !eofReached, item != nil, fileLoaded else { return [] }
            return observe(.ended, now: now)
        default:
            return []
        }
    }

    // MARK: Live seeks

    /// Loads the live `item` from the segment `fromEnd` segments before the playlist's end
    /// (negative, as ffmpeg's live_start_index): mpv caches the stream from there on, so that a
    /// seek to a date in it is exact.
    mutating func loadLive(_ item: LoadedItem, fromEnd: Int, now: Timestamp) -> [PlayerReport] {
        liveStartSegment = fromEnd
        defer { liveStartSegment = nil }
        return perform(.load(item, position: 0), now: now)
    }

    /// A seek in a live stream waiting for mpv's cache to hold its target: when to look at the
    /// cache next, and to give up; the end of the cached range short of the target and since when
    /// it has not grown; the end mpv was last moved inside (once per end, not at every look).
    private struct LiveSeek {
        var position: Double
        var lookAt: MonotonicInstant?
        var giveUpAt: MonotonicInstant
        var shortEnd: (position: Double, since: MonotonicInstant)?
        var steppedTo: Double?
    }

    /// mpv's cache, for the live seek waiting: the seek goes once a seekable range holds it.
    private mutating func liveSeekCache(_ state: JSONValue?, now: Timestamp) {
        guard let waiting = liveSeek else { return }
        let live = settings.live
        let ranges: [(start: Double, end: Double)] = (state?["seekable-ranges"]?.array ?? []).compactMap { range in
            guard let start = range["start"]?.number, let end = range["end"]?.number, start <= end else { return nil }
            return (start, end)
        }
        let covered = ranges.contains { $0.start <= waiting.position && waiting.position <= $0.end }
        guard covered || now.monotonic >= waiting.giveUpAt else {
            liveSeek?.lookAt = now.monotonic + live.mpvSeekLookInterval
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
            guard now.monotonic - seen.since >= live.mpvSeekStepAfter, short.end > waiting.steppedTo ?? -.infinity
            else { return }
            liveSeek?.steppedTo = short.end
            ownSeeks += 1
            let inside = max(short.start, short.end - live.mpvSeekStepInside)
            send(["seek", .double(inside), "absolute+exact"], as: .seek)
            return
        }
        liveSeek = nil
        // The wait may have made the start it was sent for late (some 200 ms on the Wi-Fi model):
        // the follower then moves the seek to where the timeline will be once it is done.
        let position = follower.seekGoesNow(waiting.position, now: now)
        send(["seek", .double(max(0, position)), "absolute+exact"], as: .seek)
    }

    /// A line on mpv's on-screen display (`OnScreen`). Its IPC takes the text as it is (a
    /// command's arguments are not expanded there, and an OSD message is no ASS markup).
    mutating func show(_ text: String) {
        send(["show-text", .string(text), .int(Int64(Settings.OnScreen.showMillis))], as: .other)
    }

    // MARK: Sending

    @discardableResult
    private mutating func send(_ command: [JSONValue], as request: Request) -> Int64 {
        let (id, forgotten) = requests.add(request)
        // A load forgotten unanswered no longer holds back its `file-loaded`: the next one is
        // taken, as from an mpv that names no entry.
        if let forgotten, let load = loadAnswered, load.request == forgotten, !load.answered {
            loadAnswered = (forgotten, nil, true)
        }
        socket.send(JSONValue.object([("command", .array(command)), ("request_id", .int(id))]).serialized)
        return id
    }

    private mutating func forget(_ id: Int64) -> Request? { requests.take(id) }

    // MARK: Ending

    /// mpv closed its connection: the person closed its window (or it quit with the agent). The
    /// agent leaves and exits, and says why (`AgentShell`).
    func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) { ([], true) }

    mutating func close() {
        stopInterstitial()
        for ending in endingProcesses { ending.waitForExit(patience: settings.mpvQuitPatience) }
        if let process {
            socket.send(JSONValue.object([("command", .array(["quit"]))]).serialized)
            process.waitForExit(patience: settings.mpvQuitPatience)
        }
        socket.close()
        if let ownedSocketPath { unlink(ownedSocketPath) }
    }
}

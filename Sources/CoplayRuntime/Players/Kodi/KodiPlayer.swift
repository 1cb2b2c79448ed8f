import CoplayCore

/// Kodi 19-21, driven over its JSON-RPC TCP interface (`KodiLink`): a Kodi on this machine, or the
/// box under the television, driven by an agent on any machine of the LAN.
///
/// An adapter only, as `MpvPlayer` and `VlcPlayer` are: how Kodi follows the group's timeline is
/// the core's `PlayerFollower`. This turns its actions into JSON-RPC requests and Kodi's answers
/// and notifications into observations:
///
/// - Kodi's clock is `Player.GetProperties`' `time`, in milliseconds, which Kodi's player updates
///   about every 200 ms (measured). A reading is therefore taken at an edge: asked for a position,
///   the adapter reads the time every `Settings.Players.kodiPollInterval` until it changes, and
///   says the new value at the middle between the two readings either side of the change. While
///   paused it says the time as it is.
/// - Kodi's speed is an integer (and this Kodi has no `Player.SetTempo`): it is steered by skips
///   alone, which the follower learns the cost of.
/// - `Player.OnPause`, `OnResume`, `OnSpeedChanged` go to the follower, which knows which ones it
///   asked for (each request is answered): the others are the person with Kodi's remote, and so
///   group commands. An `OnSeek` to where coplay did not send it is the person's seek.
/// - `Player.Open` starts playing at once: the adapter pauses it at its first `OnPlay`, and only
///   then says it is loaded.
/// - Kodi's JSON-RPC has no authentication. It is reached at 127.0.0.1 unless a host is named.
struct KodiPlayer: FollowingPlayer {
    let kind = "kodi"
    private let link: KodiLink
    private let settings: Settings
    var follower: PlayerFollower

    private enum Request {
        case version, ping, other, length
        case open(attempt: Int)
        case openPause, skipPause, skipResume
        case seek(target: Double)
        case asked(PlayerFollower.Asked)
        case sample(sentAt: Timestamp, generation: Int)
    }

    private var requests: PendingRequests<Request>
    /// Kodi's id of its video player (1 unless its `OnPlay` says otherwise).
    private var playerID: Int64 = 1

    /// Where the item stands in Kodi: none loaded; opened and not yet paused at its start
    /// (`since`, for `Settings.Players.kodiOpenPatience`); paused there and told to the follower.
    private enum Phase: Equatable {
        case idle
        case opening(since: MonotonicInstant, pausing: Bool)
        case open
    }

    private var phase = Phase.idle
    /// A refused open asked again at `at` (its `attempt`, up to `Settings.Players.kodiOpenAttempts`).
    private var reopen: (at: MonotonicInstant, attempt: Int)?
    private var item: LoadedItem?
    /// The connection ended with an item loaded: the follower was told of a stall, and hears it
    /// is over once Kodi has the item open again.
    private var standingAside = false
    /// Seeks sent whose answer has not come yet.
    private var ownSeeks = 0
    /// Positions coplay seeked to, whose `OnSeek` may still come (bounded by
    /// `Settings.Players.kodiSeekEchoesMax`, each kept `FollowerSettings.echoGrace`).
    private var seekEchoes: [(position: Double, at: MonotonicInstant)] = []
    /// A position asked for: the readings either side of the time's next step.
    private struct Hunt {
        var previous: (time: Double, at: WallInstant)?
        var began: MonotonicInstant
        var nextPollAt: MonotonicInstant?
        var polling = false
        /// Kodi said speed 0 while it should play, asked by no one here: since when.
        var standing: MonotonicInstant?
    }

    private var hunt: Hunt?
    /// Whether Kodi plays (as last asked or seen).
    private var playing = false
    /// A skip while playing, made the way Kodi lands exactly: paused, seeked, and played again
    /// `Settings.Players.kodiSkipTime` after it was asked. Kodi's own seek while it plays lands
    /// 300-600 ms after it is asked, ±150 ms from one to the next (measured), so a skip made so
    /// would land anywhere in ±150 ms; paused, the seek lands on its millisecond, and a start from
    /// a pause is even to a few. Its own pause's and play's notifications are not the person's.
    private var skipResumeAt: MonotonicInstant?
    /// A skip's own pauses and plays whose notification may still come, each until when it is
    /// expected (`FollowerSettings.echoGrace` after Kodi answered it). Notifications reach the
    /// agent late (a busy box, a Wi-Fi link), coalesced, and not always in the order Kodi wrote them:
    /// counted by kind, not matched by order. Bounded by `Settings.Players.kodiSkipEchoesMax`.
    private var skipEchoes: (pause: [MonotonicInstant], resume: [MonotonicInstant]) = ([], [])
    /// The follower's own pauses and plays whose notification has not come, oldest first, each
    /// until when it may (`FollowerSettings.echoGrace` twice). Notifications come late and not always
    /// in the order written: one that came for a newer ask leaves the older ones of the other kind
    /// superseded, and when theirs come late they are dropped, not taken for the person's (the
    /// follower's `Echoes` hears each stream in order). Bounded by `Settings.Players.kodiSkipEchoesMax`.
    private var followerAsks: [(play: Bool, superseded: Bool, until: MonotonicInstant)] = []
    /// When Kodi was last asked to play, by the follower or a skip: a reading asked before it may
    /// say it stands paused.
    private var resumedAt: MonotonicInstant?
    /// Moved on by every seek: a reading asked before one is not half of an edge after it.
    private var huntGeneration = 0
    /// When Kodi last wrote anything, and when the oldest request still unanswered went: Kodi
    /// answering nothing for `Settings.Players.kodiSilenceMax` (stopped, hung) stands aside.
    private var heardAt: MonotonicInstant?
    private var sentAt: MonotonicInstant?
    private var silent = false
    private(set) var version: String?
    /// Objects Kodi wrote that are not JSON-RPC (or not JSON): counted, the first said.
    private(set) var unknownFrames = 0
    private var notes: [String] = []

    init(link: KodiLink, settings: Settings) {
        self.link = link
        self.settings = settings
        self.requests = PendingRequests(limit: settings.playerRequestsMax)
        self.follower = PlayerFollower(.kodi, settings: settings)
    }

    // MARK: The follower's actions

    mutating func carryOut(_ action: PlayerFollower.Action, now: Timestamp) -> [PlayerReport] {
        switch action {
        case .load(let item):
            self.item = item
            (ownSeeks, hunt, playing, skipResumeAt) = (0, nil, false, nil)
            open(now: now)
        case .seek(let position), .reload(let position):
            guard phase == .open else { break }
            ownSeeks += 1
            var target = position
            if playing, skipResumeAt == nil {
                skipResumeAt = now.monotonic + Settings.Players.kodiSkipTime
                expectEcho(resume: false, now: now)
                send("Player.PlayPause", ["playerid": .int(playerID), "play": false], as: .skipPause, now: now)
                // The follower aimed the skip where the group will be once its learnt seek cost has
                // passed (a cost it holds under a second); this one lands after the skip's pause and
                // Kodi's start: aimed there instead.
                target +=
                    Settings.Players.kodiSkipTime.seconds + Settings.Players.kodiStartLag - follower.learnedSeekCost
            }
            seekEchoes.append((target, now.monotonic))
            if seekEchoes.count > Settings.Players.kodiSeekEchoesMax { seekEchoes.removeFirst() }
            send(
                "Player.Seek", ["playerid": .int(playerID), "value": .object([("time", Self.time(target))])],
                as: .seek(target: target), now: now)
            restartHunt()
        case .pause, .play:
            let play = action == .play
            (playing, skipResumeAt) = (play, nil)
            send("Player.PlayPause", ["playerid": .int(playerID), "play": .bool(play)], as: .asked(.pause), now: now)
        case .setRate(let rate):
            // Kodi's speeds are whole (1, 2, 4, …): only those can be asked; the follower steers
            // this player by skips.
            let whole = rate.rounded()
            guard abs(rate - whole) < 0.001, whole >= 1, whole <= 32 else { break }
            send(
                "Player.SetSpeed", ["playerid": .int(playerID), "speed": .int(Int64(whole))], as: .asked(.rate),
                now: now)
        case .readPosition:
            if hunt == nil { hunt = Hunt(began: now.monotonic) }
            poll(now: now)
        case .unload:
            (item, phase, hunt, standingAside, playing, skipResumeAt) = (nil, .idle, nil, false, false, nil)
            send("Player.Stop", ["playerid": .int(playerID)], as: .other, now: now)
        case .interstitial(let interstitial):
            return [.interstitialFailed("Kodi shows no interstitial of coplay's: \(interstitial.url) is not shown")]
        case .endInterstitial: break
        }
        return []
    }

    private mutating func open(now: Timestamp) {
        guard let item else { return }
        phase = .opening(since: now.monotonic, pausing: false)
        reopen = nil
        guard link.isConnected else {
            notes.append("waiting for Kodi at \(link.options.endpoint) to play \(item.url)")
            return
        }
        sendOpen(item, attempt: 1, now: now)
    }

    private mutating func sendOpen(_ item: LoadedItem, attempt: Int, now: Timestamp) {
        send("Player.Open", ["item": .object([("file", .string(item.url))])], as: .open(attempt: attempt), now: now)
    }

    /// Asks for the time (one reading of a hunt).
    private mutating func poll(now: Timestamp) {
        guard var current = hunt, !current.polling else { return }
        (current.polling, current.nextPollAt) = (true, nil)
        hunt = current
        send(
            "Player.GetProperties",
            ["playerid": .int(playerID), "properties": .array(["time", "speed"])],
            as: .sample(sentAt: now, generation: huntGeneration), now: now)
    }

    /// The clock moved (a seek): a position still asked is read afresh, from both sides of a step
    /// after it.
    private mutating func restartHunt() {
        huntGeneration += 1
        hunt?.previous = nil
    }

    // MARK: Timer

    func nextEvent(now: Timestamp) -> MonotonicInstant? {
        var due = [follower.nextWake(now: now), hunt?.nextPollAt, reopen?.at, skipResumeAt]
        if !silent, let sentAt { due.append(sentAt + Settings.Players.kodiSilenceMax) }
        if link.isConnected, sentAt == nil, let heardAt { due.append(heardAt + Settings.Players.kodiPingInterval) }
        if case .opening(let since, _) = phase, item != nil, link.isConnected {
            due.append(since + Settings.Players.kodiOpenPatience)
        }
        return due.compactMap { $0 }.min()
    }

    mutating func advance(now: Timestamp) -> [PlayerReport] {
        var reports: [PlayerReport] = []
        if !silent, let sentAt, now.monotonic - sentAt >= Settings.Players.kodiSilenceMax {
            silent = true
            notes.append(
                "Kodi has answered nothing for \(Settings.Players.kodiSilenceMax) (stopped or hung): standing aside until it"
                    + " answers")
            reports += observe(.starved(true), now: now)
        }
        if link.isConnected, sentAt == nil, let heardAt, now.monotonic - heardAt >= Settings.Players.kodiPingInterval {
            send("JSONRPC.Ping", nil, as: .ping, now: now)
        }
        if let due = hunt?.nextPollAt, due <= now.monotonic { poll(now: now) }
        if let due = skipResumeAt, due <= now.monotonic, phase == .open {
            skipResumeAt = nil
            expectEcho(resume: true, now: now)
            send("Player.PlayPause", ["playerid": .int(playerID), "play": true], as: .skipResume, now: now)
        }
        if let (at, attempt) = reopen, at <= now.monotonic {
            reopen = nil
            if let item, case .opening = phase { sendOpen(item, attempt: attempt, now: now) }
        }
        if case .opening(let since, _) = phase, let item, link.isConnected,
            now.monotonic - since >= Settings.Players.kodiOpenPatience
        {
            phase = .idle
            reports.append(
                MpvPlayer.loadFailure(
                    url: item.url,
                    fileError: "it did not start playing it within \(Settings.Players.kodiOpenPatience)", player: "Kodi"
                ))
        }
        return reports + carry(follower.advance(now: now), now: now)
    }

    mutating func takeNotes() -> [String] {
        defer { notes.removeAll() }
        return notes
    }

    // MARK: The connection

    mutating func connected(now: Timestamp) -> [PlayerReport] {
        heardAt = now.monotonic
        requests.removeAll()
        (sentAt, silent) = (nil, false)
        send("JSONRPC.Version", nil, as: .version, now: now)
        if !link.options.isLoopback {
            notes.append(
                "Kodi's JSON-RPC has no password: anyone who can reach \(link.options.endpoint) can drive that Kodi,"
                    + " as coplay does")
        }
        // An item the group plays (Kodi restarted, or reached late): opened again, paused.
        if item != nil { open(now: now) }
        return []
    }

    /// The connection ended (Kodi quit, restarted, or the network between went): the agent stays,
    /// stands aside, and connects again every `Settings.Players.kodiRetry`.
    mutating func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) {
        notes.append(
            "Kodi's connection at \(link.options.endpoint) ended: standing aside, trying again every"
                + " \(Settings.Players.kodiRetry)")
        requests.removeAll()
        (sentAt, hunt, ownSeeks) = (nil, nil, 0)
        (playing, skipResumeAt, skipEchoes, followerAsks) = (false, nil, ([], []), [])
        let wasOpen = phase == .open
        phase = .idle
        silent = false
        guard item != nil, wasOpen || standingAside else { return ([], false) }
        standingAside = true
        return (observe(.starved(true), now: now), false)
    }

    mutating func close() {
        if phase != .idle { send("Player.Stop", ["playerid": .int(playerID)], as: .other, now: nil) }
        link.close()
    }

    // MARK: What Kodi says

    mutating func receive(line: [UInt8], at now: Timestamp) -> [PlayerReport] {
        heardAt = now.monotonic
        var reports: [PlayerReport] = []
        if silent {
            silent = false
            notes.append("Kodi answers again: following the group")
            reports = observe(.starved(false), now: now)
        }
        guard let message = try? JSONParser.parse(line), case .object = message else {
            return reports + unknown(line)
        }
        if let id = message["id"]?.integer {
            return reports + answered(id, message, now: now)
        }
        guard let method = message["method"]?.string else { return reports + unknown(line) }
        return reports + notified(method, message["params"]?["data"], now: now)
    }

    private mutating func unknown(_ frame: [UInt8]) -> [PlayerReport] {
        unknownFrames += 1
        if unknownFrames == 1 {
            let shown = String(decoding: frame.prefix(80), as: UTF8.self).map { $0.isASCII && !$0.isNewline ? $0 : "?" }
            notes.append("Kodi wrote something that is not JSON-RPC (counted; the first): " + String(shown))
        }
        return []
    }

    private mutating func answered(_ id: Int64, _ message: JSONValue, now: Timestamp) -> [PlayerReport] {
        guard let request = forget(id) else { return [] }
        let result = message["result"]
        let failed = result == nil
        switch request {
        case .version:
            if let number = result?["version"], let major = number["major"]?.integer {
                version = "\(major).\(number["minor"]?.integer ?? 0)"
            }
        case .ping, .other: break
        case .open(let attempt):
            guard failed, let item else { break }
            if attempt < Settings.Players.kodiOpenAttempts {
                // Kodi refuses now and then a film it opens a moment later ("Invalid params.",
                // seen after a film ended and while one was held paused): stopped, and asked again
                // shortly.
                send("Player.Stop", ["playerid": .int(playerID)], as: .other, now: now)
                reopen = (now.monotonic + Settings.Players.kodiRetry, attempt + 1)
                break
            }
            phase = .idle
            let reason =
                message["error"]?["message"]?.string.map { "it answered: \($0.prefix(120))" } ?? "it refused it"
            return [MpvPlayer.loadFailure(url: item.url, fileError: reason, player: "Kodi")]
        case .openPause:
            guard case .opening = phase, item != nil else { break }
            phase = .open
            send(
                "Player.GetProperties", ["playerid": .int(playerID), "properties": .array(["totaltime"])], as: .length,
                now: now)
            if standingAside {
                standingAside = false
                notes.append("Kodi is back: following the group")
                return observe(.starved(false), now: now)
            }
            return observe(.loaded, now: now) + (ownSeeks == 0 ? observe(.restarted, now: now) : [])
        case .length:
            guard let seconds = Self.seconds(result?["totaltime"]), seconds > 0 else { break }
            return observe(.duration(seconds), now: now)
        case .asked(let asked):
            return observe(.answered(asked), now: now)
        case .seek:
            guard ownSeeks > 0 else { break }
            ownSeeks -= 1
            if failed { return ownSeeks == 0 ? observe(.seekRefused, now: now) : [] }
            // A skip's restart is its play, still to come.
            return ownSeeks == 0 && phase == .open && skipResumeAt == nil ? observe(.restarted, now: now) : []
        case .skipPause:
            answeredEcho(resume: false, now: now)
        case .skipResume:
            answeredEcho(resume: true, now: now)
            return ownSeeks == 0 && phase == .open ? observe(.restarted, now: now) : []
        case .sample(let sentAt, let generation):
            return sampled(result, sentAt: sentAt, generation: generation, now: now)
        }
        return []
    }

    /// One reading of a hunt for the time's next step.
    private mutating func sampled(_ result: JSONValue?, sentAt: Timestamp, generation: Int, now: Timestamp)
        -> [PlayerReport]
    {
        guard var current = hunt else { return [] }
        current.polling = false
        guard generation == huntGeneration else {
            // Read before a seek: asked again at once.
            current.nextPollAt = now.monotonic
            hunt = current
            return []
        }
        guard let time = Self.seconds(result?["time"]), let speed = result?["speed"]?.integer, phase == .open else {
            hunt = nil
            return observe(.positionUnavailable, now: now)
        }
        let middle = WallInstant(unixNanos: sentAt.wall.unixNanos &+ (now.wall.unixNanos &- sentAt.wall.unixNanos) / 2)
        if speed == 0, playing, skipResumeAt == nil,
            resumedAt.map({ sentAt.monotonic > $0 + Settings.Players.kodiPlayShows }) ?? true
        {
            // Kodi stands paused, asked by no one here: read again until it has for
            // `Settings.Players.kodiPausedSure` (Kodi says speed 0 a moment now and then as it
            // plays), and meanwhile no position, so that the follower does not take the standing
            // clock for a lag and skip (a skip's pause would swallow the person's OnPause, and its
            // play undo their pause). Then the person paused it, and its OnPause (late: a busy box,
            // Wi-Fi) is still to come: said now; the OnPause, when it comes, is this one's. (Kodi
            // filling its cache keeps its speed: its clock stands, and that is a lag.)
            let since = current.standing ?? now.monotonic
            guard now.monotonic - since >= Settings.Players.kodiPausedSure else {
                current.standing = since
                current.nextPollAt = now.monotonic + Settings.Players.kodiPollInterval
                hunt = current
                return []
            }
            hunt = nil
            playing = false
            skipEchoes.pause.append(now.monotonic + FollowerSettings.echoGrace)
            return observe(.paused(true), now: now) + observe(.position(time, at: middle), now: now)
        }
        current.standing = nil
        // Paused, or standing (starting, buffering) longer than a step: as it is.
        if speed == 0 || now.monotonic - current.began >= Settings.Players.kodiStepMax {
            hunt = nil
            return observe(.position(time, at: middle), now: now)
        }
        guard let previous = current.previous, previous.time != time else {
            current.previous = (time, middle)
            current.nextPollAt = now.monotonic + Settings.Players.kodiPollInterval
            hunt = current
            return []
        }
        hunt = nil
        let edge = WallInstant(
            unixNanos: previous.at.unixNanos &+ (middle.unixNanos &- previous.at.unixNanos) / 2)
        return observe(.position(time, at: edge), now: now)
    }

    private mutating func notified(_ method: String, _ data: JSONValue?, now: Timestamp) -> [PlayerReport] {
        let player = data?["player"]
        switch method {
        case "Player.OnPlay", "Player.OnAVStart", "Player.OnResume":
            if let id = player?["playerid"]?.integer, id >= 0, id < 16 { playerID = id }
            switch phase {
            case .opening(let since, false) where method != "Player.OnResume":
                // Playing from its start: paused there before the follower hears it is loaded.
                phase = .opening(since: since, pausing: true)
                send("Player.PlayPause", ["playerid": .int(playerID), "play": false], as: .openPause, now: now)
            case .open where method == "Player.OnResume":
                guard !ownEcho(resume: true, now: now), !supersededEcho(playing: true, now: now) else { break }
                playing = true
                return observe(.paused(false), now: now)
            default: break
            }
        case "Player.OnPause":
            guard phase == .open, !ownEcho(resume: false, now: now), !supersededEcho(playing: false, now: now) else {
                break
            }
            playing = false
            return observe(.paused(true), now: now)
        case "Player.OnSpeedChanged":
            guard phase == .open, let speed = player?["speed"]?.integer, speed > 0, speed <= 32 else { break }
            return observe(.rate(Double(speed)), now: now)
        case "Player.OnSeek":
            guard phase == .open, let position = Self.seconds(player?["time"]) else { break }
            seekEchoes.removeAll { now.monotonic - $0.at > FollowerSettings.echoGrace }
            if let index = seekEchoes.firstIndex(where: {
                abs($0.position - position) < Settings.Players.kodiSeekWithin
            }) {
                seekEchoes.remove(at: index)
                break
            }
            // Kodi went where coplay did not send it: the person seeked with its remote.
            restartHunt()
            return observe(.personSeekBegan, now: now) + observe(.personSeekLanded(position), now: now)
        case "Player.OnStop":
            guard phase == .open, item != nil else { break }
            if data?["end"] == .bool(true) { return observe(.ended, now: now) }
            // Its Stop: the person left the film in Kodi. It stands aside until it plays again.
            phase = .idle
            standingAside = true
            notes.append(
                "Kodi stopped the film (its own Stop): standing aside; `load` the group's item to play it again")
            return observe(.starved(true), now: now)
        default: break  // Kodi's other news (playlists, volume, the library)
        }
        return []
    }

    /// A skip's own pause (or play) was sent: its notification is not the person's. Expected
    /// `FollowerSettings.echoGrace` from now, and as long after Kodi's answer; however late it comes
    /// within that, and whatever came between.
    private mutating func expectEcho(resume: Bool, now: Timestamp) {
        let until = now.monotonic + FollowerSettings.echoGrace
        if resume { skipEchoes.resume.append(until) } else { skipEchoes.pause.append(until) }
        if skipEchoes.pause.count > Settings.Players.kodiSkipEchoesMax { skipEchoes.pause.removeFirst() }
        if skipEchoes.resume.count > Settings.Players.kodiSkipEchoesMax { skipEchoes.resume.removeFirst() }
    }

    /// Kodi answered a skip's own pause (or play): its notification is expected for
    /// `FollowerSettings.echoGrace` from the answer (the oldest such still expected).
    private mutating func answeredEcho(resume: Bool, now: Timestamp) {
        let until = now.monotonic + FollowerSettings.echoGrace
        if resume, let first = skipEchoes.resume.firstIndex(where: { $0 < until }) {
            skipEchoes.resume[first] = until
        } else if !resume, let first = skipEchoes.pause.firstIndex(where: { $0 < until }) {
            skipEchoes.pause[first] = until
        }
    }

    /// Whether this `OnPause` (or `OnResume`) is a skip's own: one is still expected.
    private mutating func ownEcho(resume: Bool, now: Timestamp) -> Bool {
        skipEchoes.pause.removeAll { $0 < now.monotonic }
        skipEchoes.resume.removeAll { $0 < now.monotonic }
        if resume, !skipEchoes.resume.isEmpty {
            skipEchoes.resume.removeFirst()
            return true
        }
        if !resume, !skipEchoes.pause.isEmpty {
            skipEchoes.pause.removeFirst()
            return true
        }
        return false
    }

    /// Whether a notification that Kodi plays (or pauses) is the late echo of a follower's ask that
    /// a newer one's notification superseded: dropped. The echo of one not superseded goes on to the
    /// follower, and supersedes the older asks of the other kind.
    private mutating func supersededEcho(playing: Bool, now: Timestamp) -> Bool {
        followerAsks.removeAll { $0.until < now.monotonic }
        if let index = followerAsks.firstIndex(where: { $0.play == playing && !$0.superseded }) {
            for older in followerAsks.indices where older < index { followerAsks[older].superseded = true }
            followerAsks.remove(at: index)
            return false
        }
        guard let stale = followerAsks.firstIndex(where: { $0.play == playing }) else { return false }
        followerAsks.remove(at: stale)
        return true
    }

    /// A line on Kodi's screen (`OnScreen`: who did what), as one of its notifications.
    mutating func show(_ text: String) {
        send(
            "GUI.ShowNotification",
            [
                "title": "coplay", "message": .string(text),
                "displaytime": .int(Settings.Players.kodiNoticeMilliseconds),
            ],
            as: .other, now: nil)
    }

    // MARK: Sending

    private mutating func send(_ method: String, _ params: [String: JSONValue]?, as request: Request, now: Timestamp?) {
        let id = requests.add(request).id
        if method == "Player.PlayPause", let now {
            let play = params?["play"] == .bool(true)
            if play { resumedAt = now.monotonic }
            if case .asked = request {
                followerAsks.append((play, false, now.monotonic + FollowerSettings.echoGrace * 2))
                if followerAsks.count > Settings.Players.kodiSkipEchoesMax { followerAsks.removeFirst() }
            }
        }
        var fields: [(String, JSONValue)] = [("jsonrpc", "2.0"), ("id", .int(id)), ("method", .string(method))]
        if let params { fields.append(("params", .object(params.sorted { $0.key < $1.key }))) }
        guard link.send(JSONValue.object(fields).serialized) else { return }
        if sentAt == nil, let now { sentAt = now.monotonic }
    }

    private mutating func forget(_ id: Int64) -> Request? {
        guard let request = requests.take(id) else { return nil }
        // The oldest unanswered request is what silence is measured from: with none left, none.
        if requests.isEmpty { sentAt = nil } else if let heardAt { sentAt = heardAt }
        return request
    }

    // MARK: Values

    /// A position as Kodi's time object (hours, minutes, seconds, milliseconds).
    static func time(_ seconds: Double) -> JSONValue {
        let millis = Int64((min(max(seconds, 0), 4_200_000_000) * 1000).rounded())
        return .object([
            ("hours", .int(millis / 3_600_000)), ("minutes", .int(millis / 60_000 % 60)),
            ("seconds", .int(millis / 1000 % 60)), ("milliseconds", .int(millis % 1000)),
        ])
    }

    /// Kodi's time object in seconds; nil unless each field is a whole number in its range.
    static func seconds(_ time: JSONValue?) -> Double? {
        guard let time, let hours = time["hours"]?.integer, let minutes = time["minutes"]?.integer,
            let seconds = time["seconds"]?.integer, let millis = time["milliseconds"]?.integer,
            (0...1_166_000).contains(hours), (0..<60).contains(minutes), (0..<60).contains(seconds),
            (0..<1000).contains(millis)
        else { return nil }
        return Double(hours * 3600 + minutes * 60 + seconds) + Double(millis) / 1000
    }
}

extension Settings.Players {
    /// How often a position asked of Kodi reads its time while waiting for the time to step
    /// (Kodi updates it about every 200 ms): the reading's error is within half this.
    public static let kodiPollInterval: Duration = .milliseconds(4)
    /// Kodi's time not stepping for this long while it plays (starting, buffering): said as it is.
    public static let kodiStepMax: Duration = .milliseconds(400)
    /// A request Kodi has not answered in this long (Kodi stopped or hung, or the network between)
    /// stands this participant aside until it answers: Kodi answers in a millisecond on loopback.
    /// Kodi says nothing unasked while nothing happens, so it is asked whether it is there after
    /// `kodiPingInterval` of quiet: a Kodi that stops is said within their sum, 2 s at most.
    public static let kodiSilenceMax: Duration = .milliseconds(1500)
    public static let kodiPingInterval: Duration = .milliseconds(500)
    /// How long a film Kodi was told to open may take to start playing before coplay says it
    /// could not (a missing file shows Kodi's own dialog, and no answer of the JSON-RPC's).
    public static let kodiOpenPatience: Duration = .seconds(15)
    /// How often a lost connection to Kodi is tried again.
    public static let kodiRetry: Duration = .seconds(1)
    /// How many times a film Kodi refuses to open is asked, `kodiRetry` apart, before coplay says
    /// Kodi could not play it.
    public static let kodiOpenAttempts = 3
    /// Seeks of coplay's whose `OnSeek` may still come: a person's seek is one matching none,
    /// within `kodiSeekWithin` (Kodi's seeks land to the millisecond).
    public static let kodiSeekEchoesMax = 8
    public static let kodiSeekWithin = 0.25
    /// How long a skip while Kodi plays holds it paused before it plays on from where it was
    /// sent: longer than a paused seek takes to settle, so that every skip takes the same time and
    /// the follower's learnt seek cost is exact. A play sent just after a paused seek started
    /// 275-985 ms later; one sent 1 s after it, 53-79 ms later (measured). At 700 ms, one skip in
    /// a few landed 200-300 ms late.
    public static let kodiSkipTime: Duration = .milliseconds(1200)
    /// How late Kodi's clock runs after a play that ends a skip's pause: 52-89 ms (measured). What
    /// is left is learnt by the follower as a start's bias.
    public static let kodiStartLag = 0.07
    /// A skip's own pauses (and plays) whose notification may still come: one skip at a time is
    /// made, 1.2 s apart at least, and each is expected for 2 s (`FollowerSettings.echoGrace`), so
    /// two at most are ever awaited; four bound a Kodi that answers and never notifies. The same
    /// bound holds the follower's own pauses and plays awaited (it asks one at a time, seconds apart).
    public static let kodiSkipEchoesMax = 4
    /// A play asked of Kodi shows in its speed within this: Kodi hands the play to its player and
    /// may answer, and answer a reading, before it has (its clock then starts 52-89 ms after the
    /// ask, measured). A reading at speed 0 asked sooner after a play is no sign of the person.
    public static let kodiPlayShows: Duration = .milliseconds(300)
    /// How long Kodi must say speed 0, asked by no one here, before it is the person's pause said
    /// ahead of its notification.
    public static let kodiPausedSure: Duration = .milliseconds(250)
    /// How long a line (who did what) stays on Kodi's screen.
    public static let kodiNoticeMilliseconds: Int64 = 4000
}

extension PlayerFollower.Capabilities {
    /// Kodi over JSON-RPC: its remote is the person's, it answers each request, its speed is whole
    /// (steered by skips), and its clock may stand a moment after an unpause.
    static let kodi = PlayerFollower.Capabilities(steersByRate: false, standsAfterStart: true, answersAsks: true)
}

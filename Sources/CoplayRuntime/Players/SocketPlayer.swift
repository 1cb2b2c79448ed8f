import CoplayCore

/// Any other player, through the delegating-player socket (`--player socket:PATH`): coplay
/// listens on a Unix socket and speaks JSON lines, modelled on AVDelegatingPlaybackCoordinator.
/// PLAYERS.md specifies the protocol; `Tools/coplay-player-example` is a reference client.
///
/// To the player: `load`, `prepare`, `play`, `rate`, `pause`, `unload`, `interstitial`,
/// `interstitial-end`, each with an `id`. A
/// `load` or `prepare` is complete (the player is ready) when the player answers `{"done": id}`.
/// From the player: `done`, and events: `sample`, `buffering`, `buffered`, `ended`, `user`
/// (an action taken in the player), `error`. Every value is checked (a line that is not valid
/// gets an `{"error": …}` answer and changes nothing); instants are true Unix nanoseconds of the
/// host clock. A player that disconnects may reconnect: it is sent the current item and state.
struct SocketPlayer: PlayerDriver {
    let kind = "socket"
    private let server: LineServer
    private let clock: AgentClock
    private let settings: Settings
    private var nextID: Int64 = 1
    /// Loads and prepares awaiting `done`, with the position they prepare.
    private var awaitingReady: [(id: Int64, position: Double)] = []
    /// What a reconnecting player is told: the item, and the last transport command.
    private var lastLoad: PlayerCommand?
    private var lastTransport: PlayerCommand?
    /// The last interstitial begun or ended, for a player that reconnects while one plays.
    private var lastInterstitial: PlayerCommand?
    /// Lines refused since the player connected (answered with an error each).
    private(set) var refusedLines = 0

    init(server: LineServer, clock: AgentClock, settings: Settings) {
        self.server = server
        self.clock = clock
        self.settings = settings
    }

    // MARK: Commands

    mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        switch command {
        case .load:
            lastLoad = command
            lastTransport = nil
            awaitingReady.removeAll()
        case .prepare, .play, .pause:
            lastTransport = command
        case .adjustRate:
            break
        case .unload:
            lastLoad = nil
            lastTransport = nil
            awaitingReady.removeAll()
        case .simulateStall:
            return []
        case .interstitial, .endInterstitial:
            lastInterstitial = command
        }
        send(command)
        return []
    }

    private mutating func send(_ command: PlayerCommand) {
        let id = nextID
        nextID += 1
        var fields: [(String, JSONValue)] = [("id", .int(id))]
        switch command {
        case .load(let item, let position):
            fields += [
                ("command", "load"), ("url", .string(item.url)), ("item", .string(item.id)),
                ("position", .double(position)),
            ]
            if let duration = item.durationSeconds { fields.append(("duration", .double(duration))) }
            if item.live { fields.append(("live", .bool(true))) }
            expectReady(id: id, position: position)
        case .prepare(let position):
            fields += [("command", "prepare"), ("position", .double(position))]
            expectReady(id: id, position: position)
        case .play(let rate, let position, let at):
            fields += [
                ("command", "play"), ("rate", .double(rate)), ("position", .double(position)),
                ("atUnixNanos", .int(clock.trueUnixNanos(of: at))),
            ]
        case .adjustRate(let rate, let at):
            fields += [
                ("command", "rate"), ("rate", .double(rate)), ("atUnixNanos", .int(clock.trueUnixNanos(of: at))),
            ]
        case .pause(let position):
            fields += [("command", "pause"), ("position", .double(position))]
        case .unload:
            fields += [("command", "unload")]
        case .simulateStall:
            return
        case .interstitial(let interstitial):
            fields += [
                ("command", "interstitial"), ("interstitial", .string(interstitial.id)),
                ("url", .string(interstitial.url)), ("duration", .double(interstitial.durationSeconds)),
            ]
        case .endInterstitial:
            fields += [("command", "interstitial-end")]
        }
        server.current?.send(JSONValue.object(fields).serialized)
    }

    private mutating func expectReady(id: Int64, position: Double) {
        awaitingReady.append((id, position))
        if awaitingReady.count > settings.playerRequestsMax { awaitingReady.removeFirst() }
    }

    func nextEvent(now: Timestamp) -> MonotonicInstant? { nil }
    func advance(now: Timestamp) -> [PlayerReport] { [] }

    // MARK: Connection

    /// A player connected: it is told the current item and what it should be doing.
    mutating func connected(now: Timestamp) -> [PlayerReport] {
        refusedLines = 0
        awaitingReady.removeAll()
        server.current?.send(
            JSONValue.object([
                ("hello", "coplay"), ("version", 1),
                ("sampleIntervalMs", .double(settings.follower.sampleInterval.milliseconds)),
            ]).serialized)
        if let lastLoad { send(lastLoad) }
        if let lastTransport {
            if case .pause(let position) = lastTransport, lastLoad != nil { send(.prepare(position: position)) }
            send(lastTransport)
        }
        if case .interstitial? = lastInterstitial { send(lastInterstitial!) }
        return []
    }

    mutating func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) {
        awaitingReady.removeAll()
        return ([.failed("the socket player disconnected; waiting for another on \(server.path)")], false)
    }

    mutating func close() { server.close() }

    // MARK: What the player says

    mutating func receive(line: [UInt8], at now: Timestamp) -> [PlayerReport] {
        switch interpret(line, now: now) {
        case .success(let reports): return reports
        case .failure(let refusal):
            refusedLines += 1
            server.current?.send(JSONValue.object([("error", .string(refusal.reason))]).serialized)
            return []
        }
    }

    private struct Refusal: Error { var reason: String }

    private mutating func interpret(_ line: [UInt8], now: Timestamp) -> Result<[PlayerReport], Refusal> {
        func fail(_ reason: String) -> Result<[PlayerReport], Refusal> { .failure(Refusal(reason: reason)) }
        guard let message = try? JSONParser.parse(line), case .object = message else {
            return fail("not a JSON object")
        }
        // Values are read as they come; the core's one check (`PlayerReport.refusal`) refuses
        // a report whose values are out of range.
        func position(_ key: String = "position") -> Double? { message[key]?.number }
        func checked(_ report: PlayerReport, _ what: String) -> Result<[PlayerReport], Refusal> {
            if let refusal = report.refusal(settings: settings) { return fail("\(what) needs \(refusal)") }
            return .success([report])
        }
        if let done = message["done"] {
            guard let id = done.integer else { return fail("done needs the id of a command") }
            guard let index = awaitingReady.firstIndex(where: { $0.id == id }) else { return .success([]) }
            let ready = awaitingReady[index]
            awaitingReady.removeSubrange(...index)  // an earlier load or prepare is overtaken
            return .success([.ready(position: ready.position)])
        }
        guard let event = message["event"]?.string else { return fail("a line needs \"done\" or \"event\"") }
        switch event {
        case "sample":
            guard let position = position() else { return fail("sample needs a position from 0 to 4.2e9") }
            guard let rate = message["rate"]?.number else { return fail("sample needs a rate from 0 to 64") }
            // Range-checked before any arithmetic: an instant near Int64.min would overflow the
            // difference.
            let nowTrue = clock.trueUnixNanos(of: now.wall)
            guard let atTrue = message["atUnixNanos"]?.integer, WireFormat.wallNanosRange.contains(atTrue),
                (nowTrue - 10_000_000_000...nowTrue + 10_000_000_000).contains(atTrue)
            else { return fail("sample needs atUnixNanos, the host clock's time of the sample, within 10 s of now") }
            let at = WallInstant(unixNanos: atTrue &+ clock.skewNanos)
            return checked(.sample(position: position, rate: rate, at: at), "sample")
        case "buffering", "buffered", "ended":
            guard let position = position() else { return fail("\(event) needs a position from 0 to 4.2e9") }
            let report: PlayerReport =
                event == "buffering"
                ? .stalled(position: position)
                : event == "buffered" ? .stallEnded(position: position) : .ended(position: position)
            return checked(report, event)
        case "duration":
            guard let seconds = message["duration"]?.number else {
                return fail("duration needs duration, the item's length in seconds")
            }
            return checked(.duration(seconds), "duration")
        case "live-window":
            // A live item: its positions are program dates, and this is the window its playlist
            // lists (starts land inside it).
            // A range is made only of ordered, finite ends (anything else would trap); the rest is
            // the core's check.
            guard let start = position("start"), let edge = position("edge"), start.isFinite, edge.isFinite,
                start <= edge
            else {
                return fail("live-window needs start <= edge, program dates (seconds since 1970) up to 4.2e9")
            }
            guard let target = message["targetDuration"]?.number else {
                return fail("live-window needs targetDuration, seconds from 0 to 3600")
            }
            return checked(.liveWindow(LiveWindow(dates: start...edge, targetDuration: target)), "live-window")
        case "user":
            let action: PlayerReport.UserAction
            switch message["action"]?.string {
            case "pause": action = .pause
            case "next": action = .next
            case "previous": action = .previous
            case "play": action = .play(rate: message["rate"]?.number ?? 1)
            case "seek": action = .seek(position: position() ?? .nan)
            default: return fail("user needs an action: play, pause, seek, next or previous")
            }
            return checked(.userAction(action), "a \(message["action"]?.string ?? "user action")")
        case "error", "load-failed":
            let text =
                "socket player: "
                + String((message["message"]?.string ?? "unspecified").prefix(settings.playerErrorBytesMax))
            guard event == "load-failed" else { return .success([.failed(text)]) }
            // "problem": which kind of failure (PLAYERS.md); an unknown or absent one is `other`.
            let problem = message["problem"]?.string.flatMap { PlaybackProblem(rawValue: String($0.prefix(32))) }
            return .success([.loadFailed(text, problem: problem ?? .other)])
        default:
            return fail("unknown event '\(String(event.prefix(64)))'")
        }
    }
}

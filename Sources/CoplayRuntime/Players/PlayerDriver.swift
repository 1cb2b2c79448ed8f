import CoplayCore
import CoplaySimulatedPlayer

/// A local player as the shell drives it: the core's `PlayerCommand`s go in, `PlayerReport`s
/// come out, at once, when its timer fires (`nextEvent`/`advance`), or when it writes a line on
/// its connection (`receive`). The simulated player, mpv and a delegating socket all sit behind
/// this one boundary.
protocol PlayerDriver: PlayerLoop.Player, Sendable {
    /// "simulated", "mpv", "socket": shown by `status`.
    var kind: String { get }
    /// When it next has something to do or report, on the monotonic clock.
    func nextEvent(now: Timestamp) -> MonotonicInstant?
    mutating func advance(now: Timestamp) -> [PlayerReport]
    /// One line from the player's connection, stamped when it arrived.
    mutating func receive(line: [UInt8], at: Timestamp) -> [PlayerReport]
    /// A player connected (a delegating player; mpv is connected from the start).
    mutating func connected(now: Timestamp) -> [PlayerReport]
    /// The player's connection ended: what to report, and whether the agent should leave and
    /// exit (it should when the player it drives is gone for good).
    mutating func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool)
    /// The agent is exiting: let the player go (and stop one the agent started).
    mutating func close()
    /// What the driver has to tell the person since it was last asked (the shell says it on
    /// standard error): which copy of an item it plays, say.
    mutating func takeNotes() -> [String]
    /// The person accepted what the driver offered (another encode of an item it has no copy of,
    /// `OwnCopyPlayer`): what it reports then, or nil when nothing is offered.
    mutating func acceptOffer() -> [PlayerReport]?
    /// A line for the person on the player's own screen (`OnScreen`: who did what); a player
    /// with no screen of its own shows nothing.
    mutating func show(_ text: String)
    /// The last file of this machine's disk the player had open (a person's own mpv, attached,
    /// holding the film): looked at for the group's item known by its content (`OwnCopies`).
    var openFile: String? { get }
}

extension PlayerDriver {
    func show(_ text: String) {}
    var openFile: String? { nil }
    func connected(now: Timestamp) -> [PlayerReport] { [] }
    func takeNotes() -> [String] { [] }
    func acceptOffer() -> [PlayerReport]? { nil }
}

/// A player driven through the core's `PlayerFollower` (mpv, VLC): the core's commands and the
/// player's observations go to the follower, and its actions are carried out by the adapter,
/// which says what the player does in its own words. One way for every adapter.
protocol FollowingPlayer: PlayerDriver {
    var follower: PlayerFollower { get set }
    /// Sends one of the follower's actions to the player; returns any reports of its own.
    mutating func carryOut(_ action: PlayerFollower.Action, now: Timestamp) -> [PlayerReport]
}

extension FollowingPlayer {
    mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        carry(follower.command(command, now: now), now: now)
    }

    /// What the player did, to the follower; its actions carried out.
    mutating func observe(_ observation: PlayerFollower.Observation, now: Timestamp) -> [PlayerReport] {
        carry(follower.observe(observation, now: now), now: now)
    }

    /// Carries out the follower's actions; returns its reports and any of the player's own.
    mutating func carry(_ output: PlayerFollower.Output, now: Timestamp) -> [PlayerReport] {
        var reports = output.reports
        for action in output.actions { reports += carryOut(action, now: now) }
        return reports
    }
}

extension SimulatedPlayer: PlayerDriver {
    var kind: String { "simulated" }
    func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] { [] }
    func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) { ([], false) }
    func close() {}
}

/// The connections of the player `--player` chose: the one the shell reads mpv's lines from, or
/// the socket a delegating player connects to (neither for the simulated player).
struct PlayerConnections {
    var connection: LineSocket?
    var server: LineServer?
    /// Kodi's JSON-RPC connection, made again whenever it ends.
    var kodi: KodiLink?
    /// The VLC the agent started, started again after a crash.
    var vlc: VlcLink?

    /// Opens the player: its driver, and its connections. Each plays this machine's own copy of
    /// an item known by its content, found in `mediaFolders` too (`OwnCopyPlayer`), aimed early
    /// by its sound's `audioLatency` (seconds, `OutputLatencyPlayer`).
    static func open(
        _ choice: PlayerChoice, mediaFolders: [String], ownFiles: [String] = [], audioLatency: Double = 0,
        settings: Settings, clock: AgentClock
    ) throws
        -> (any PlayerDriver, PlayerConnections)
    {
        func owning<P: PlayerDriver>(_ player: P) -> some PlayerDriver {
            OwnCopyPlayer(OutputLatencyPlayer(player, latency: audioLatency), folders: mediaFolders, files: ownFiles)
        }
        switch choice {
        case .simulated:
            return (owning(SimulatedPlayer()), PlayerConnections())
        case .mpv(let options):
            let (mpv, socket) = try MpvPlayer.connect(options, settings: settings)
            return (owning(LivePlayer(mpv, settings: settings)), PlayerConnections(connection: socket))
        case .vlc(let options):
            let (vlc, link) = try VlcPlayer.connect(options, settings: settings)
            return (owning(vlc), PlayerConnections(vlc: link))
        case .kodi(let options):
            let link = KodiLink(options: options)
            return (owning(KodiPlayer(link: link, settings: settings)), PlayerConnections(kodi: link))
        case .socket(let path):
            let server = try LineServer.listen(path: path)
            let driver = SocketPlayer(server: server, clock: clock, settings: settings)
            return (owning(driver), PlayerConnections(server: server))
        }
    }

    /// Starts reading the player's lines into `feed`, at most `Settings.playerLinesQueuedMax`
    /// waiting (counted by `queued`; the rest dropped there). Returns what to say, if anything.
    func startReading(
        into feed: AsyncStream<ShellInput>.Continuation, queued: QueueGauge, settings: Settings, clock: AgentClock
    ) -> String? {
        let (linesMax, lineBytesMax) = (settings.playerLinesQueuedMax, settings.playerLineBytesMax)
        @Sendable func read(_ socket: LineSocket, ended: @escaping @Sendable () -> Void) {
            socket.startReading(
                lineBytesMax: lineBytesMax, clock: clock,
                line: { bytes, stamp in
                    guard queued.enter(limit: linesMax) else { return }
                    feed.yield(.playerLine(bytes, receivedAt: stamp))
                }, ended: ended)
        }
        if let connection { read(connection) { feed.yield(.playerClosed) } }
        vlc?.start(
            lineBytesMax: lineBytesMax, clock: clock,
            line: { bytes, stamp in
                guard queued.enter(limit: linesMax) else { return }
                feed.yield(.playerLine(bytes, receivedAt: stamp))
            }, connected: { feed.yield(.playerConnected) }, closed: { feed.yield(.playerClosed) })
        if let kodi {
            kodi.start(
                frameBytesMax: lineBytesMax, retry: Settings.Players.kodiRetry, clock: clock,
                frame: { bytes, stamp in
                    guard queued.enter(limit: linesMax) else { return }
                    feed.yield(.playerLine(bytes, receivedAt: stamp))
                }, connected: { feed.yield(.playerConnected) }, closed: { feed.yield(.playerClosed) })
            return "connecting to Kodi's JSON-RPC at \(kodi.options.endpoint)"
        }
        guard let server else { return nil }
        server.start(refusal: #"{"error":"another player is connected to this agent"}"#) { socket in
            feed.yield(.playerConnected)
            read(socket) {
                server.release(socket)
                feed.yield(.playerClosed)
            }
        }
        return "waiting for a player on \(server.path)"
    }
}

/// The requests a driver sent its player that are not answered yet, by the id the answer names
/// (mpv's `request_id`, VLC's script's, Kodi's JSON-RPC `id`): at most `limit`
/// (`Settings.playerRequestsMax`). Beyond it the oldest is forgotten: an answer that never came
/// (the follower asks a position again once its patience ends).
struct PendingRequests<Request: Sendable>: Sendable {
    let limit: Int
    private var nextID: Int64 = 1
    private var byID: [Int64: Request] = [:]
    private var order: [Int64] = []

    init(limit: Int) { self.limit = limit }

    /// Adds a request: its id, and the id of the one forgotten to make room, if one was.
    mutating func add(_ request: Request) -> (id: Int64, forgotten: Int64?) {
        let id = nextID
        nextID += 1
        byID[id] = request
        order.append(id)
        guard order.count > limit else { return (id, nil) }
        let forgotten = order.removeFirst()
        byID.removeValue(forKey: forgotten)
        return (id, forgotten)
    }

    /// The request this answer is for, no longer pending; nil for an id not pending.
    mutating func take(_ id: Int64) -> Request? {
        guard let request = byID.removeValue(forKey: id) else { return nil }
        if let index = order.firstIndex(of: id) { order.remove(at: index) }
        return request
    }

    func contains(_ id: Int64) -> Bool { byID[id] != nil }
    var isEmpty: Bool { byID.isEmpty }

    mutating func removeAll() { (byID, order) = ([:], []) }
}

import CoplayCore
import Dispatch
import Glibc
import Synchronization

/// The control socket (`--control PATH`): a Unix stream socket that takes the same command lines
/// as standard input, from several clients at once. Each command's reply — the events it caused,
/// then a `done` line — goes to the client that sent it; a client that sent `follow` also gets
/// every event from then on. All in `--json` form, one object per line.
///
/// A client cannot hurt the others or the agent. Its lines are read on its own thread; at most
/// `Settings.controlLinesQueuedMax` of them wait, and none while half its buffer of replies is
/// unread (its reading pauses then: backpressure, nothing lost). A line longer than the command
/// limit is cut and rejected by the parser. Writes to a client never block the agent: a
/// follower that does not read is disconnected once `Settings.controlClientBufferBytes` wait.
final class ControlServer: Sendable {
    let path: String
    private let descriptor: Int32
    private let settings: Settings
    private let clients = Mutex<[Int: Client]>([:])
    private let clientsMade = Atomic<Int>(0)

    private final class Client: Sendable {
        let socket: LineSocket
        /// Lines of this client queued for the shell and not yet handled.
        let slots: DispatchSemaphore
        let follows = Atomic<Bool>(false)
        init(socket: LineSocket, slots: Int) {
            self.socket = socket
            self.slots = DispatchSemaphore(value: slots)
        }
    }

    private init(path: String, descriptor: Int32, settings: Settings) {
        self.path = path
        self.descriptor = descriptor
        self.settings = settings
    }

    static func listen(path: String, settings: Settings) throws(SocketError) -> ControlServer {
        ControlServer(
            path: path, descriptor: try LineServer.listeningDescriptor(path: path, backlog: 16), settings: settings)
    }

    /// Whether any client follows the events (the shell formats them for the socket only then).
    var hasFollowers: Bool { clients.withLock { $0.values.contains { $0.follows.load(ordering: .relaxed) } } }

    /// Accepts clients on a thread of its own; each line a client sends is delivered as
    /// `.controlLine`, after which the shell calls `handled(by:)`.
    func start(clock: AgentClock, deliver: @escaping @Sendable (ShellInput) -> Void) {
        let (descriptor, settings) = (self.descriptor, self.settings)
        LineServer.acceptConnections(on: descriptor) { [self] socket in
            socket.setSendBuffer(bytes: settings.controlClientBufferBytes)
            let id = clientsMade.wrappingAdd(1, ordering: .relaxed).newValue
            let client = Client(socket: socket, slots: settings.controlLinesQueuedMax)
            let admitted = clients.withLock { clients in
                guard clients.count < settings.controlClientsMax else { return false }
                clients[id] = client
                return true
            }
            guard admitted else {
                let refusal = JSONValue.object([
                    ("event", .string("error")),
                    (
                        "message",
                        .string("too many control clients (\(settings.controlClientsMax)); try again later")
                    ),
                ])
                socket.send(refusal.serialized, waiting: false)
                socket.send(#"{"event":"done"}"#, waiting: false)
                socket.close()
                return
            }
            socket.startReading(
                lineBytesMax: settings.commandLineBytesMax, clock: clock,
                line: { bytes, _ in
                    // Backpressure on a client that sends commands faster than it reads the
                    // replies: its next line waits until half its buffer has been read, so it
                    // is slowed down rather than disconnected (a follower that never reads
                    // is still disconnected when its buffer fills).
                    while client.socket.unreadBytes > settings.controlClientBufferBytes / 2,
                        !client.socket.isClosed
                    {
                        usleep(5_000)
                    }
                    client.slots.wait()
                    deliver(.controlLine(client: id, String(decoding: bytes, as: UTF8.self)))
                },
                ended: { [self] in drop(id) })
        }
    }

    /// The shell has handled a line of client `id`: another may be queued.
    func handled(by id: Int) { clients.withLock { $0[id] }?.slots.signal() }

    /// Client `id` gets every event from now on.
    func follow(_ id: Int) { clients.withLock { $0[id] }?.follows.store(true, ordering: .relaxed) }

    /// Writes `lines` to client `id` (its reply); a client that cannot take them is dropped.
    func reply(to id: Int, _ lines: [String]) {
        guard let client = clients.withLock({ $0[id] }) else { return }
        for line in lines where !client.socket.send(line, waiting: false) {
            return drop(id)
        }
    }

    /// Writes `line` to every follower except `except` (which gets it in its reply).
    func broadcast(_ line: String, except: Int?) {
        let followers = clients.withLock { clients in
            clients.filter { $0.key != except && $0.value.follows.load(ordering: .relaxed) }
        }
        for (id, client) in followers where !client.socket.send(line, waiting: false) { drop(id) }
    }

    private func drop(_ id: Int) {
        guard let client = clients.withLock({ $0.removeValue(forKey: id) }) else { return }
        client.socket.close()
        client.slots.signal()  // a reader waiting for a slot goes on, sees the socket closed, ends
    }

    func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
        for id in clients.withLock({ Array($0.keys) }) { drop(id) }
        unlink(path)
    }
}

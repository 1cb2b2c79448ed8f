import Glibc
import Synchronization

/// A listening Unix stream socket for a delegating player (`--player socket:PATH`): one player
/// at a time; a second connection is told why and closed. The accepted connection is a
/// `LineSocket`; `current` is the one to write to.
final class LineServer: Sendable {
    let path: String
    private let descriptor: Int32
    private let client = Mutex<LineSocket?>(nil)

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Listens at `path` for a delegating player.
    static func listen(path: String) throws(SocketError) -> LineServer {
        LineServer(path: path, descriptor: try listeningDescriptor(path: path, backlog: 4))
    }

    /// A Unix stream socket listening at `path`, readable and writable by this user only. A
    /// socket file left there by an agent that died is replaced; one that a live program still
    /// answers on is not.
    static func listeningDescriptor(path: String, backlog: Int32) throws(SocketError) -> Int32 {
        if (try? LineSocket.connect(path: path, patience: .zero)).map({ $0.close() }) != nil {
            throw SocketError("\(path) is in use by another program", code: EADDRINUSE)
        }
        var status = stat()
        if lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
        var address = try LineSocket.unixAddress(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError("socket(AF_UNIX)") }
        // Created with no permissions for group and others, so there is no moment when another
        // user could connect.
        let mask = umask(0o077)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(mask)
        guard bound == 0, Glibc.listen(descriptor, backlog) == 0 else {
            let error = SocketError("listen on \(path)")
            Glibc.close(descriptor)
            throw error
        }
        return descriptor
    }

    /// The connected player, if any.
    var current: LineSocket? { client.withLock { $0 } }

    /// Accepts players on a thread of its own: `connected` for each one let in (after it became
    /// `current`); `refusal` is written to one that comes while another is connected.
    func start(refusal: String, connected: @escaping @Sendable (LineSocket) -> Void) {
        Self.acceptConnections(on: descriptor) { [self] socket in
            let admitted = client.withLock { current in
                guard current == nil else { return false }
                current = socket
                return true
            }
            guard admitted else {
                socket.send(refusal)
                socket.close()
                return
            }
            connected(socket)
        }
    }

    /// Accepts connections on `descriptor` on a thread of its own, each handed to `accepted` as
    /// a `LineSocket`, until the descriptor is closed.
    static func acceptConnections(on descriptor: Int32, _ accepted: @escaping @Sendable (LineSocket) -> Void) {
        BackgroundThread.start {
            while true {
                let connection = accept(descriptor, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return  // closed
                }
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                accepted(LineSocket(descriptor: connection))
            }
        }
    }

    /// The connection `socket` ended: another player may connect.
    func release(_ socket: LineSocket) {
        client.withLock { current in
            if current === socket { current = nil }
        }
        socket.close()
    }

    func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
        current?.close()
        unlink(path)
    }
}

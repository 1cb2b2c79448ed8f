import CoplayCore
import Glibc
import Synchronization

/// A connected Unix stream socket that carries newline-terminated lines: mpv's JSON IPC. Lines
/// are read on a thread of their own and handed over stamped with the time they arrived; a line
/// longer than `lineBytesMax` is cut there and the rest of it discarded, so memory stays bounded
/// whatever the other side writes.
final class LineSocket: Sendable {
    private let descriptor: Int32
    private let closed = Atomic<Bool>(false)

    init(descriptor: Int32) { self.descriptor = descriptor }

    /// Connects to the socket at `path`, trying again for up to `patience` while it does not
    /// exist yet or refuses (a player that is still starting). `stillWaiting` is asked between
    /// attempts, so that a player that died at start ends the wait with its own error.
    static func connect(
        path: String, patience: Duration, stillWaiting: () throws(SocketError) -> Void = {}
    ) throws(SocketError) -> LineSocket {
        var address = try unixAddress(path)
        let deadline = AgentClock.read(CLOCK_MONOTONIC) + patience.nanoseconds
        while true {
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { throw SocketError("socket(AF_UNIX)") }
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if status == 0 { return LineSocket(descriptor: descriptor) }
            let code = errno
            Glibc.close(descriptor)
            guard code == ENOENT || code == ECONNREFUSED, AgentClock.read(CLOCK_MONOTONIC) < deadline else {
                throw SocketError("connect to \(path)", code: code)
            }
            try stillWaiting()
            usleep(20_000)
        }
    }

    /// The address of the Unix socket at `path` (at most 107 bytes, the kernel's limit).
    static func unixAddress(_ path: String) throws(SocketError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard !pathBytes.isEmpty, pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SocketError("socket path '\(path)' is empty or longer than 107 bytes", code: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in pathBytes.enumerated() { raw[index] = byte }
        }
        return address
    }

    /// Writes one line (a newline is added); false if the other side is gone. With `waiting`
    /// false the write never blocks: a line that does not fit in the socket's buffer (a reader
    /// that does not keep up) fails instead, and the caller drops that reader.
    @discardableResult
    func send(_ line: String, waiting: Bool = true) -> Bool {
        guard !closed.load(ordering: .relaxed) else { return false }
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        var offset = 0
        let flags = Int32(MSG_NOSIGNAL) | (waiting ? 0 : Int32(MSG_DONTWAIT))
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, flags) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Starts the reading thread: `line` for each complete frame (a line, or with `.jsonObjects`
    /// one JSON object), then `ended` once when the other side closes (or `close()` is called).
    func startReading(
        lineBytesMax: Int, framing: Framing = .lines, clock: AgentClock,
        line: @escaping @Sendable ([UInt8], Timestamp) -> Void, ended: @escaping @Sendable () -> Void
    ) {
        let descriptor = self.descriptor
        BackgroundThread.start {
            var framer = Framer(framing, bytesMax: lineBytesMax)
            var chunk = [UInt8](repeating: 0, count: 16384)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return ended() }
                let stamp = clock.now()
                for byte in chunk[0..<count] {
                    if let frame = framer.take(byte) { line(frame, stamp) }
                }
            }
        }
    }

    /// How a connection's bytes are cut into frames: newline-terminated lines (mpv, VLC's script,
    /// a delegating player), or JSON objects written one after another with nothing between them
    /// (Kodi's JSON-RPC over TCP), each ended by the brace that closes it outside any string.
    enum Framing: Sendable { case lines, jsonObjects }

    /// Cuts bytes into frames. A frame longer than `bytesMax` is cut there and the rest of it
    /// discarded (for JSON, up to the brace that closes it), so memory stays bounded whatever the
    /// other side writes; bytes outside a JSON object are skipped.
    struct Framer {
        let framing: Framing
        let bytesMax: Int
        private var pending: [UInt8] = []
        private var overflowing = false
        private var depth = 0
        private var inString = false
        private var escaped = false

        init(_ framing: Framing, bytesMax: Int) {
            (self.framing, self.bytesMax) = (framing, bytesMax)
        }

        /// Takes one byte: the frame it completes, if it completes one.
        mutating func take(_ byte: UInt8) -> [UInt8]? {
            switch framing {
            case .lines:
                if byte == UInt8(ascii: "\n") { return finish() }
                keep(byte)
                return nil
            case .jsonObjects:
                if depth == 0 {
                    guard byte == UInt8(ascii: "{") else { return nil }  // between objects
                    (depth, inString, escaped) = (1, false, false)
                    keep(byte)
                    return nil
                }
                keep(byte)
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                    return nil
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return finish() }
                default: break
                }
                return nil
            }
        }

        private mutating func keep(_ byte: UInt8) {
            guard !overflowing else { return }
            pending.append(byte)
            if pending.count > bytesMax { overflowing = true }
        }

        private mutating func finish() -> [UInt8] {
            defer {
                pending.removeAll(keepingCapacity: true)
                overflowing = false
            }
            return pending
        }
    }

    /// Reads lines on the calling thread and hands each to `handle` until it returns false or
    /// the other side closes; a line longer than `lineBytesMax` is cut there. False if the
    /// connection ended first.
    func readLines(lineBytesMax: Int, _ handle: (String) -> Bool) -> Bool {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            for byte in chunk[0..<count] {
                if byte == UInt8(ascii: "\n") {
                    guard handle(String(decoding: pending, as: UTF8.self)) else { return true }
                    pending.removeAll(keepingCapacity: true)
                } else if pending.count < lineBytesMax {
                    pending.append(byte)
                }
            }
        }
    }

    enum Readiness { case data, closed, nothing }

    /// Waits up to `milliseconds` for something to read, and reads nothing: `data` (bytes wait),
    /// `closed` (the other side closed, or the socket failed), or `nothing` in that time.
    func waitReadable(milliseconds: Int32) -> Readiness {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, milliseconds) > 0 else { return .nothing }
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        if count > 0 { return .data }
        return count < 0 && (errno == EAGAIN || errno == EINTR) ? .nothing : .closed
    }

    /// Waits until the player just started says something on this connection, and reads nothing,
    /// so that a player that exits at start (an option it refused) is an error that says so:
    /// `exited(status)` if it exits first (its status when it comes within a second), `silent` if
    /// it says nothing within `patience`.
    func awaitFirstWord(
        from process: ChildProcess, patience: Duration, exited: (Int32?) -> SocketError, silent: SocketError
    ) throws(SocketError) {
        let deadline = AgentClock.read(CLOCK_MONOTONIC) + patience.nanoseconds
        while true {
            switch waitReadable(milliseconds: 20) {
            case .data: return
            case .closed:
                for _ in 0..<50 {
                    if let status = process.exitStatus() { throw exited(status) }
                    usleep(20_000)
                }
                throw exited(nil)
            case .nothing:
                if let status = process.exitStatus() { throw exited(status) }
                guard AgentClock.read(CLOCK_MONOTONIC) < deadline else { throw silent }
            }
        }
    }

    /// Bytes written and not yet read by the other side (SIOCOUTQ); 0 if unknown.
    var unreadBytes: Int {
        var value: Int32 = 0
        return ioctl(descriptor, UInt(0x5411), &value) == 0 ? Int(value) : 0  // SIOCOUTQ = TIOCOUTQ
    }

    var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// A blocking read gives up after `seconds` (then `readLines` returns false).
    func setReceiveTimeout(seconds: Int) {
        var wait = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Asks the kernel for a send buffer of `bytes` (what a reader may fall behind by).
    func setSendBuffer(bytes: Int) {
        var size = Int32(clamping: bytes)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Closes the connection (the reading thread then ends).
    func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }
}

import Foundation

/// A separate client of an mpv's JSON IPC socket, as a person's keypress or another tool would
/// be: tests and benchmarks read mpv's state through it and act on mpv behind coplay's back.
public final class MpvClient: @unchecked Sendable {
    private let descriptor: Int32
    /// The socket it is connected to.
    public let path: String
    private var buffer: [UInt8] = []
    /// mpv closed the connection (or it failed): no line will come any more.
    private var closed = false
    private var nextID = 1

    /// Connects to the socket at `path`, waiting up to `timeout` for it to appear.
    public init(path: String, timeout: Duration = .seconds(10)) throws {
        self.path = path
        let deadline = ContinuousClock.now + timeout
        while true {
            if let descriptor = Self.connectedUnixSocket(path) {
                self.descriptor = descriptor
                var wait = timeval(tv_sec: 5, tv_usec: 0)
                setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
                return
            }
            guard ContinuousClock.now < deadline else {
                throw NSError(domain: "MpvClient", code: 1, userInfo: [NSLocalizedDescriptionKey: "no mpv at \(path)"])
            }
            usleep(20_000)
        }
    }

    deinit { close(descriptor) }

    /// A stream socket connected to the Unix socket at `path`, or nil (nothing listens there yet).
    static func connectedUnixSocket(_ path: String) -> Int32? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard status == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Sends one command and returns its reply's `data` (nil on an error reply or a timeout),
    /// with the true Unix time in nanoseconds at the middle of the round trip, and the round
    /// trip's length (a reading's time is known to within half of it).
    @discardableResult
    public func command(_ arguments: [Any]) -> (data: Any?, atUnixNanos: Int64, roundTripNanos: Int64) {
        let id = nextID
        nextID += 1
        let request = try! JSONSerialization.data(withJSONObject: ["command": arguments, "request_id": id])
        let sent = Self.unixNanos()
        _ = (request + [UInt8(ascii: "\n")]).withUnsafeBytes {
            send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
        }
        while let line = readLine() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                (object["request_id"] as? NSNumber)?.intValue == id
            else { continue }  // an event, or another client's reply
            let received = Self.unixNanos()
            let middle = sent + (received - sent) / 2
            return ((object["error"] as? String) == "success" ? object["data"] : nil, middle, received - sent)
        }
        return (nil, sent, Self.unixNanos() - sent)
    }

    /// Waits for a `property-change` event of `name` to `value` (after `observe_property`);
    /// returns the true Unix time in nanoseconds it arrived at, or nil after `timeout`.
    public func waitForChange(of name: String, to value: Bool, timeout: Duration) -> Int64? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            // Nothing for 5 s (the socket's receive timeout) is no answer yet: an mpv held paused
            // says nothing. Only mpv gone ends the wait early.
            guard let line = readLine() else {
                if closed { return nil }
                continue
            }
            let arrived = Self.unixNanos()
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                object["event"] as? String == "property-change", object["name"] as? String == name,
                (object["data"] as? Bool) == value
            else { continue }
            return arrived
        }
        return nil
    }

    /// Reads and returns the lines mpv has already sent (events left from before), without
    /// waiting: a benchmark drains them before it presses, so that a change it waits for is the
    /// press's, not one that came earlier (a follower's pause and play around a seek).
    @discardableResult
    public func drainPending() -> [String] {
        var lines: [String] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else {
                if count == 0 { closed = true }
                break
            }
            buffer += chunk[..<count]
        }
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: buffer[..<newline], as: UTF8.self))
            buffer.removeSubrange(...newline)
        }
        return lines
    }

    /// The next event mpv sends (a `property-change` after `observe_property`, …) with the true
    /// Unix time in nanoseconds it arrived at; nil after 5 s without one, or when mpv is gone.
    public func nextEvent() -> (event: [String: Any], atUnixNanos: Int64)? {
        while let line = readLine() {
            let arrived = Self.unixNanos()
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                object["event"] != nil
            else { continue }
            return (object, arrived)
        }
        return nil
    }

    public func property(_ name: String) -> Any? { command(["get_property", name]).data }

    /// How far this mpv's `audio-pts` is ahead of `other`'s, in seconds, `other`'s reading taken
    /// back to the middle of this one's request at the rate it plays. Read over both sockets
    /// `attempts` times, it is the reading whose two round trips were shortest, with its own
    /// uncertainty (half their sum): on a busy machine a reply can wait a millisecond for its
    /// reader, and one reading taken alone is off by half of that.
    public func audioOffset(of other: MpvClient, attempts: Int = 1) -> (offset: Double, uncertainty: Double)? {
        var best: (offset: Double, uncertainty: Double)?
        let speed = other.number("speed") ?? 1
        for _ in 0..<max(1, attempts) {
            let a = command(["get_property", "audio-pts"])
            let b = other.command(["get_property", "audio-pts"])
            guard let x = (a.data as? NSNumber)?.doubleValue, let y = (b.data as? NSNumber)?.doubleValue else {
                continue
            }
            let offset = x - (y - speed * Double(b.atUnixNanos - a.atUnixNanos) / 1e9)
            let uncertainty = Double(a.roundTripNanos + b.roundTripNanos) / 2e9
            if best.map({ uncertainty < $0.uncertainty }) ?? true { best = (offset, uncertainty) }
        }
        return best
    }

    public func number(_ name: String) -> Double? { (property(name) as? NSNumber)?.doubleValue }
    public func set(_ name: String, _ value: Any) { command(["set_property", name, value]) }

    private func readLine() -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 8192)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                // 0: mpv closed the connection; -1 other than the receive timeout: it is unusable.
                if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { closed = true }
                return nil
            }
            buffer += chunk[..<count]
        }
    }

    public static func unixNanos() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// Whether an `mpv` is on PATH.
    public static var isInstalled: Bool { Locations.onPath("mpv") != nil }

    /// Writes a short test file with ffmpeg (a test pattern with a 440 Hz tone), once per path.
    public static func makeTestMedia(at path: String, seconds: Int = 60) throws {
        guard !FileManager.default.fileExists(atPath: path) else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Locations.onPath("ffmpeg").orThrow("ffmpeg is not installed"))
        process.arguments = [
            "-y", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=48000", "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast",
            "-g", "25", "-c:a", "aac", "-b:a", "64k", path + ".part.mkv",
        ]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NSError(domain: "ffmpeg", code: Int(process.terminationStatus))
        }
        try FileManager.default.moveItem(atPath: path + ".part.mkv", toPath: path)
    }
}

extension Optional {
    func orThrow(_ message: String) throws -> Wrapped {
        guard let self else {
            throw NSError(domain: "coplay", code: 1, userInfo: [NSLocalizedDescriptionKey: message])
        }
        return self
    }
}

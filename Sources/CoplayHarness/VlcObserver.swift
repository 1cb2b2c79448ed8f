import Foundation
import Synchronization

/// The benchmark's own reading of a VLC's clock, beside the agent's: coplay's interface script in
/// that VLC connects to this listener on loopback when the agent runs with
/// `COPLAY_VLC_OBSERVE=PORT` (`observeEnvironment`), and writes each step of VLC's clock (its
/// input's `time`, which VLC 3 sets every 250 ms) the moment it sees one, and each pause and
/// unpause. A step's arrival is stamped here: where VLC's own clock stood then.
public final class VlcObserver: Sendable {
    public struct Step: Sendable {
        /// VLC's clock, seconds.
        public var position: Double
        /// When it was seen, true Unix nanoseconds.
        public var atUnixNanos: Int64
    }

    private let listener: Int32
    public let port: Int
    private let steps = Mutex<[Step]>([])
    private let pauses = Mutex<[(paused: Bool, atUnixNanos: Int64)]>([])
    /// The most steps and pauses kept (a benchmark of minutes sees some thousands).
    public static let kept = 100_000

    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 1) == 0
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw NSError(domain: "VlcObserver", code: 1, userInfo: [NSLocalizedDescriptionKey: "no loopback listener"])
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in read() }
    }

    deinit { close(listener) }

    /// The agent's environment that points its VLC's script here.
    public var observeEnvironment: [String: String] { ["COPLAY_VLC_OBSERVE": String(port)] }

    private func read() {
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { return }
        defer { close(connection) }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            let stamp = MpvClient.unixNanos()
            for byte in chunk[0..<count] {
                guard byte == UInt8(ascii: "\n") else {
                    if pending.count < 256 { pending.append(byte) }
                    continue
                }
                let words = String(decoding: pending, as: UTF8.self).split(separator: " ")
                pending.removeAll()
                if words.count == 2, words[0] == "step", let micros = Int64(words[1]) {
                    steps.withLock {
                        if $0.count < Self.kept { $0.append(Step(position: Double(micros) / 1e6, atUnixNanos: stamp)) }
                    }
                } else if words.count == 2, words[0] == "paused" {
                    pauses.withLock { if $0.count < Self.kept { $0.append((words[1] == "1", stamp)) } }
                }
            }
        }
    }

    /// The steps seen since `unixNanos`.
    public func steps(since unixNanos: Int64) -> [Step] { steps.withLock { $0.filter { $0.atUnixNanos >= unixNanos } } }

    /// When VLC last said it paused (or unpaused) after `unixNanos`.
    public func paused(_ paused: Bool, since unixNanos: Int64) -> Int64? {
        pauses.withLock { $0.first { $0.paused == paused && $0.atUnixNanos >= unixNanos }?.atUnixNanos }
    }

    /// VLC's clock minus mpv's at each step seen since `unixNanos`: mpv's position is read through
    /// its own socket just after, and taken back to the step's instant at rate 1 (ms).
    public func offsets(against mpv: MpvClient, since unixNanos: Int64, seconds: Double) -> [Double] {
        var offsets: [Double] = []
        var seen = steps(since: unixNanos).count
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            usleep(2000)
            let all = steps(since: unixNanos)
            guard all.count > seen, let step = all.last else { continue }
            seen = all.count
            let reading = mpv.command(["get_property", "audio-pts"])
            guard let position = (reading.data as? NSNumber)?.doubleValue else { continue }
            let atStep = position - Double(reading.atUnixNanos - step.atUnixNanos) / 1e9
            offsets.append((step.position - atStep) * 1000)
        }
        return offsets
    }

    /// Sends `command` to a VLC's own remote-control interface (`--vlc-option extraintf=oldrc
    /// --vlc-option rc-unix=PATH`), as a person at that VLC would press a key.
    public static func remoteControl(_ path: String, _ command: String) throws {
        guard let descriptor = MpvClient.connectedUnixSocket(path) else {
            throw NSError(domain: "VlcObserver", code: 2, userInfo: [NSLocalizedDescriptionKey: "no VLC rc at \(path)"])
        }
        defer { close(descriptor) }
        let line = Array((command + "\n").utf8)
        _ = line.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    public static var isInstalled: Bool { Locations.onPath("vlc") != nil }
}

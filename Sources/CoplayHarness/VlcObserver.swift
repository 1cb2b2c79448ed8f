import Foundation
import Synchronization

/// One step of a player's clock (VLC's, Kodi's), as a benchmark saw it.
public struct ClockStep: Sendable {
    /// The player's clock, seconds.
    public var position: Double
    /// When the step was seen, true Unix nanoseconds.
    public var atUnixNanos: Int64
}

/// The benchmark's own reading of a VLC's clock, beside the agent's: coplay's interface script in
/// that VLC connects to this listener on loopback when the agent runs with
/// `COPLAY_VLC_OBSERVE=PORT` (`observeEnvironment`), and writes each step of VLC's clock (its
/// input's `time`, which VLC 3 sets every 250 ms) the moment it sees one, and each pause and
/// unpause. A step's arrival is stamped here: where VLC's own clock stood then.
public final class VlcObserver: Sendable {
    public typealias Step = ClockStep

    private let listener: Int32
    public let port: Int
    private let steps = Mutex<[Step]>([])
    private let pauses = Mutex<[(paused: Bool, atUnixNanos: Int64)]>([])
    /// The most steps and pauses kept (a benchmark of minutes sees some thousands).
    public static let kept = 100_000

    /// A listener on 127.0.0.1 of this process's network namespace, or of `namespace` (a name under
    /// /var/run/netns): a VLC started inside one reaches only that namespace's loopback.
    public init(namespace: String? = nil) throws {
        let descriptor = try Self.socketIn(namespace: namespace)
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

    /// A TCP socket made in network namespace `namespace` (this thread enters it for the call and
    /// leaves again; the socket stays of that namespace), or in this one.
    private static func socketIn(namespace: String?) throws -> Int32 {
        guard let namespace else { return socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
        // Glibc's module does not bring `setns` (it is behind _GNU_SOURCE); the C library has it.
        typealias SetNS = @convention(c) (Int32, Int32) -> Int32
        let newNet: Int32 = 0x4000_0000  // CLONE_NEWNET
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "setns") else {
            throw NSError(domain: "VlcObserver", code: 3, userInfo: [NSLocalizedDescriptionKey: "no setns"])
        }
        let setns = unsafeBitCast(symbol, to: SetNS.self)
        let home = open("/proc/thread-self/ns/net", O_RDONLY)
        let there = open("/var/run/netns/\(namespace)", O_RDONLY)
        defer {
            close(home)
            close(there)
        }
        guard home >= 0, there >= 0, setns(there, newNet) == 0 else {
            throw NSError(
                domain: "VlcObserver", code: 3, userInfo: [NSLocalizedDescriptionKey: "cannot enter netns \(namespace)"]
            )
        }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(setns(home, newNet) == 0, "the benchmark's thread could not leave netns \(namespace)")
        return descriptor
    }

    /// The benchmark's own VLC interface script, for a VLC that runs another's script (Syncplay's):
    /// every 2 ms (its wait is where VLC ends it: VLC 3 gives a script no `should_die`) it reads the input's `time` and state, and writes each step of the clock and each
    /// pause and unpause to `COPLAY_VLC_OBSERVE`'s port on loopback, as coplay's own script does.
    /// Installed as `lua/intf/coplayobserve.lua` and started beside the other
    /// (`--extraintf=luaintf{intf=coplayobserve}`).
    public static let script = """
        local port = tonumber(os.getenv("COPLAY_VLC_OBSERVE") or "")
        if port == nil then return end
        local observer = vlc.net.connect_tcp("127.0.0.1", port)
        local lastTime, lastState = nil, nil
        while true do
          local input = vlc.object.input()
          if input then
            local state = vlc.var.get(input, "state")
            if (state == 2 or state == 3) and state ~= lastState then
              vlc.net.write(observer, "paused " .. (state == 3 and "1" or "0") .. "\\n")
            end
            lastState = state
            local value = vlc.var.get(input, "time")
            if value ~= nil and value ~= lastTime then
              lastTime = value
              vlc.net.write(observer, string.format("step %d\\n", value))
            end
          end
          vlc.misc.mwait(vlc.misc.mdate() + 2000)
        end
        """

    /// The agent's environment that points its VLC's script here.
    public var observeEnvironment: [String: String] { ["COPLAY_VLC_OBSERVE": String(port)] }

    /// Each VLC's script connects in turn (a VLC started again after a crash connects anew).
    private func read() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            readSteps(from: connection)
            close(connection)
        }
    }

    private func readSteps(from connection: Int32) {
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

    /// Whether VLC last said it plays (false before it said anything).
    public var isPlaying: Bool { pauses.withLock { $0.last.map { !$0.paused } ?? false } }

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

    /// The running VLCs (not yet reaped ones) that have `text` in their command line.
    public static func pids(naming text: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.filter { entry in
            guard entry.allSatisfy(\.isNumber),
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                let status = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                !status.contains(") Z ")
            else { return false }
            return String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).contains(text)
                && String(decoding: data.prefix(while: { $0 != 0 }), as: UTF8.self).hasSuffix("vlc")
        }.compactMap { Int32($0) }
    }

    /// Writes a program at `path` that starts Debian's VLC with the arguments it is given, as
    /// `nobody` when `asNobody` (VLC refuses root; setpriv, from util-linux): a `--vlc-path`.
    public static func writeLauncher(at path: String, asNobody: Bool) throws {
        let vlc = try Locations.onPath("vlc").orThrow("vlc is not installed")
        let run = asNobody ? "setpriv --reuid=65534 --regid=65534 --clear-groups \(vlc)" : vlc
        try "#!/bin/sh\nexec \(run) \"$@\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
    }

    public static var isInstalled: Bool { Locations.onPath("vlc") != nil }
}

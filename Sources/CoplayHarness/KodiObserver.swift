import Foundation
import Synchronization

/// A Kodi of the test's own, on loopback: a virtual display (Xvfb) with software GL, a PulseAudio
/// whose only sink is a null one (a paced audio clock, as a real sound card gives; ALSA's null
/// device takes samples as fast as they come and Kodi's clock jumps), and Kodi with its JSON-RPC
/// listening on 127.0.0.1:`port` only, everything in `folder` and stopped by `stop()`.
public final class KodiProcess: Sendable {
    public let port: Int
    private let home: String
    private let processes: [Process]

    public static var isInstalled: Bool {
        ["kodi", "Xvfb", "pulseaudio", "setpriv"].allSatisfy { Locations.onPath($0) != nil }
    }

    public init(folder: URL, port: Int) throws {
        self.port = port
        home = folder.appendingPathComponent("home").path
        let fileManager = FileManager.default
        let userdata = folder.appendingPathComponent("home/.kodi/userdata")
        try fileManager.createDirectory(at: userdata, withIntermediateDirectories: true)
        // Remote control from applications on this system only (services.esallinterfaces off:
        // the JSON-RPC listens on loopback), nothing else of Kodi's on the network.
        try """
        <settings version="2">
            <setting id="services.esenabled">true</setting>
            <setting id="services.esallinterfaces">false</setting>
            <setting id="services.webserver">false</setting>
            <setting id="services.zeroconf">false</setting>
            <setting id="services.upnp">false</setting>
            <setting id="services.airplay">false</setting>
            <setting id="general.addonupdates">2</setting>
        </settings>
        """.write(to: userdata.appendingPathComponent("guisettings.xml"), atomically: true, encoding: .utf8)
        try """
        <advancedsettings version="1.0"><jsonrpc><compactoutput>true</compactoutput>\
        <tcpport>\(port)</tcpport></jsonrpc></advancedsettings>
        """.write(to: userdata.appendingPathComponent("advancedsettings.xml"), atomically: true, encoding: .utf8)
        // PulseAudio refuses root: it runs as nobody, in folders of nobody's.
        let pulse = folder.appendingPathComponent("pulse")
        let socketFolder = pulse.appendingPathComponent("socket")
        for made in [pulse, pulse.appendingPathComponent("run"), socketFolder] {
            try fileManager.createDirectory(at: made, withIntermediateDirectories: true)
            chown(made.path, 65534, 65534)
            chmod(made.path, 0o755)
        }
        chmod(folder.path, 0o755)
        let socket = socketFolder.appendingPathComponent("native").path
        let script = pulse.appendingPathComponent("default.pa")
        try """
        load-module module-null-sink sink_name=coplay
        load-module module-native-protocol-unix socket=\(socket) auth-anonymous=1
        set-default-sink coplay

        """.write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o644)
        let display = Self.freeDisplay()
        let log = folder.appendingPathComponent("kodi-stdout.log")
        _ = fileManager.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        func start(_ arguments: [String], environment: [String: String] = [:]) throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try Locations.onPath(arguments[0]).orThrow(arguments[0]))
            process.arguments = Array(arguments.dropFirst())
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardInput = FileHandle.nullDevice
            (process.standardOutput, process.standardError) = (output, output)
            try process.run()
            return process
        }
        let run = pulse.appendingPathComponent("run").path
        var started: [Process] = []
        do {
            started.append(
                try start([
                    "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=\(run)",
                    "XDG_RUNTIME_DIR=\(run)", "pulseaudio", "-n", "-F", script.path, "--exit-idle-time=-1",
                    "--daemonize=no", "--use-pid-file=no", "--disable-shm=yes",
                ]))
            started.append(try start(["Xvfb", ":\(display)", "-screen", "0", "1280x720x24", "-nolisten", "tcp"]))
            usleep(500_000)
            started.append(
                try start(
                    ["kodi", "--standalone", "--windowing=x11"],
                    environment: [
                        "HOME": home, "DISPLAY": ":\(display)",
                        "LIBGL_ALWAYS_SOFTWARE": "1", "KODI_AE_SINK": "PULSE", "PULSE_SERVER": "unix:\(socket)",
                    ]))
        } catch {
            for process in started { kill(process.processIdentifier, SIGKILL) }
            throw error
        }
        processes = started
        guard Self.waitForAnswer(port: port, seconds: 40) else {
            stop()
            throw NSError(
                domain: "KodiProcess", code: 1,
                userInfo: [NSLocalizedDescriptionKey: "Kodi did not answer on 127.0.0.1:\(port) in 40 s (\(log.path))"])
        }
    }

    /// Kodi's own process (kodi.bin, under the `kodi` script), found by the home folder in its
    /// environment: the one to stop or kill.
    public var kodiPIDs: [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard entry.allSatisfy(\.isNumber),
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: data.prefix(while: { $0 != 0 }), as: UTF8.self).hasSuffix("kodi.bin"),
                let environment = FileManager.default.contents(atPath: "/proc/\(entry)/environ"),
                String(decoding: environment, as: UTF8.self).contains("HOME=\(home)\u{0}")
            else { return nil }
            return Int32(entry)
        }
    }

    public func stop() {
        for pid in kodiPIDs { kill(pid, SIGKILL) }
        // Killed, then waited for a while: Foundation's `waitUntilExit` has been seen to wait for
        // good on the `kodi` script once its kodi.bin was killed.
        for process in processes.reversed() where process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for _ in 0..<100 where processes.contains(where: \.isRunning) { usleep(20_000) }
    }

    static func freeDisplay() -> Int {
        for number in 60..<200 where !FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") {
            if !FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") { return number }
        }
        return 200
    }

    /// Whether Kodi's JSON-RPC answers on loopback within `seconds`.
    public static func waitForAnswer(port: Int, seconds: Double) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let client = try? KodiClient(port: port), client.call("JSONRPC.Ping", nil) != nil { return true }
            usleep(250_000)
        }
        return false
    }
}

/// The benchmark's own JSON-RPC connection to a Kodi on loopback: requests answered in order,
/// and Kodi's notifications kept with when they came.
public final class KodiClient: @unchecked Sendable {
    private let descriptor: Int32
    private var pending: [UInt8] = []
    private let lock = NSLock()
    private let notices = Mutex<[(method: String, atUnixNanos: Int64)]>([])
    private var nextID = 1

    public init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(descriptor)
            throw NSError(domain: "KodiClient", code: 1, userInfo: [NSLocalizedDescriptionKey: "no Kodi on \(port)"])
        }
        var wait = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// Calls `method`; its result (nil on an error or no answer in 3 s), and when it was sent and
    /// answered (Unix nanoseconds).
    @discardableResult
    public func call(_ method: String, _ params: [String: Any]?) -> (result: Any, sent: Int64, answered: Int64)? {
        lock.lock()
        defer { lock.unlock() }
        let id = nextID
        nextID += 1
        var message: [String: Any] = ["jsonrpc": "2.0", "id": id, "method": method]
        if let params { message["params"] = params }
        guard let data = try? JSONSerialization.data(withJSONObject: message) else { return nil }
        let sent = MpvClient.unixNanos()
        guard data.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == data.count
        else {
            return nil
        }
        while let object = nextObject() {
            if (object["id"] as? NSNumber)?.intValue == id {
                guard let result = object["result"] else { return nil }
                return (result, sent, MpvClient.unixNanos())
            }
        }
        return nil
    }

    /// The next object Kodi wrote, its notifications kept on the way.
    private func nextObject() -> [String: Any]? {
        while true {
            if let end = Self.objectEnd(pending) {
                let bytes = Array(pending[..<end])
                pending.removeFirst(end)
                guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
                    continue
                }
                if let method = object["method"] as? String {
                    let stamp = MpvClient.unixNanos()
                    notices.withLock { if $0.count < VlcObserver.kept { $0.append((method, stamp)) } }
                    continue
                }
                return object
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            pending += chunk[0..<count]
        }
    }

    /// Where the first JSON object in `bytes` ends (after its closing brace), counting braces
    /// outside strings; nil if it is not complete yet.
    static func objectEnd(_ bytes: [UInt8]) -> Int? {
        var (depth, inString, escaped) = (0, false, false)
        for (index, byte) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == 0x5C {
                    escaped = true
                } else if byte == 0x22 {
                    inString = false
                }
                continue
            }
            switch byte {
            case 0x22: inString = true
            case 0x7B, 0x5B: depth += 1
            case 0x7D, 0x5D:
                depth -= 1
                if depth == 0 { return index + 1 }
            default: break
            }
        }
        return nil
    }

    /// When Kodi last said `method` (`Player.OnPause`, say) after `unixNanos`.
    public func notified(_ method: String, since unixNanos: Int64) -> Int64? {
        notices.withLock { $0.first { $0.method == method && $0.atUnixNanos >= unixNanos }?.atUnixNanos }
    }

    /// Kodi's time, seconds, and its speed, read now.
    public func time() -> (position: Double, speed: Int, sent: Int64, answered: Int64)? {
        guard let answer = call("Player.GetProperties", ["playerid": 1, "properties": ["time", "speed"]]),
            let result = answer.result as? [String: Any], let time = result["time"] as? [String: Any],
            let speed = (result["speed"] as? NSNumber)?.intValue
        else { return nil }
        func part(_ key: String) -> Double { (time[key] as? NSNumber)?.doubleValue ?? 0 }
        let position = part("hours") * 3600 + part("minutes") * 60 + part("seconds") + part("milliseconds") / 1000
        return (position, speed, answer.sent, answer.answered)
    }

    /// Kodi's clock minus mpv's at each step of Kodi's time seen in `seconds` (ms): Kodi's time
    /// (which it updates about every 200 ms) is read every 2 ms, a step is placed midway between
    /// the readings either side of it, and mpv's position is read through its own socket just
    /// after and taken back to the step's instant at rate 1.
    public func offsets(against mpv: MpvClient, seconds: Double) -> [Double] {
        steppedOffsets(against: mpv, seconds: seconds).offsets
    }

    /// `offsets(against:seconds:)`, with the steps of Kodi's clock they were taken at.
    public func steppedOffsets(against mpv: MpvClient, seconds: Double) -> (offsets: [Double], steps: [ClockStep]) {
        var offsets: [Double] = []
        var steps: [ClockStep] = []
        var previous: (position: Double, at: Int64)?
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            usleep(2000)
            guard let reading = time() else { continue }
            let middle = reading.sent + (reading.answered - reading.sent) / 2
            defer { previous = (reading.position, middle) }
            guard reading.speed == 1, let last = previous, last.position != reading.position else { continue }
            let edge = last.at + (middle - last.at) / 2
            steps.append(ClockStep(position: reading.position, atUnixNanos: edge))
            let mpvReading = mpv.command(["get_property", "audio-pts"])
            guard let position = (mpvReading.data as? NSNumber)?.doubleValue else { continue }
            let atEdge = position - Double(mpvReading.atUnixNanos - edge) / 1e9
            offsets.append((reading.position - atEdge) * 1000)
        }
        return (offsets, steps)
    }

    /// How finely Kodi's time moves while it plays: the median step of its time read every 2 ms
    /// for `seconds` (ms).
    public func clockStep(seconds: Double) -> Double? {
        var steps: [Double] = []
        var last: Double?
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            usleep(2000)
            guard let reading = time(), reading.speed == 1 else { continue }
            if let last, reading.position != last { steps.append((reading.position - last) * 1000) }
            last = reading.position
        }
        return steps.isEmpty ? nil : Distribution(steps).percentile(0.5)
    }
}

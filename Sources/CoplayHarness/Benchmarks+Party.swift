import Foundation

/// `coplay-bench party`: a watch party on loopback, as its host starts it. How soon the link is
/// printed; what is left after a SIGKILL and after a Ctrl-C; and the party's web server as a
/// media server: a 4 GiB sparse film read by three clients at once (throughput, the party's
/// memory), its end and beyond it, paths outside what was named, an oversized head, 1,000 idle
/// connections while a page loads, and a reader that stops reading.
extension Benchmarks {
    public static func party(coplay: String, runs: Int) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-bench-party-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let page = folder.appendingPathComponent("page")
        let runtime = folder.appendingPathComponent("run")
        for sub in [page, runtime] {
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        }
        try Data("<!doctype html><title>party</title>".utf8).write(to: page.appendingPathComponent("index.html"))
        let film = folder.appendingPathComponent("film.mp4").path
        let size = 4 << 30
        guard
            let handle = FileHandle(forWritingAtPath: film)
                ?? {
                    _ = FileManager.default.createFile(atPath: film, contents: nil)
                    return FileHandle(forWritingAtPath: film)
                }()
        else {
            throw Benchmarks.BenchError(
                description: "cannot write \(film)")
        }
        try handle.truncate(atOffset: UInt64(size))
        try handle.seek(toOffset: UInt64(size - 4))
        handle.write(Data([1, 2, 3, 4]))
        try handle.close()

        func start() throws -> (AgentProcess, link: String, media: URL, ContinuousClock.Instant) {
            let started = ContinuousClock.now
            let host = try AgentProcess(
                executable: coplay, name: "host", subcommand: ["party", film],
                arguments: [
                    "--listen", "127.0.0.1", "--interface", "lo", "--group", "239.255.77.1:\(47_000 + getpid() % 500)",
                    "--player", "none", "--no-qr", "--root", page.path,
                ],
                environment: ["XDG_RUNTIME_DIR": runtime.path])
            guard let event = host.waitForEvent(timeout: .seconds(10), where: { $0.name == "party" }),
                let link = event["link"] as? String, let item = (event["items"] as? [String])?.first,
                let media = URL(string: item)
            else {
                throw Benchmarks.BenchError(
                    description: "the party printed no link: \(host.diagnostics.suffix(5))")
            }
            return (host, link, media, started)
        }

        // The link, and the ends.
        var linkMillis: [Double] = []
        var killMillis: [Double] = []
        var leftAfterKill = 0
        for _ in 0..<runs {
            let (host, _, _, started) = try start()
            linkMillis.append(Double((ContinuousClock.now - started) / .milliseconds(1)))
            let server = partyRelayServer(of: host)
            let killed = ContinuousClock.now
            host.signal(SIGKILL)
            while let server, isRunning(server), ContinuousClock.now - killed < .seconds(5) { usleep(2_000) }
            killMillis.append(Double((ContinuousClock.now - killed) / .milliseconds(1)))
            if let server, isRunning(server) {
                leftAfterKill += 1
                kill(server, SIGKILL)
            }
        }
        let (host, link, media, _) = try start()
        print("party: \(runs) starts on loopback (--player none)")
        print("  link printed after the start, ms: \(describe(linkMillis))")
        print("  SIGKILL → nats-server gone, ms: \(describe(killMillis)); left running: \(leftAfterKill)")

        // The media server.
        let end = try HTTP.get(media, headers: ["Range: bytes=\(size - 4)-"])
        let beyond = try HTTP.get(media, headers: ["Range: bytes=\(size)-"])
        print(
            "  4 GiB film: its last 4 bytes → \(end.status) \(end.body == Data([1, 2, 3, 4]) ? "right" : "WRONG"); beyond its end → \(beyond.status)"
        )
        let residentBefore = residentKiB(host.pid)
        let readers = 3
        let bytesEach = 1 << 30
        let peak = SharedTally()
        let sampling = Thread {
            while !Thread.current.isCancelled {
                peak.record(residentKiB(host.pid))
                usleep(50_000)
            }
        }
        sampling.start()
        let began = ContinuousClock.now
        let read = SharedTally()
        DispatchQueue.concurrentPerform(iterations: readers) { index in
            let from = index * bytesEach
            read.add((try? HTTP.count(media, headers: ["Range: bytes=\(from)-\(from + bytesEach - 1)"])) ?? 0)
        }
        let seconds = Double((ContinuousClock.now - began) / .milliseconds(1)) / 1000
        sampling.cancel()
        let total = read.total
        print(
            String(
                format:
                    "  %d readers of 1 GiB ranges at once: %.0f MB/s in all; the party's RSS %.1f MiB before, %.1f MiB at most while read%@",
                readers, Double(total) / seconds / 1e6, Double(residentBefore) / 1024,
                Double(max(peak.value, residentBefore)) / 1024, total == readers * bytesEach ? "" : " (SHORT READS)"))

        // Hostile requests.
        let base = "http://\(media.host!):\(media.port!)"
        let hostile = [
            "/media/film.mp4", "/media/x/film.mp4", media.path + "/../../etc/passwd",
            media.deletingLastPathComponent().path + "/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/etc/passwd",
            media.deletingLastPathComponent().path + "/..%2f..%2fetc%2fpasswd",
        ]
        let statuses = try hostile.map { try HTTP.get(URL(string: base + $0)!).status }
        let oversized = try HTTP.get(
            URL(string: base + "/")!, headers: ["X-Pad: " + String(repeating: "a", count: 9000)])
        print(
            "  paths outside what was named (\(hostile.count)): \(statuses.map(String.init).joined(separator: ",")); a 9 KB head: \(oversized.status)"
        )

        // 1,000 idle connections, then the page.
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = min(limit.rlim_max, 4096)
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        var idle: [Int32] = []
        for _ in 0..<1000 { if let socket = HTTP.connect(media) { idle.append(socket) } }
        usleep(300_000)
        let pageStarted = ContinuousClock.now
        let pageAnswer = try? HTTP.get(URL(string: link)!)
        let pageMillis = Double((ContinuousClock.now - pageStarted) / .microseconds(1)) / 1000
        var closedByServer = 0
        for socket in idle {
            var probe = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            if poll(&probe, 1, 0) > 0 { closedByServer += 1 }
            close(socket)
        }
        print(
            String(
                format:
                    "  %d idle connections held open: the page → %@ in %.1f ms; %d of them closed by the server to make room",
                idle.count, pageAnswer.map { "\($0.status)" } ?? "NO ANSWER", pageMillis, closedByServer))

        // A reader that stops reading is closed once idle (10 s).
        if let stalled = try? HTTP.send(media, headers: []) {
            let stopped = ContinuousClock.now
            sleep(12)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var received = 0
            var count = 0
            repeat {
                count = recv(stalled, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 { received += count }
            } while count > 0
            let ended = count == 0 || (count < 0 && errno != EAGAIN)
            close(stalled)
            print(
                "  a reader that stopped reading: \(ended ? "closed by the server" : "STILL OPEN") after \(Int((ContinuousClock.now - stopped) / .seconds(1))) s, \(received >> 20) MiB of 4096 sent"
            )
        }
        host.signal(SIGINT)
        let status = host.waitForExit(timeout: .seconds(8))
        let left = (try? FileManager.default.contentsOfDirectory(atPath: runtime.path)) ?? []
        print(
            "  Ctrl-C: exit \(status.map(String.init) ?? "none"); left on disk: \(left.count); children left: \(children(of: host.pid).count)"
        )
    }

    /// The party's nats-server: a grandchild, under the watchdog `sh`.
    static func partyRelayServer(of party: AgentProcess) -> Int32? {
        for watchdog in children(of: party.pid) where watchdog.name == "sh" {
            if let server = children(of: watchdog.pid).first(where: { $0.name == "nats-server" }) { return server.pid }
        }
        return nil
    }

    static func children(of pid: Int32) -> [(pid: Int32, name: String)] { ProcessTable.children(of: pid) }
    static func isRunning(_ pid: Int32) -> Bool { ProcessTable.isRunning(pid) }

    static func describe(_ values: [Double]) -> String {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return "none" }
        return String(format: "p50 %.0f, max %.0f", sorted[sorted.count / 2], sorted.last!)
    }
}

/// The largest value recorded, and the sum of those added, from any thread.
final class SharedTally: @unchecked Sendable {
    private let lock = NSLock()
    private var largest = 0
    private var sum = 0
    func record(_ value: Int) {
        lock.lock()
        largest = max(largest, value)
        lock.unlock()
    }
    func add(_ value: Int) {
        lock.lock()
        sum += value
        lock.unlock()
    }
    var total: Int {
        lock.lock()
        defer { lock.unlock() }
        return sum
    }
    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return largest
    }
}

/// HTTP/1.1 on a real socket, as a browser speaks it to the party's server.
public enum HTTP {
    /// A connected TCP socket to the URL's host and port, or nil.
    static func connect(_ url: URL) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(url.port ?? 80).bigEndian
        inet_pton(AF_INET, url.host ?? "", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    static func request(_ url: URL, headers: [String]) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components.map { $0.percentEncodedPath.isEmpty ? "/" : $0.percentEncodedPath } ?? "/"
        return "GET \(path) HTTP/1.1\r\nHost: \(url.host ?? "")\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n"
    }

    /// A connected socket with the GET for `url` sent on it; the caller reads and closes it.
    static func send(_ url: URL, headers: [String]) throws -> Int32 {
        guard let descriptor = connect(url) else {
            throw Benchmarks.BenchError(description: "cannot connect to \(url)")
        }
        let text = request(url, headers: headers)
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.send(descriptor, $0.baseAddress, $0.count - 1, 0) }
        return descriptor
    }

    /// A GET: the status, the head and the body (read to the end: the server closes).
    public static func get(_ url: URL, headers: [String] = []) throws -> (status: Int, head: String, body: Data) {
        let descriptor = try send(url, headers: headers)
        defer { close(descriptor) }
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            reply.append(contentsOf: buffer[0..<count])
        }
        guard let end = reply.range(of: Data("\r\n\r\n".utf8)) else {
            throw Benchmarks.BenchError(description: "no answer from \(url)")
        }
        let head = String(decoding: reply[..<end.lowerBound], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, head, Data(reply[end.upperBound...]))
    }

    /// A GET whose body is counted, not kept: the bytes of the body received.
    static func count(_ url: URL, headers: [String]) throws -> Int {
        let descriptor = try send(url, headers: headers)
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total = 0
        var headSeen = false
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            if !headSeen, let end = Data(buffer[0..<count]).range(of: Data("\r\n\r\n".utf8)) {
                headSeen = true
                total += count - end.upperBound
            } else {
                total += count
            }
        }
        return total
    }
}

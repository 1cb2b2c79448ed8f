import CoplayCore
import Glibc

/// `coplay web` and the party's web server: serves the browser page and its module to the
/// devices of a home, and media files from disk as a media server does. HTTP/1.1 GET and HEAD:
/// the page's files are read once at the start and held in memory; a media file is opened per
/// request and streamed from disk (`sendfile`), in one byte range if asked, so memory stays flat
/// whatever its size. Every request is hostile until read: a bounded head, a bounded number of
/// connections, an idle limit, names checked against what was named. A bad request gets a 4xx,
/// is counted, and the server goes on.
public struct WebServer: Sendable {
    /// The bounds, each with its reason.
    public struct Limits: Sendable {
        /// A request's head: a browser's GET is under 2 KiB; 8 KiB is what many servers allow.
        public var requestHeadBytesMax = 8192
        /// Open connections: a page needs a handful at once (page, style, scripts, module), a
        /// video one or two; a room of phones fits. A full table makes room by closing the
        /// connection idle longest without a request, so a flood of idle connections neither
        /// grows the table nor keeps the page from loading.
        public var connectionsMax = 64
        /// A connection that makes no progress (no request, no byte taken) in this long is
        /// closed: a slow sender or a stopped reader keeps no slot.
        public var idleSeconds = 10
        /// The most one connection is sent in one turn of the loop: three phones reading a film
        /// share the server, none waits behind another's whole file.
        public var sendTurnBytesMax = 1 << 20
        /// The folder's files: the page is six, the module about 1 MB.
        public var filesMax = 32
        public var totalBytesMax = 16 << 20
        public init() {}
    }

    public struct File: Sendable {
        public var bytes: [UInt8]
        public var contentType: String
    }

    public var files: [String: File] = [:]
    /// Media served from disk (`--media`, a party's files); nil: none.
    public var media: MediaLibrary?
    public var limits = Limits()
    /// Requests served, and refused by status.
    public private(set) var served = 0
    public private(set) var refused: [Int: Int] = [:]
    /// Connections closed to make room for a new one, and for making no progress.
    public private(set) var evicted = 0
    public private(set) var timedOut = 0

    public init(files: [String: File], media: MediaLibrary? = nil, limits: Limits = Limits()) {
        self.files = files
        self.media = media
        self.limits = limits
    }

    /// The files of `root` (not its subfolders), within the limits.
    public static func load(root: String, limits: Limits = Limits()) -> Result<[String: File], UsageError> {
        guard let directory = opendir(root) else {
            return .failure(
                UsageError(
                    message:
                        "cannot read the page's folder \(root): \(String(cString: strerror(errno))). \(pageRemedy)"))
        }
        defer { closedir(directory) }
        var files: [String: File] = [:]
        var total = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard isServable(name), isRegularFile(root + "/" + name) else { continue }
            guard let bytes = readWholeFile(root + "/" + name, bytesMax: limits.totalBytesMax - total) else {
                return .failure(
                    UsageError(
                        message:
                            "\(root)/\(name) cannot be read, or takes the folder past \(limits.totalBytesMax >> 20) MiB: --root is the page's folder, held in memory; serve films with --media PATH"
                    ))
            }
            total += bytes.count
            files[name] = File(bytes: bytes, contentType: contentType(of: name))
            guard files.count <= limits.filesMax else {
                return .failure(
                    UsageError(message: "\(root) holds more than \(limits.filesMax) files: is it the page's folder?"))
            }
        }
        guard files["index.html"] != nil else {
            return .failure(
                UsageError(message: "\(root) has no index.html: is it the page's folder? \(pageRemedy)"))
        }
        return .success(files)
    }

    /// What to do when the page is not where it was looked for.
    static let pageRemedy =
        "The Debian package installs the page in /usr/share/coplay/web, the README's install in "
        + "/usr/local/share/coplay/web; in a checkout, build it with Tools/wasm-core --build-only (it needs "
        + "Debian's binaryen), or name its folder with --root DIR"

    /// A name the server may answer for: letters, digits, dot, dash and underscore, not hidden.
    static func isServable(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.first != UInt8(ascii: ".")
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }

    static func contentType(of name: String) -> String {
        let types: [(String, String)] = [
            (".html", "text/html; charset=utf-8"), (".css", "text/css; charset=utf-8"),
            (".js", "text/javascript; charset=utf-8"), (".mjs", "text/javascript; charset=utf-8"),
            (".wasm", "application/wasm"), (".svg", "image/svg+xml"), (".png", "image/png"),
            (".json", "application/json"),
        ]
        return types.first { name.hasSuffix($0.0) }?.1 ?? MediaLibrary.contentType(of: name)
    }

    static func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }

    static func readWholeFile(_ path: String, bytesMax: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, Int(status.st_size) <= bytesMax
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + done, $0.count - done) }
            guard count > 0 else { return nil }
            done += count
        }
        return bytes
    }

    // MARK: Requests

    /// What answers one request: a head, and a body from memory or from a file on disk.
    public struct Response {
        public enum Body {
            case none
            case bytes(ArraySlice<UInt8>)
            /// `range` of the open file `descriptor`, which the connection owns and closes.
            case file(descriptor: Int32, range: Range<Int>)
        }
        public var head: [UInt8]
        public var body: Body
        /// The status code, for the request log.
        public var status: Int
    }

    /// The response to one request head (the bytes up to and including the blank line).
    public mutating func respond(to head: [UInt8]) -> Response {
        let text = String(decoding: head, as: UTF8.self)
        let requestLine = text.split(separator: "\r\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let words = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 3, words[2] == "HTTP/1.1" || words[2] == "HTTP/1.0" else {
            return refuse(400, "Bad Request")
        }
        let method = words[0]
        guard method == "GET" || method == "HEAD" else { return refuse(405, "Method Not Allowed", allow: true) }
        var path = Substring(words[1])
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        guard path.hasPrefix("/") else { return refuse(400, "Bad Request") }
        let range = Self.header("range", in: text)
        let headOnly = method == "HEAD"
        if let media, let file = media.path(forRequest: path) {
            return respondWithFile(file, range: range, headOnly: headOnly)
        }
        if let media, let (body, type) = media.subtitles(forRequest: path) {
            let answer = partialAnswer(range, count: body.count, contentType: type)
            guard let span = answer.range else { return answer.refusal! }
            return Response(head: answer.head, body: headOnly ? .none : .bytes(body[span]), status: answer.status)
        }
        let name = path == "/" ? "index.html" : String(path.dropFirst())
        guard WebServer.isServable(name), let file = files[name] else { return refuse(404, "Not Found") }
        let answer = partialAnswer(range, count: file.bytes.count, contentType: file.contentType)
        guard let span = answer.range else { return answer.refusal! }
        return Response(
            head: answer.head, body: headOnly ? .none : .bytes(file.bytes[span]), status: answer.status)
    }

    /// A media file from disk: opened for this request, its size read from the open file.
    private mutating func respondWithFile(_ path: String, range: Substring?, headOnly: Bool) -> Response {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return refuse(404, "Not Found") }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            return refuse(404, "Not Found")
        }
        let answer = partialAnswer(range, count: Int(status.st_size), contentType: MediaLibrary.contentType(of: path))
        guard let span = answer.range, !headOnly, !span.isEmpty else {
            close(descriptor)
            return answer.refusal ?? Response(head: answer.head, body: .none, status: answer.status)
        }
        return Response(head: answer.head, body: .file(descriptor: descriptor, range: span), status: answer.status)
    }

    /// The head for `count` bytes of a `contentType`, whole or the one range asked for (RFC 9110
    /// 14.2: a browser needs ranges to seek in a media file); a refusal (416) for a range outside.
    /// Several ranges at once are answered with the whole (a server may ignore a Range).
    private mutating func partialAnswer(_ value: Substring?, count: Int, contentType: String) -> (
        head: [UInt8], range: Range<Int>?, status: Int, refusal: Response?
    ) {
        var range = 0..<count
        var status = 200
        if let value, !value.contains(",") {
            guard let asked = Self.byteRange(value, count: count) else {
                refused[416, default: 0] += 1
                let head = Array(
                    ("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(count)\r\n"
                        + "Content-Length: 0\r\nConnection: close\r\n\r\n").utf8)
                return (head, nil, 416, Response(head: head, body: .none, status: 416))
            }
            range = asked
            status = 206
        }
        served += 1
        let header =
            "HTTP/1.1 \(status == 206 ? "206 Partial Content" : "200 OK")\r\nContent-Type: \(contentType)\r\n"
            + "Content-Length: \(range.count)\r\n"
            + (status == 206 ? "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(count)\r\n" : "")
            + "Accept-Ranges: bytes\r\nCache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n"
            + "Referrer-Policy: no-referrer\r\n\(Self.isolation)Connection: close\r\n\r\n"
        return (Array(header.utf8), range, status, nil)
    }

    /// The page is served cross-origin isolated, so that its clock (`performance.now()`, in the
    /// page and its Worker) is fine: Firefox's moves in steps of 1 ms otherwise, 20 µs isolated;
    /// Chromium's 100 µs, 5 µs (`Tools/web/clock-probe`). `credentialless`, not `require-corp`:
    /// a film on another server still loads (without cookies) though it sends no
    /// Cross-Origin-Resource-Policy. WebKit knows no `credentialless` and serves the page as
    /// before. The page opens no other window, so the opener policy costs nothing.
    static let isolation =
        "Cross-Origin-Opener-Policy: same-origin\r\nCross-Origin-Embedder-Policy: credentialless\r\n"

    /// A header's value (the first of that name, case-insensitive).
    static func header(_ name: String, in head: String) -> Substring? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name else { continue }
            return line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
        }
        return nil
    }

    /// `bytes=A-B`, `bytes=A-` or `bytes=-N` within a file of `count` bytes; nil when it is none
    /// of these or lies outside the file.
    static func byteRange(_ value: Substring, count: Int) -> Range<Int>? {
        guard value.hasPrefix("bytes="), count > 0 else { return nil }
        let spec = value.dropFirst(6)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count <= 18, parts[1].utf8.count <= 18 else { return nil }
        if parts[0].isEmpty {
            guard let suffix = Int(parts[1]), suffix > 0 else { return nil }
            return max(0, count - suffix)..<count
        }
        guard let first = Int(parts[0]), first < count else { return nil }
        if parts[1].isEmpty { return first..<count }
        guard let last = Int(parts[1]), last >= first else { return nil }
        return first..<min(last + 1, count)
    }

    mutating func refuse(_ status: Int, _ reason: String, allow: Bool = false) -> Response {
        refused[status, default: 0] += 1
        let body = "\(status) \(reason)\n"
        let head =
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n"
            + (allow ? "Allow: GET, HEAD\r\n" : "") + "Connection: close\r\n\r\n"
        return Response(head: Array(head.utf8), body: .bytes(Array(body.utf8)[...]), status: status)
    }

    // MARK: Serving

    private struct Connection {
        var descriptor: Int32
        var head: [UInt8] = []
        /// The response's head and in-memory body, sent first.
        var reply: [UInt8] = []
        var sent = 0
        /// A file body, sent after `reply`: its descriptor and what is left of its range.
        var file: (descriptor: Int32, next: Int, end: Int)?
        /// When it last made progress (its request arrived, or bytes went out).
        var activeAt: Int64
        var answered: Bool { !reply.isEmpty }
    }

    /// A listening TCP socket on `host`:`port` (0: any free port), and the port it got.
    public static func listen(host: String, port: UInt16) -> Result<(descriptor: Int32, port: UInt16), UsageError> {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            return .failure(UsageError(message: "\(host.prefix(60)) is not an IPv4 address"))
        }
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { return .failure(UsageError(message: "socket: \(String(cString: strerror(errno)))")) }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(listener, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(listener)
            return .failure(UsageError(message: "cannot listen on \(host):\(port): \(reason)"))
        }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        return .success((listener, UInt16(bigEndian: local.sin_port)))
    }

    /// Serves on `host`:`port` until killed (or `requestsMax` responses, for tests), printing a
    /// line per request to standard output.
    public mutating func serve(host: String, port: UInt16, requestsMax: Int? = nil) -> Int32 {
        switch Self.listen(host: host, port: port) {
        case .failure(let error):
            StandardStreams.writeError("coplay web: \(error.message)")
            return 1
        case .success(let listening):
            StandardStreams.writeOutput(
                "coplay web: serving \(files.count) files"
                    + (media.map { " and media under \($0.prefix)" } ?? "")
                    + " at http://\(host):\(listening.port)/ (Ctrl-C stops)")
            serve(listener: listening.descriptor, requestsMax: requestsMax, log: true)
            return 0
        }
    }

    /// Serves on a listening socket until killed (or `requestsMax` responses). `log`: a line per
    /// request to standard output.
    public mutating func serve(listener: Int32, requestsMax: Int? = nil, log: Bool) {
        signal(SIGPIPE, SIG_IGN)
        var connections: [Connection] = []
        var responses = 0
        defer {
            for connection in connections { finish(connection) }
            close(listener)
        }
        while requestsMax.map({ responses < $0 }) ?? true {
            var polls = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            polls += connections.map {
                pollfd(fd: $0.descriptor, events: Int16($0.answered ? POLLOUT : POLLIN), revents: 0)
            }
            guard poll(&polls, nfds_t(polls.count), 1000) >= 0 || errno == EINTR else { return }
            let now = Self.seconds()
            var open: [Connection] = []
            for (index, var connection) in connections.enumerated() {
                let events = polls[index + 1].revents
                var keep = now - connection.activeAt < Int64(limits.idleSeconds)
                if !keep { timedOut += 1 }
                if keep, !connection.answered, events & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    keep = readRequest(&connection, responses: &responses, now: now, log: log)
                }
                if keep, connection.answered, events & Int16(POLLOUT | POLLHUP | POLLERR) != 0 {
                    keep = write(&connection, now: now)
                }
                if keep { open.append(connection) } else { finish(connection) }
            }
            connections = open
            if polls[0].revents & Int16(POLLIN) != 0 { accept(listener, into: &connections, now: now) }
        }
    }

    /// Takes a new connection. With the table full, the connection idle longest without a
    /// request makes room (a flood of idle connections cannot keep the page from loading); when
    /// every one is busy, the newcomer gets a 503.
    private mutating func accept(_ listener: Int32, into connections: inout [Connection], now: Int64) {
        let accepted = Glibc.accept(listener, nil, nil)
        guard accepted >= 0 else { return }
        _ = fcntl(accepted, F_SETFD, FD_CLOEXEC)
        _ = fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) | O_NONBLOCK)
        if connections.count >= limits.connectionsMax {
            let idle = connections.indices.filter { !connections[$0].answered && connections[$0].head.isEmpty }
            if let oldest = idle.min(by: { connections[$0].activeAt < connections[$1].activeAt }) {
                evicted += 1
                finish(connections.remove(at: oldest))
            } else {
                let busy = refuse(503, "Service Unavailable")
                _ = busy.head.withUnsafeBytes { Glibc.send(accepted, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(accepted)
                return
            }
        }
        connections.append(Connection(descriptor: accepted, activeAt: now))
    }

    /// Sends what the socket takes: the head and in-memory body, then the file's bytes, at most
    /// `sendTurnBytesMax` a turn so that one fast reader does not starve the others. False: done,
    /// or the reader went away.
    private mutating func write(_ connection: inout Connection, now: Int64) -> Bool {
        if connection.sent < connection.reply.count {
            let count = connection.reply.withUnsafeBytes {
                Glibc.send(
                    connection.descriptor, $0.baseAddress! + connection.sent, $0.count - connection.sent,
                    Int32(MSG_NOSIGNAL))
            }
            guard count > 0 || errno == EAGAIN else { return false }
            if count > 0 {
                connection.sent += count
                connection.activeAt = now
            }
            if connection.sent < connection.reply.count { return true }
        }
        guard var file = connection.file else { return false }
        var turn = 0
        while file.next < file.end, turn < limits.sendTurnBytesMax {
            var offset = off_t(file.next)
            let count = sendfile(connection.descriptor, file.descriptor, &offset, min(file.end - file.next, 1 << 20))
            guard count > 0 else {
                if count < 0 && errno == EAGAIN { break }
                return false  // the reader went away, or the file shrank under us
            }
            file.next += count
            turn += count
            connection.activeAt = now
        }
        connection.file = file
        if file.next < file.end { return true }
        return false
    }

    private func finish(_ connection: Connection) {
        if let file = connection.file { close(file.descriptor) }
        shutdown(connection.descriptor, Int32(SHUT_WR))
        close(connection.descriptor)
    }

    /// Reads what arrived; a complete head gets its reply. False: close the connection.
    private mutating func readRequest(_ connection: inout Connection, responses: inout Int, now: Int64, log: Bool)
        -> Bool
    {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(connection.descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return count < 0 && errno == EAGAIN }
        connection.head += buffer[0..<count]
        connection.activeAt = now
        let response: Response
        let end = Self.headEnd(connection.head)
        if (end ?? connection.head.count) > limits.requestHeadBytesMax {
            response = refuse(431, "Request Header Fields Too Large")
        } else if let end {
            response = respond(to: Array(connection.head[..<end]))
            if log {
                let line = String(
                    decoding: connection.head.prefix(while: { $0 != 13 && $0 != 10 }).prefix(120), as: UTF8.self)
                StandardStreams.writeOutput("\(response.status) \(line)")
            }
        } else {
            return true
        }
        responses += 1
        connection.reply = response.head
        switch response.body {
        case .none: break
        case .bytes(let bytes): connection.reply += bytes
        case .file(let descriptor, let range): connection.file = (descriptor, range.lowerBound, range.upperBound)
        }
        return true
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index - 3] == 13 && bytes[index - 2] == 10 && bytes[index - 1] == 13
            && bytes[index] == 10
        {
            return index + 1
        }
        return nil
    }

    static func seconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec)
    }
}

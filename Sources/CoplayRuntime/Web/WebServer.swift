import CoplayCore
import Glibc

/// `coplay web --listen ADDR:PORT [--root DIR]`: serves the browser page and its module to the
/// devices of a home. HTTP/1.1 GET and HEAD of the files of one folder, read once at the start
/// and held in memory; nothing else. Every request is hostile until read: a bounded head, a
/// bounded number of connections, an idle limit, names checked against the files held. A bad
/// request gets a 4xx, is counted, and the server goes on.
public struct WebServer {
    /// The bounds, each with its reason.
    public struct Limits: Sendable {
        /// A request's head: a browser's GET is under 2 KiB; 8 KiB is what many servers allow.
        public var requestHeadBytesMax = 8192
        /// Open connections: a page needs a handful at once (page, style, scripts, module); a
        /// household of browsers fits, a flood does not grow the table.
        public var connectionsMax = 64
        /// A connection that sends no complete request in this long is closed (a slow sender
        /// keeps no slot).
        public var idleSeconds = 10
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
    public var limits = Limits()
    /// Requests served, and refused by reason.
    public private(set) var served = 0
    public private(set) var refused: [Int: Int] = [:]

    public init(files: [String: File], limits: Limits = Limits()) {
        self.files = files
        self.limits = limits
    }

    /// The files of `root` (not its subfolders), within the limits.
    public static func load(root: String, limits: Limits = Limits()) -> Result<[String: File], UsageError> {
        guard let directory = opendir(root) else {
            return .failure(
                UsageError(message: "cannot read the page's folder \(root): \(String(cString: strerror(errno)))"))
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
                            "\(root)/\(name) cannot be read, or takes the folder past \(limits.totalBytesMax >> 20) MiB: coplay web holds the page's files in memory; serve media with a server of its own"
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
                UsageError(message: "\(root) has no index.html: is it the page's folder (Tools/wasm-core builds it)?"))
        }
        return .success(files)
    }

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
            (".webm", "video/webm"), (".mp4", "video/mp4"), (".json", "application/json"),
        ]
        return types.first { name.hasSuffix($0.0) }?.1 ?? "application/octet-stream"
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

    /// The response to one request head (the bytes up to and including the blank line).
    public mutating func respond(to head: [UInt8]) -> [UInt8] {
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
        let name = path == "/" ? "index.html" : String(path.dropFirst())
        guard WebServer.isServable(name), let file = files[name] else { return refuse(404, "Not Found") }
        // One byte range (RFC 9110 14.2), which a browser needs to seek in a media file.
        var range = 0..<file.bytes.count
        var status = "200 OK"
        if let value = Self.header("range", in: text) {
            guard let asked = Self.byteRange(value, count: file.bytes.count) else {
                refused[416, default: 0] += 1
                return Array(
                    ("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(file.bytes.count)\r\n"
                        + "Content-Length: 0\r\nConnection: close\r\n\r\n").utf8)
            }
            range = asked
            status = "206 Partial Content"
        }
        served += 1
        let header =
            "HTTP/1.1 \(status)\r\nContent-Type: \(file.contentType)\r\nContent-Length: \(range.count)\r\n"
            + (status.hasPrefix("206")
                ? "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(file.bytes.count)\r\n" : "")
            + "Accept-Ranges: bytes\r\nCache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n"
            + "Referrer-Policy: no-referrer\r\nConnection: close\r\n\r\n"
        return Array(header.utf8) + (method == "HEAD" ? [] : Array(file.bytes[range]))
    }

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

    mutating func refuse(_ status: Int, _ reason: String, allow: Bool = false) -> [UInt8] {
        refused[status, default: 0] += 1
        let body = "\(status) \(reason)\n"
        return Array(
            ("HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n"
                + (allow ? "Allow: GET, HEAD\r\n" : "") + "Connection: close\r\n\r\n" + body).utf8)
    }

    // MARK: Serving

    private struct Connection {
        var descriptor: Int32
        var head: [UInt8] = []
        var reply: [UInt8] = []
        var sent = 0
        var openedAt: Int64
    }

    /// Serves on `host`:`port` until killed (or `requestsMax` responses, for tests). Prints a line
    /// per request to standard output.
    public mutating func serve(host: String, port: UInt16, requestsMax: Int? = nil) -> Int32 {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { return fail("socket") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            StandardStreams.writeError("coplay web: \(host) is not an IPv4 address")
            return 2
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 16) == 0 else { return fail("cannot listen on \(host):\(port)") }
        signal(SIGPIPE, SIG_IGN)
        StandardStreams.writeOutput(
            "coplay web: serving \(files.count) files at http://\(host):\(port)/ (Ctrl-C stops)")
        var connections: [Connection] = []
        var responses = 0
        while requestsMax.map({ responses < $0 }) ?? true {
            var polls = [
                pollfd(fd: listener, events: Int16(connections.count < limits.connectionsMax ? POLLIN : 0), revents: 0)
            ]
            polls += connections.map {
                pollfd(fd: $0.descriptor, events: Int16($0.reply.isEmpty ? POLLIN : POLLOUT), revents: 0)
            }
            guard poll(&polls, nfds_t(polls.count), 1000) >= 0 || errno == EINTR else { return fail("poll") }
            let now = Self.seconds()
            var open: [Connection] = []
            for (index, var connection) in connections.enumerated() {
                let events = polls[index + 1].revents
                var keep = now - connection.openedAt < Int64(limits.idleSeconds)
                if keep, connection.reply.isEmpty, events & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    keep = readRequest(&connection, responses: &responses)
                }
                if keep, !connection.reply.isEmpty {
                    let count = connection.reply.withUnsafeBytes {
                        Glibc.send(
                            connection.descriptor, $0.baseAddress! + connection.sent, $0.count - connection.sent,
                            Int32(MSG_NOSIGNAL))
                    }
                    if count > 0 {
                        connection.sent += count
                        connection.openedAt = now  // idle is measured from the last progress
                    } else if errno != EAGAIN {
                        keep = false
                    }
                    if connection.sent == connection.reply.count { keep = false }
                }
                if keep {
                    open.append(connection)
                } else {
                    shutdown(connection.descriptor, Int32(SHUT_WR))
                    close(connection.descriptor)
                }
            }
            connections = open
            if polls[0].revents & Int16(POLLIN) != 0 {
                let accepted = accept(listener, nil, nil)
                if accepted >= 0 {
                    _ = fcntl(accepted, F_SETFD, FD_CLOEXEC)
                    _ = fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) | O_NONBLOCK)
                    connections.append(Connection(descriptor: accepted, openedAt: now))
                }
            }
        }
        for connection in connections { close(connection.descriptor) }
        close(listener)
        return 0
    }

    /// Reads what arrived; a complete head gets its reply. False: close the connection.
    private mutating func readRequest(_ connection: inout Connection, responses: inout Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(connection.descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return count < 0 && errno == EAGAIN }
        connection.head += buffer[0..<count]
        if let end = Self.headEnd(connection.head) {
            connection.reply = respond(to: Array(connection.head[..<end]))
            responses += 1
            let status = String(decoding: connection.reply.prefix(12).dropFirst(9), as: UTF8.self)
            let line = String(
                decoding: connection.head.prefix(while: { $0 != 13 && $0 != 10 }).prefix(120), as: UTF8.self)
            StandardStreams.writeOutput("\(status) \(line)")
        } else if connection.head.count > limits.requestHeadBytesMax {
            connection.reply = refuse(431, "Request Header Fields Too Large")
            responses += 1
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

    private func fail(_ what: String) -> Int32 {
        StandardStreams.writeError("coplay web: \(what): \(String(cString: strerror(errno)))")
        return 1
    }
}

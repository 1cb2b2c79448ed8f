import Glibc

/// A small HTTP/1.1 client for one thing: fetching a live item's playlist and the head of one
/// of its segments (`LivePlayer`). `http://` only (IPv4, a name or an address), GET, no
/// redirects, no keep-alive. Every fetch is bounded in bytes and in time: a server that sends
/// more than `bytesMax`, sends slower than `timeout` allows, or never ends its answer is refused
/// with a reason, and the agent holds no more than `bytesMax` of it. Blocking: run it on a thread
/// of its own.
enum HTTPFetch {
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// `http://host[:port]/path`.
    struct Target: Hashable {
        var host: String
        var port: UInt16
        var path: String

        init(_ url: String) throws(Failure) {
            guard url.hasPrefix("http://") else { throw Failure("only http:// URLs can be read here, not '\(url)'") }
            let rest = url.dropFirst("http://".count)
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let authority = rest[..<slash]
            path = slash == rest.endIndex ? "/" : String(rest[slash...])
            guard !authority.contains("@"), !path.contains(where: { $0 == " " || $0 == "\r" || $0 == "\n" }) else {
                throw Failure("'\(url)' is not a URL this client reads")
            }
            if let colon = authority.lastIndex(of: ":") {
                guard let port = UInt16(authority[authority.index(after: colon)...]), port > 0 else {
                    throw Failure("'\(url)' has no valid port")
                }
                host = String(authority[..<colon])
                self.port = port
            } else {
                host = String(authority)
                port = 80
            }
            guard !host.isEmpty, host.utf8.count <= 253 else { throw Failure("'\(url)' has no host") }
        }
    }

    /// `reference` (a URI line of a playlist) resolved against the playlist's own `base` URL
    /// (RFC 3986 §5.2, for the forms playlists use: absolute, absolute-path, relative-path).
    static func resolve(_ reference: String, against base: String) -> String {
        if reference.hasPrefix("http://") || reference.hasPrefix("https://") { return reference }
        let withoutQuery = base.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let afterScheme = withoutQuery.index(withoutQuery.startIndex, offsetBy: min(7, withoutQuery.count))
        let pathStart = withoutQuery[afterScheme...].firstIndex(of: "/") ?? withoutQuery.endIndex
        if reference.hasPrefix("/") { return String(withoutQuery[..<pathStart]) + reference }
        let directoryEnd = withoutQuery[pathStart...].lastIndex(of: "/").map { withoutQuery.index(after: $0) }
        return String(withoutQuery[..<(directoryEnd ?? withoutQuery.endIndex)]) + (directoryEnd == nil ? "/" : "")
            + reference
    }

    /// GETs `url`: its body, at most `bytesMax` bytes, within `timeout` from the start. With
    /// `enough`, stops reading (and returns what it has) once `enough` says the body so far is
    /// all it needs.
    static func get(
        _ url: String, bytesMax: Int, timeout: Duration, enough: (([UInt8]) -> Bool)? = nil
    ) throws(Failure) -> [UInt8] {
        let target = try Target(url)
        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        let deadline =
            Int64(clock.tv_sec) * 1_000 + Int64(clock.tv_nsec) / 1_000_000
            + timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000
        func millisecondsLeft() -> Int32 {
            clock_gettime(CLOCK_MONOTONIC, &clock)
            let now = Int64(clock.tv_sec) * 1_000 + Int64(clock.tv_nsec) / 1_000_000
            return Int32(clamping: max(0, deadline - now))
        }
        let descriptor = try connect(target, millisecondsLeft: millisecondsLeft)
        defer { close(descriptor) }
        let request = Array(
            "GET \(target.path) HTTP/1.1\r\nHost: \(target.host):\(target.port)\r\nUser-Agent: coplay\r\nAccept: */*\r\nConnection: close\r\n\r\n"
                .utf8)
        var sent = 0
        while sent < request.count {
            try wait(descriptor, for: Int16(POLLOUT), millisecondsLeft(), url: url)
            let count = request[sent...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw Failure("sending the request to \(target.host) failed") }
            sent += count
        }
        // The head, then the body: all of it bounded by the head's limit plus `bytesMax`.
        let headBytesMax = 16 * 1024
        var received: [UInt8] = []
        var head: (status: Int, length: Int?, chunked: Bool, bodyStart: Int)?
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let head {
                let body = received.count - head.bodyStart
                if let length = head.length, body >= length { break }
                if !head.chunked, let enough, enough(Array(received[head.bodyStart...])) { break }
            }
            try wait(descriptor, for: Int16(POLLIN), millisecondsLeft(), url: url)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count >= 0 else { throw Failure("reading \(url) failed (errno \(errno))") }
            if count == 0 { break }  // the server closed: the end of a body without a length
            received += buffer[..<count]
            if head == nil {
                head = try parseHead(received, url: url)
                if head == nil, received.count > headBytesMax {
                    throw Failure("\(url) answered with a head longer than \(headBytesMax) bytes")
                }
            }
            if let head, received.count - head.bodyStart > bytesMax + (head.chunked ? 64 * 1024 : 0) {
                throw Failure("\(url) is larger than \(bytesMax) bytes")
            }
        }
        guard let head else { throw Failure("\(url) answered with no HTTP head") }
        guard head.status == 200 || head.status == 206 else { throw Failure("\(url) answered \(head.status)") }
        var body = Array(received[head.bodyStart...])
        if let length = head.length {
            guard body.count >= length || enough != nil else {
                throw Failure("\(url) ended after \(body.count) of its \(length) bytes")
            }
            body = Array(body.prefix(length))
        } else if head.chunked {
            body = try dechunk(body, url: url)
        }
        guard body.count <= bytesMax else { throw Failure("\(url) is larger than \(bytesMax) bytes") }
        return body
    }

    private static func parseHead(_ bytes: [UInt8], url: String) throws(Failure) -> (
        status: Int, length: Int?, chunked: Bool, bodyStart: Int
    )? {
        let end: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4,
            let index = (0...(bytes.count - 4)).first(where: { bytes[$0..<($0 + 4)].elementsEqual(end) })
        else { return nil }
        let text = String(decoding: bytes[..<index], as: UTF8.self)
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusWords = lines.first?.split(separator: " ") ?? []
        guard statusWords.count >= 2, statusWords[0].hasPrefix("HTTP/1."), let status = Int(statusWords[1]),
            (100...599).contains(status)
        else { throw Failure("\(url) did not answer in HTTP/1.x") }
        var length: Int?
        var chunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            if name == "content-length" {
                guard let number = Int(value), number >= 0 else { throw Failure("\(url): Content-Length '\(value)'") }
                length = number
            } else if name == "transfer-encoding", value.lowercased().contains("chunked") {
                chunked = true
            }
        }
        return (status, chunked ? nil : length, chunked, index + 4)
    }

    /// A chunked body (RFC 9112 §7.1), already bounded by the caller.
    private static func dechunk(_ bytes: [UInt8], url: String) throws(Failure) -> [UInt8] {
        var body: [UInt8] = []
        var index = 0
        while true {
            guard
                let lineEnd = (index..<max(index, bytes.count - 1)).first(where: {
                    bytes[$0] == 13 && bytes[$0 + 1] == 10
                })
            else { throw Failure("\(url): a chunked body cut short") }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingSpaces, radix: 16), size >= 0, size <= bytes.count else {
                throw Failure("\(url): a chunk size '\(sizeText)'")
            }
            index = lineEnd + 2
            if size == 0 { return body }
            guard index + size <= bytes.count else { throw Failure("\(url): a chunked body cut short") }
            body += bytes[index..<(index + size)]
            index += size + 2
        }
    }

    private static func wait(_ descriptor: Int32, for events: Int16, _ milliseconds: Int32, url: String) throws(Failure)
    {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        guard milliseconds > 0 else { throw Failure("\(url) did not answer in time") }
        let ready = poll(&entry, 1, milliseconds)
        guard ready > 0 else {
            throw Failure(ready == 0 ? "\(url) did not answer in time" : "waiting for \(url) failed")
        }
    }

    private static func connect(_ target: Target, millisecondsLeft: () -> Int32) throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(target.host, String(target.port), &hints, &result) == 0, let first = result else {
            throw Failure("cannot resolve '\(target.host)'")
        }
        defer { freeaddrinfo(result) }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("no socket (errno \(errno))") }
        let started = Glibc.connect(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen)
        if started != 0 {
            guard errno == EINPROGRESS else {
                close(descriptor)
                throw Failure("cannot connect to \(target.host):\(target.port) (errno \(errno))")
            }
            var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            guard poll(&entry, 1, millisecondsLeft()) > 0,
                getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &size) == 0, error == 0
            else {
                close(descriptor)
                throw Failure("cannot connect to \(target.host):\(target.port)")
            }
        }
        return descriptor
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}

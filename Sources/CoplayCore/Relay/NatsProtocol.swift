/// The part of NATS's client protocol that a relay needs (docs.nats.io, "Client Protocol"):
/// what the server sends (INFO, MSG, PING, PONG, +OK, -ERR) read by `NatsParser`, and what the
/// client sends (CONNECT, SUB, PUB, PING, PONG) written by `NatsCommand`. Text lines end in
/// CRLF; operation names are case-insensitive; a MSG's payload follows its line, then CRLF.
public enum NatsServerMessage: Equatable, Sendable {
    case info(NatsServerInfo)
    case msg(subject: String, sid: String, replyTo: String?, payload: [UInt8])
    case ping
    case pong
    case ok
    case err(String)
}

/// What a server's INFO says that the client uses.
public struct NatsServerInfo: Equatable, Sendable {
    public var serverID = ""
    public var version = ""
    /// The largest payload the server accepts in a PUB (its default is 1 MB).
    public var maxPayload = 1_048_576
    public var authRequired = false
    public var tlsRequired = false
    /// Other servers of its cluster that clients may connect to over TCP ("host:port")…
    public var connectURLs: [String] = []
    /// …and through their WebSocket listeners (`ws_connect_urls`, "host:port"), a browser's way.
    public var webSocketConnectURLs: [String] = []
}

/// Reads the server's side of a connection from bytes as they arrive. The server is hostile
/// until parsed: a line longer than `lineBytesMax`, a MSG larger than any server may carry
/// (`messageBytesMax`, NATS's own ceiling for `max_payload`), an unknown operation or a malformed
/// line is an error (the client cuts the connection and connects again); a MSG larger than
/// `payloadBytesMax` is read past without being kept and counted. The server's own
/// `max_payload` bounds what it accepts in a PUB, not what it delivers: a message published
/// through another server of its cluster, with a larger limit, arrives whole, and is read.
/// Memory stays bounded by `lineBytesMax` plus `payloadBytesMax` plus what one `feed` hands over.
public struct NatsParser: Sendable {
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    let lineBytesMax: Int
    let payloadBytesMax: Int
    /// The largest MSG read past rather than cut: 64 MiB, the most a nats-server's `max_payload`
    /// may be set to.
    static let messageBytesMax = 64 << 20
    private var buffer: [UInt8] = []
    /// A MSG line read, its payload not yet complete.
    private var pending: (subject: String, sid: String, replyTo: String?, size: Int)?
    /// Payload bytes (and the CRLF after them) still to skip of a MSG too large to keep.
    private var skipping = 0
    /// MSGs read past because they were larger than `payloadBytesMax`.
    public private(set) var oversizedSkipped = 0

    public init(lineBytesMax: Int, payloadBytesMax: Int) {
        self.lineBytesMax = lineBytesMax
        self.payloadBytesMax = payloadBytesMax
    }

    /// The messages completed by `bytes`, in order.
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(Failure) -> [NatsServerMessage] {
        var messages: [NatsServerMessage] = []
        var input = ArraySlice(bytes)
        if skipping > 0 {
            let skipped = min(skipping, input.count)
            skipping -= skipped
            input = input.dropFirst(skipped)
        }
        buffer += input
        var start = 0
        defer { buffer.removeFirst(start) }
        while true {
            if skipping > 0 {
                let skipped = min(skipping, buffer.count - start)
                skipping -= skipped
                start += skipped
                if skipping > 0 { return messages }
            }
            if let message = pending {
                guard buffer.count - start >= message.size + 2 else { return messages }
                guard buffer[start + message.size] == 0x0D, buffer[start + message.size + 1] == 0x0A else {
                    throw Failure(reason: "a MSG's payload is not followed by CRLF")
                }
                messages.append(
                    .msg(
                        subject: message.subject, sid: message.sid, replyTo: message.replyTo,
                        payload: Array(buffer[start..<(start + message.size)])))
                start += message.size + 2
                pending = nil
                continue
            }
            guard let newline = buffer[start...].firstIndex(of: 0x0A) else {
                if buffer.count - start > lineBytesMax {
                    throw Failure(reason: "a line longer than \(lineBytesMax) bytes")
                }
                return messages
            }
            guard newline - start <= lineBytesMax else {
                throw Failure(reason: "a line longer than \(lineBytesMax) bytes")
            }
            var end = newline
            if end > start, buffer[end - 1] == 0x0D { end -= 1 }
            let line = buffer[start..<end]
            start = newline + 1
            if let message = try parseLine(line) { messages.append(message) }
        }
    }

    private mutating func parseLine(_ line: ArraySlice<UInt8>) throws(Failure) -> NatsServerMessage? {
        guard line.allSatisfy({ $0 >= 0x20 && $0 < 0x7F || $0 == 0x09 || $0 >= 0x80 }) else {
            throw Failure(reason: "a control byte in a protocol line")
        }
        // Read as bytes: the words are ASCII, and the browser's build carries no Unicode search.
        let fields = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
        guard let first = fields.first else { throw Failure(reason: "an empty protocol line") }
        let operation = first.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
        let rest = line[first.endIndex...].drop { $0 == 0x20 || $0 == 0x09 }
        switch operation {
        case Array("PING".utf8): return .ping
        case Array("PONG".utf8): return .pong
        case Array("+OK".utf8): return .ok
        case Array("-ERR".utf8):
            var message = rest
            if message.count >= 2, message.first == 0x27, message.last == 0x27 {
                message = message.dropFirst().dropLast()
            }
            return .err(String(decoding: message, as: UTF8.self))
        case Array("INFO".utf8):
            return .info(try Self.info(from: Array(rest)))
        case Array("MSG".utf8):
            guard fields.count == 4 || fields.count == 5, let size = Self.decimal(fields[fields.count - 1]) else {
                throw Failure(reason: "a malformed MSG line")
            }
            guard size <= Self.messageBytesMax else {
                throw Failure(
                    reason: "a MSG of \(size) bytes, beyond what any server carries (\(Self.messageBytesMax))")
            }
            guard size <= payloadBytesMax else {
                oversizedSkipped += 1
                skipping = size + 2
                return nil
            }
            func text(_ field: ArraySlice<UInt8>) -> String { String(decoding: field, as: UTF8.self) }
            pending = (text(fields[1]), text(fields[2]), fields.count == 5 ? text(fields[3]) : nil, size)
            return nil
        default:
            throw Failure(reason: "an unknown operation '\(String(decoding: operation.prefix(16), as: UTF8.self))'")
        }
    }

    /// Decimal digits alone (no sign), at most 18 of them, the value clamped to `Int.max` (32
    /// bits in the browser's build: a size that large is refused anyway); nil for anything else.
    static func decimal(_ digits: some Collection<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard digit >= 0x30, digit <= 0x39 else { return nil }
            value = value * 10 + Int64(digit - 0x30)
        }
        return value > Int64(Int.max) ? Int.max : Int(value)
    }

    /// The fields of an INFO's JSON that the client uses; the rest is ignored.
    static func info(from json: [UInt8]) throws(Failure) -> NatsServerInfo {
        let value: JSONValue
        do {
            value = try JSONParser.parse(json)
        } catch {
            throw Failure(reason: "an INFO that is not JSON (\(error))")
        }
        guard case .object(let members) = value else { throw Failure(reason: "an INFO that is not a JSON object") }
        var info = NatsServerInfo()
        for (name, member) in members {
            switch (name, member) {
            case ("server_id", .string(let text)): info.serverID = String(text.prefix(64))
            case ("version", .string(let text)): info.version = String(text.prefix(32))
            case ("max_payload", .int(let size)):
                guard size > 0 else { throw Failure(reason: "an INFO with max_payload \(size)") }
                // At most 1 GiB (nats-server's own ceiling is 64 MB): a MSG's size plus its CRLF is
                // then never near Int's end.
                info.maxPayload = Int(min(size, 1 << 30))
            case ("auth_required", .bool(let flag)): info.authRequired = flag
            case ("tls_required", .bool(let flag)): info.tlsRequired = flag
            case ("connect_urls", .array(let urls)):
                info.connectURLs = Self.strings(urls)
            case ("ws_connect_urls", .array(let urls)):
                info.webSocketConnectURLs = Self.strings(urls)
            default: continue
            }
        }
        return info
    }

    /// The strings of an INFO's list of URLs, at most 64 of 128 bytes each (a cluster's list is
    /// a few; the line's bound already caps the rest).
    private static func strings(_ values: [JSONValue]) -> [String] {
        values.prefix(64).compactMap { value in
            if case .string(let url) = value, url.utf8.count <= 128 { url } else { nil }
        }
    }
}

/// What the client sends.
public enum NatsCommand {
    public struct Credentials: Equatable, Sendable {
        public var token: String?
        public var user: String?
        public var password: String?
        public init(token: String? = nil, user: String? = nil, password: String? = nil) {
            self.token = token
            self.user = user
            self.password = password
        }
    }

    /// CONNECT: no +OK for each command (`verbose` false), no strict subject checks, and none of
    /// its own messages back (`echo` false: an agent never hears itself through the relay).
    public static func connect(_ credentials: Credentials, name: String) -> [UInt8] {
        var json = JSONObject()
        json.bool("verbose", false)
        json.bool("pedantic", false)
        json.bool("tls_required", false)
        json.string("name", name)
        json.string("lang", "swift")
        json.string("version", CoplayVersion.current)
        json.int("protocol", 1)
        json.bool("echo", false)
        if let token = credentials.token { json.string("auth_token", token) }
        if let user = credentials.user { json.string("user", user) }
        if let password = credentials.password { json.string("pass", password) }
        return Array("CONNECT \(json.closed)\r\n".utf8)
    }

    public static func sub(_ subject: String, sid: Int) -> [UInt8] { Array("SUB \(subject) \(sid)\r\n".utf8) }
    public static func unsub(sid: Int) -> [UInt8] { Array("UNSUB \(sid)\r\n".utf8) }

    public static func pub(_ subject: String, payload: [UInt8]) -> [UInt8] {
        Array("PUB \(subject) \(payload.count)\r\n".utf8) + payload + [0x0D, 0x0A]
    }

    public static let ping = Array("PING\r\n".utf8)
    public static let pong = Array("PONG\r\n".utf8)
}

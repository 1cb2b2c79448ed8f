import CoplayCore

/// The client side of a WebSocket (RFC 6455) as a machine without a socket, for a relay given as
/// `ws://` (nats-server's websocket listener, the one browsers use): the opening handshake, then
/// the NATS protocol's bytes as binary messages. Frames the client sends are masked, as the RFC
/// requires; frames the server sends are not. Pings are answered; a close ends the connection.
///
/// Bounded: the server's handshake answer at `handshakeBytesMax`, a message (with its
/// continuation frames) at `messageBytesMax`. What breaks the protocol ends the connection with
/// a reason.
struct WebSocketFraming {
    static let handshakeBytesMax = 8192
    /// NATS sends at most max_payload (4,096 on coplay's servers) plus a MSG line in one
    /// message; 1 MiB leaves room for a server that packs several.
    static let messageBytesMax = 1 << 20

    enum Phase: Equatable { case handshaking, open, closed }
    private(set) var phase = Phase.handshaking
    private let key: String
    private var buffer: [UInt8] = []
    private var consumed = 0
    private var message: [UInt8] = []
    private var messageOpen = false

    /// What arrived: NATS bytes for the session, control frames to send back (pongs, the
    /// close's echo; the caller masks them), or why the connection must end.
    struct Arrival: Equatable {
        var payload: [UInt8] = []
        var replies: [Control] = []
        var failure: String?
    }
    struct Control: Equatable {
        var opcode: UInt8
        var payload: [UInt8]
    }

    /// `nonce`: 16 random bytes for Sec-WebSocket-Key.
    init(nonce: [UInt8]) {
        key = Base64.encode(nonce)
    }

    /// The opening handshake, to write first.
    func request(host: String, path: String = "/") -> [UInt8] {
        Array(
            ("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nUser-Agent: coplay\r\n\r\n").utf8)
    }

    /// The accept value the server must answer `key` with.
    static func accept(for key: String) -> String {
        Base64.encode(SHA1.hash(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
    }

    mutating func received(_ bytes: some Collection<UInt8>) -> Arrival {
        guard phase != .closed else { return Arrival() }
        buffer += bytes
        var arrival = Arrival()
        if phase == .handshaking {
            guard let end = Self.headEnd(buffer) else {
                if buffer.count > Self.handshakeBytesMax { return fail("the server's handshake is over 8 KiB") }
                return arrival
            }
            let head = String(decoding: buffer[..<end], as: UTF8.self)
            buffer.removeFirst(end)
            let lines = head.split(separator: "\r\n")
            guard let status = lines.first, status.hasPrefix("HTTP/1.1 101") else {
                return fail(
                    "the server refused the WebSocket: \(lines.first.map { String($0.prefix(80)) } ?? "no answer")")
            }
            let accept = lines.dropFirst().first { $0.lowercased().hasPrefix("sec-websocket-accept:") }
            let value = accept?.dropFirst("sec-websocket-accept:".count).split(separator: " ").first
            guard let value, value == Self.accept(for: key) else {
                return fail("the server's Sec-WebSocket-Accept does not answer the key")
            }
            phase = .open
        }
        while phase == .open, let frame = nextFrame(&arrival) {
            switch frame.opcode {
            case 0x0, 0x1, 0x2:
                guard frame.opcode == 0 ? messageOpen : !messageOpen else {
                    return fail("a continuation frame out of place")
                }
                guard message.count + frame.payload.count <= Self.messageBytesMax else {
                    return fail("a message over \(Self.messageBytesMax) bytes")
                }
                message += frame.payload
                messageOpen = !frame.final
                if frame.final {
                    arrival.payload += message
                    message.removeAll(keepingCapacity: true)
                }
            case 0x8:
                arrival.replies.append(Control(opcode: 0x8, payload: Array(frame.payload.prefix(2))))
                phase = .closed
                arrival.failure = "the server closed the WebSocket"
            case 0x9:
                arrival.replies.append(Control(opcode: 0xA, payload: frame.payload))
            case 0xA:
                break
            default:
                return fail("a frame of unknown opcode \(frame.opcode)")
            }
        }
        if consumed > 0 {
            buffer.removeFirst(consumed)
            consumed = 0
        }
        return arrival
    }

    private mutating func fail(_ reason: String) -> Arrival {
        phase = .closed
        buffer.removeAll()
        consumed = 0
        return Arrival(failure: reason)
    }

    /// The next whole frame in the buffer, if one has arrived.
    /// Frames are read from `consumed` on; what they used is cut from the buffer once per
    /// `received`, not once per frame (a read of many small frames copied the rest each time).
    private mutating func nextFrame(_ arrival: inout Arrival) -> (opcode: UInt8, final: Bool, payload: [UInt8])? {
        let buffer = self.buffer[consumed...]
        let base = consumed
        guard buffer.count >= 2 else { return nil }
        let final = buffer[base + 0] & 0x80 != 0
        let opcode = buffer[base + 0] & 0x0F
        guard buffer[base + 0] & 0x70 == 0 else {
            arrival = fail("a frame with reserved bits (no extension was agreed)")
            return nil
        }
        guard buffer[base + 1] & 0x80 == 0 else {
            arrival = fail("a masked frame from the server")
            return nil
        }
        var length = UInt64(buffer[base + 1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard buffer.count >= 4 else { return nil }
            length = UInt64(buffer[base + 2]) << 8 | UInt64(buffer[base + 3])
            offset = 4
        } else if length == 127 {
            guard buffer.count >= 10 else { return nil }
            length = buffer[(base + 2)..<(base + 10)].reduce(0) { $0 << 8 | UInt64($1) }
            offset = 10
        }
        guard length <= UInt64(Self.messageBytesMax) else {
            arrival = fail("a frame of \(length) bytes")
            return nil
        }
        guard opcode < 8 || (final && length <= 125) else {
            arrival = fail("a control frame fragmented or over 125 bytes")
            return nil
        }
        guard buffer.count >= offset + Int(length) else { return nil }
        let payload = Array(buffer[(base + offset)..<(base + offset + Int(length))])
        consumed += offset + Int(length)
        return (opcode, final, payload)
    }

    /// A binary message of `payload`, masked with `mask` (4 random bytes).
    static func binary(_ payload: [UInt8], mask: [UInt8]) -> [UInt8] {
        frame(opcode: 0x2, payload: payload, mask: mask)
    }

    static func frame(opcode: UInt8, payload: [UInt8], mask: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        if payload.count <= 125 {
            out.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(0x80 | 127)
            out += (0..<8).map { UInt8(truncatingIfNeeded: UInt64(payload.count) >> UInt64(56 - 8 * $0)) }
        }
        out += mask
        out += payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
        return out
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index - 3] == 13 && bytes[index - 2] == 10 && bytes[index - 1] == 13 && bytes[index] == 10 {
            return index + 1
        }
        return nil
    }
}

/// SHA-1 (FIPS 180-4), for the WebSocket handshake's accept value only: not for security.
enum SHA1 {
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var data = message + [0x80]
        while data.count % 64 != 56 { data.append(0) }
        let bits = UInt64(message.count) * 8
        data += (0..<8).map { UInt8(truncatingIfNeeded: bits >> UInt64(56 - 8 * $0)) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                w[i] = (0..<4).reduce(0) { $0 << 8 | UInt32(data[chunk + 4 * i + $1]) }
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w[i] = x << 1 | x >> 31
            }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32) =
                    switch i {
                    case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                    case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                    case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                    default: (b ^ c ^ d, 0xCA62_C1D6)
                    }
                let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, temp)
            }
            h[0] &+= a
            h[1] &+= b
            h[2] &+= c
            h[3] &+= d
            h[4] &+= e
        }
        return h.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * $0)) } }
    }
}

enum Base64 {
    static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        for index in stride(from: 0, to: bytes.count, by: 3) {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << UInt32(16 - 8 * $1.offset) }
            for position in 0..<4 {
                out.append(
                    position <= chunk.count
                        ? alphabet[Int((value >> UInt32(18 - 6 * position)) & 63)] : UInt8(ascii: "="))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Reads one JSON text (RFC 8259) into a `JSONValue`: the replies and events of mpv's IPC and the
/// lines of a delegating player. The input comes from another program and is hostile until
/// parsed: nesting is bounded by `depthMax`, numbers that do not fit become doubles (or an error),
/// and every malformation is a thrown `JSONParser.Error`, never a trap.
public struct JSONParser {
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Deepest nesting of arrays and objects accepted.
    public static let depthMax = 32

    private let bytes: [UInt8]
    private var index = 0

    public static func parse(_ text: String) throws(Error) -> JSONValue { try parse(Array(text.utf8)) }

    public static func parse(_ bytes: [UInt8]) throws(Error) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("text after the value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ reason: String) -> Error { Error(offset: index, reason: reason) }

    private mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private mutating func value(depth: Int) throws(Error) -> JSONValue {
        guard depth <= Self.depthMax else { throw error("nested deeper than \(Self.depthMax)") }
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var members: [(String, JSONValue)] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
                let key = try string()
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end in an object") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else {
                    try expect(UInt8(ascii: "}"))
                    return .object(members)
                }
            }
        case UInt8(ascii: "["):
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end in an array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else {
                    try expect(UInt8(ascii: "]"))
                    return .array(elements)
                }
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default:
            return try number()
        }
    }

    private mutating func expect(_ byte: UInt8) throws(Error) {
        guard index < bytes.count, bytes[index] == byte else {
            throw error("expected '\(Character(Unicode.Scalar(byte)))'")
        }
        index += 1
    }

    private mutating func literal(_ word: String) throws(Error) {
        for byte in word.utf8 { try expect(byte) }
    }

    private mutating func number() throws(Error) -> JSONValue {
        let start = index
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let digitsStart = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        guard index > digitsStart else { throw error("expected a value") }
        while index < bytes.count,
            [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-")].contains(
                bytes[index])
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
        {
            if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { isInteger = false }
            index += 1
        }
        if isInteger, let value = Self.integer(bytes[start..<index]) { return .int(value) }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw Error(offset: start, reason: "bad number '\(text)'")
        }
        return .double(value)
    }

    /// An optional minus and at most 19 digits within `Int64`; nil otherwise (read as a
    /// double). Without the standard library's generic parsing, which the browser's build would
    /// carry.
    private static func integer(_ text: ArraySlice<UInt8>) -> Int64? {
        let negative = text.first == UInt8(ascii: "-")
        let digits = negative ? text.dropFirst() : text
        guard !digits.isEmpty, digits.count <= 19 else { return nil }
        var value: Int64 = 0
        for digit in digits {
            // Negative values are built downwards, so that Int64.min is read too.
            let (scaled, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = scaled.addingReportingOverflow(
                (negative ? -1 : 1) * Int64(digit - UInt8(ascii: "0")))
            guard !overflow, !overflow2 else { return nil }
            value = next
        }
        return value
    }

    private mutating func string() throws(Error) -> String {
        index += 1  // the opening quote
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flush(_ parser: JSONParser, upTo end: Int) {
            scalars.append(contentsOf: String(decoding: parser.bytes[runStart..<end], as: UTF8.self).unicodeScalars)
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                flush(self, upTo: index)
                index += 1
                return String(scalars)
            }
            guard byte >= 0x20 else { throw error("control character in a string") }
            guard byte == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            flush(self, upTo: index)
            index += 1
            guard index < bytes.count else { break }
            let escaped = bytes[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                {
                    index += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw error("bad surrogate pair") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
            default:
                throw error("bad escape")
            }
            runStart = index
        }
        throw error("unterminated string")
    }

    private mutating func hex4() throws(Error) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("short \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Hex.value(of: bytes[index]) else { throw error("bad \\u escape") }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }
}

extension JSONValue {
    /// The member `key` of an object (the first, if repeated); nil for anything else.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// A number as a double (integers included).
    public var number: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// An integer (a double with no fraction included), if it fits.
    public var integer: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

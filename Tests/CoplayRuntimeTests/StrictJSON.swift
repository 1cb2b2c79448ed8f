/// A strict JSON reader for tests: it accepts one JSON value and nothing after it, and rejects
/// an object that names a key twice (Foundation's parser keeps the last one silently). Returns
/// nil for valid JSON, or what is wrong.
enum StrictJSON {
    static func problem(in text: String) -> String? {
        var parser = Parser(bytes: Array(text.utf8))
        do {
            try parser.value()
            parser.skipSpace()
            return parser.index == parser.bytes.count ? nil : "text after the value at byte \(parser.index)"
        } catch {
            return error.message
        }
    }

    struct Problem: Error { var message: String }

    struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws(Problem) {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else {
                throw Problem(message: "expected '\(Character(Unicode.Scalar(byte)))' at byte \(index)")
            }
            index += 1
        }

        mutating func value() throws(Problem) {
            skipSpace()
            guard index < bytes.count else { throw Problem(message: "a value is missing at the end") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var keys: Set<String> = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return
                }
                repeat {
                    skipSpace()
                    let key = try string()
                    guard keys.insert(key).inserted else { throw Problem(message: "the key \"\(key)\" appears twice") }
                    try expect(UInt8(ascii: ":"))
                    try value()
                    skipSpace()
                } while try separator(closing: UInt8(ascii: "}"))
            case UInt8(ascii: "["):
                index += 1
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return
                }
                repeat {
                    try value()
                    skipSpace()
                } while try separator(closing: UInt8(ascii: "]"))
            case UInt8(ascii: "\""):
                _ = try string()
            default:
                let start = index
                while index < bytes.count, !",]} \t\r\n".utf8.contains(bytes[index]) { index += 1 }
                let word = String(decoding: bytes[start..<index], as: UTF8.self)
                guard ["true", "false", "null"].contains(word) || Double(word) != nil else {
                    throw Problem(message: "not a JSON value: '\(word)' at byte \(start)")
                }
            }
        }

        /// After a member or element: true on a comma, false on the closing bracket.
        mutating func separator(closing: UInt8) throws(Problem) -> Bool {
            guard index < bytes.count else { throw Problem(message: "unclosed object or array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                return true
            }
            guard bytes[index] == closing else { throw Problem(message: "expected ',' at byte \(index)") }
            index += 1
            return false
        }

        mutating func string() throws(Problem) -> String {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw Problem(message: "expected a string at byte \(index)")
            }
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                guard bytes[index] >= 0x20 else { throw Problem(message: "a raw control byte in a string") }
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            guard index < bytes.count else { throw Problem(message: "unclosed string") }
            defer { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
    }
}

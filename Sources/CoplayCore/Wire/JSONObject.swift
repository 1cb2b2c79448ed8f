/// A JSON object written field by field, without Foundation and without printing a `Double` the
/// way Swift does (which the browser's build would carry at some 20 KB): strings are escaped,
/// numbers are integers or fixed-point. Events, views and the relay's CONNECT are written with
/// it; `JSONValue` is what is read.
///
/// Its writers are `@inline(never)`: inlined into the large switches that write events they
/// cost the browser's module 3 KB gzipped, and a call is little beside the writing it does.
public struct JSONObject: Sendable {
    /// The object's UTF-8 so far, without its closing brace. Bytes, not a `String`: a string's
    /// appends were a sixth of what a pause cost a viewer's module (the crowd's replay), and the
    /// page's module hands the bytes on as they are (`closedBytes`).
    public private(set) var bytes: [UInt8] = [0x7B]

    public init() {}

    public var text: String { String(decoding: bytes, as: UTF8.self) }
    public var closed: String { String(decoding: closedBytes, as: UTF8.self) }
    public var closedBytes: [UInt8] {
        var whole = bytes
        whole.append(0x7D)
        return whole
    }

    @inline(never) public mutating func key(_ name: String) {
        if bytes.count > 1 { bytes.append(0x2C) }
        bytes.append(0x22)
        bytes.append(contentsOf: name.utf8)
        bytes.append(0x22)
        bytes.append(0x3A)
    }
    @inline(never) public mutating func string(_ name: String, _ value: String?) {
        key(name)
        if let value { JSONObject.quote(value, into: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }
    @inline(never) public mutating func int(_ name: String, _ value: Int64) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }
    @inline(never) public mutating func bool(_ name: String, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }
    /// `value` with `decimals` decimals (at most 6); null when not finite or absent.
    @inline(never) public mutating func number(_ name: String, _ value: Double?, decimals: Int = 3) {
        key(name)
        bytes.append(contentsOf: JSONObject.fixed(value, decimals: decimals).utf8)
    }
    /// `value` to at most `decimals` decimals (6 at most) with the trailing zeros cut (12.5, 1,
    /// 1.05, as Swift prints them once rounded); null when not finite or absent.
    @inline(never) public mutating func decimal(_ name: String, _ value: Double?, decimals: Int = 6) {
        key(name)
        bytes.append(contentsOf: JSONObject.fixed(value, decimals: decimals, trimmed: true).utf8)
    }
    @inline(never) public mutating func raw(_ name: String, _ json: String) {
        key(name)
        bytes.append(contentsOf: json.utf8)
    }
    /// `object`, whole, as this one's field `name`.
    @inline(never) public mutating func object(_ name: String, _ object: JSONObject) {
        key(name)
        bytes.append(contentsOf: object.bytes)
        bytes.append(0x7D)
    }

    /// `value` rounded to `decimals` decimals (6 at most); `trimmed`, with the fraction's trailing
    /// zeros cut, and its point when none is left (by number: as text it was a pause's tenth). Null
    /// when absent, not finite, or too large to count in its last place's units as an Int64 (from
    /// 9·10^12 with 6 decimals: values in range never come near it, and it is not a trap).
    public static func fixed(_ value: Double?, decimals: Int, trimmed: Bool = false) -> String {
        var places = min(max(decimals, 0), 6)
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        guard let value, value.isFinite, abs(value) < 1e15, abs(value) * scale < 9e18 else { return "null" }
        var scaled = Int64((abs(value) * scale).rounded())
        var unit = Int64(scale)
        var text = value < 0 && scaled != 0 ? "-" : ""
        while trimmed, places > 0, scaled % 10 == 0 {
            (scaled, unit, places) = (scaled / 10, unit / 10, places - 1)
        }
        text += String(scaled / unit)
        guard places > 0 else { return text }
        let fraction = String(scaled % unit)
        text += "."
        for _ in fraction.utf8.count..<places { text += "0" }
        text += fraction
        return text
    }

    public static func quoted(_ value: String) -> String {
        var out: [UInt8] = []
        quote(value, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` as a JSON string, appended to `out`.
    static func quote(_ value: String, into out: inout [UInt8]) {
        out.append(0x22)
        // Most strings need no escape, and are read in place to know it: walked byte by byte
        // through their UTF-8 view, the quoting was an eighth of what a pause cost a viewer.
        let plain = value.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes where byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0x7F { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if plain != true {
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            for byte in value.utf8 {
                switch byte {
                case 0x22, 0x5C: out += [0x5C, byte]
                case 0x0A: out += [0x5C, 0x6E]
                case 0..<0x20, 0x7F: out += [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 15)]]
                default: out.append(byte)
                }
            }
        }
        out.append(0x22)
    }

    public static func array(_ elements: [String]) -> String {
        var text = "["
        for (index, element) in elements.enumerated() { text += (index > 0 ? "," : "") + element }
        return text + "]"
    }
}

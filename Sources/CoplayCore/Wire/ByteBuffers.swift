/// Big-endian writing into a growing byte array.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    public init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    public mutating func write(_ value: UInt8) { bytes.append(value) }
    public mutating func write(_ value: UInt16) { writeBigEndian(UInt64(value), byteCount: 2) }
    public mutating func write(_ value: UInt32) { writeBigEndian(UInt64(value), byteCount: 4) }
    public mutating func write(_ value: UInt64) { writeBigEndian(value, byteCount: 8) }
    public mutating func write(_ value: Int64) { writeBigEndian(UInt64(bitPattern: value), byteCount: 8) }
    public mutating func write(bytes more: some Sequence<UInt8>) { bytes.append(contentsOf: more) }
    /// -0 is written as 0: readers refuse -0 (one encoding per value), and arithmetic makes it
    /// easily (`max(0, -0.0)` is -0.0).
    public mutating func write(_ value: Double) { write((value == 0 ? 0 : value).bitPattern) }

    /// A string as a two-byte length then UTF-8; the caller has checked it fits in 65535 bytes.
    public mutating func writeLongString(_ text: String) {
        let utf8 = Array(text.utf8)
        precondition(utf8.count <= 65535, "long string of \(utf8.count) bytes")
        write(UInt16(utf8.count))
        write(bytes: utf8)
    }

    /// A string as a one-byte length then UTF-8; the caller has checked it fits in 255 bytes.
    public mutating func writeShortString(_ text: String) {
        let utf8 = Array(text.utf8)
        precondition(utf8.count <= 255, "short string of \(utf8.count) bytes")
        write(UInt8(utf8.count))
        write(bytes: utf8)
    }

    /// Overwrites two bytes at `offset` with `value`, big-endian (for lengths known late).
    public mutating func patch(_ value: UInt16, at offset: Int) {
        bytes[offset] = UInt8(value >> 8)
        bytes[offset + 1] = UInt8(value & 0xFF)
    }

    private mutating func writeBigEndian(_ value: UInt64, byteCount: Int) {
        for shift in stride(from: (byteCount - 1) * 8, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}

/// Big-endian reading from a byte slice; every read checks the remaining length and throws
/// `DecodeError` instead of trapping.
public struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    public private(set) var offset: Int

    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }

    public var remaining: Int { bytes.endIndex - offset }

    public mutating func readUInt8() throws(DecodeError) -> UInt8 { UInt8(try readBigEndian(1)) }
    public mutating func readUInt16() throws(DecodeError) -> UInt16 { UInt16(try readBigEndian(2)) }
    public mutating func readUInt32() throws(DecodeError) -> UInt32 { UInt32(try readBigEndian(4)) }
    public mutating func readUInt64() throws(DecodeError) -> UInt64 { try readBigEndian(8) }
    public mutating func readInt64() throws(DecodeError) -> Int64 { Int64(bitPattern: try readBigEndian(8)) }
    /// A wall-clock instant, within `WireFormat.wallNanosRange`.
    public mutating func readWallInstant() throws(DecodeError) -> WallInstant {
        let nanos = try readInt64()
        guard WireFormat.wallNanosRange.contains(nanos) else {
            throw DecodeError(.malformedPayload, "instant \(nanos) ns outside 1970…2116")
        }
        return WallInstant(unixNanos: nanos)
    }

    /// An IEEE 754 double that must be finite and within `range`.
    public mutating func readDouble(in range: ClosedRange<Double>, field: String) throws(DecodeError) -> Double {
        let value = Double(bitPattern: try readBigEndian(8))
        // -0 is refused: it reads as 0, and 0 would be written back (one encoding per value).
        guard value.isFinite, range.contains(value), value != 0 || value.sign == .plus else {
            throw DecodeError(.malformedPayload, "\(field) \(value) outside \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// A two-byte length then that many bytes of valid UTF-8, at most `maxBytes` long.
    public mutating func readLongString(maxBytes: Int, field: String) throws(DecodeError) -> String {
        try readString(length: Int(try readUInt16()), maxBytes: maxBytes, field: field)
    }

    public mutating func readBytes(_ count: Int) throws(DecodeError) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else {
            throw DecodeError(.malformedPayload, "needs \(count) bytes, \(remaining) left")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// A one-byte length then that many bytes of valid UTF-8, at most `maxBytes` long.
    public mutating func readShortString(maxBytes: Int, field: String) throws(DecodeError) -> String {
        try readString(length: Int(try readUInt8()), maxBytes: maxBytes, field: field)
    }

    private mutating func readString(length: Int, maxBytes: Int, field: String) throws(DecodeError) -> String {
        guard length <= maxBytes else {
            throw DecodeError(.malformedPayload, "\(field) is \(length) bytes, limit \(maxBytes)")
        }
        let raw = try readBytes(length)
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw DecodeError(.malformedPayload, "\(field) is not valid UTF-8")
        }
        return text
    }

    private mutating func readBigEndian(_ count: Int) throws(DecodeError) -> UInt64 {
        guard remaining >= count else {
            throw DecodeError(.malformedPayload, "needs \(count) bytes, \(remaining) left")
        }
        var value: UInt64 = 0
        for index in offset..<offset + count { value = value << 8 | UInt64(bytes[index]) }
        offset += count
        return value
    }
}

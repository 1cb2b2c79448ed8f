/// One packet of a capture file.
public struct CapturedPacket: Sendable {
    /// Capture time, nanoseconds since the Unix epoch.
    public var timestampNanos: Int64
    /// The link-layer header type (LINKTYPE_*), from the file or the packet's interface.
    public var linkType: UInt32
    public var data: ArraySlice<UInt8>
}

/// A capture file that cannot be read, and why.
public struct CaptureError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Reads the packets of a classic pcap file (microsecond or nanosecond timestamps, either byte
/// order) or a pcapng file (section header, interface description with if_tsresol, enhanced
/// and simple packet blocks; other blocks are skipped). Every length is checked: a truncated or
/// corrupt file is an error naming the offset, never a crash.
public enum CaptureFile {
    /// The whole packets of a capture, and where a cut-off last record begins, if the file ends
    /// inside one (a tcpdump stopped mid-write): everything before it is still read.
    public struct Contents: Sendable {
        public var packets: [CapturedPacket]
        public var truncatedAt: Int?
    }

    /// Every packet; a file that ends inside a record is an error.
    public static func packets(_ bytes: [UInt8]) throws(CaptureError) -> [CapturedPacket] {
        let contents = try read(bytes)
        if let offset = contents.truncatedAt {
            throw CaptureError(message: "truncated capture: the record at offset \(offset) is cut off")
        }
        return contents.packets
    }

    /// Every whole packet, and where the file is cut off if it ends inside a record. Corruption
    /// anywhere else is still an error.
    public static func read(_ bytes: [UInt8]) throws(CaptureError) -> Contents {
        guard bytes.count >= 4 else { throw CaptureError(message: "not a capture file: \(bytes.count) bytes") }
        let magic = UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
        switch magic {
        case 0xA1B2_C3D4, 0xD4C3_B2A1, 0xA1B2_3C4D, 0x4D3C_B2A1: return try classic(bytes)
        case 0x0A0D_0D0A: return try pcapng(bytes)
        default:
            throw CaptureError(message: "not a pcap or pcapng file (starts with 0x\(String(magic, radix: 16)))")
        }
    }

    /// Little- or big-endian reads with bounds checks.
    struct Reader {
        let bytes: [UInt8]
        var littleEndian: Bool

        func u16(_ offset: Int) throws(CaptureError) -> UInt16 {
            let b = try slice(offset, 2)
            return littleEndian ? UInt16(b[0]) | UInt16(b[1]) << 8 : UInt16(b[0]) << 8 | UInt16(b[1])
        }
        func u32(_ offset: Int) throws(CaptureError) -> UInt32 {
            let b = try slice(offset, 4)
            let value = b.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return littleEndian ? value : b.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        func slice(_ offset: Int, _ count: Int) throws(CaptureError) -> [UInt8] {
            guard offset >= 0, count >= 0, offset <= bytes.count - count else {
                throw CaptureError(
                    message: "truncated capture: needs \(count) bytes at offset \(offset), the file has \(bytes.count)")
            }
            return Array(bytes[offset..<offset + count])
        }
    }

    static func classic(_ bytes: [UInt8]) throws(CaptureError) -> Contents {
        let little = bytes[0] == 0xD4 || bytes[0] == 0x4D
        let reader = Reader(bytes: bytes, littleEndian: little)
        let nanosecond = bytes[0] == 0x4D || bytes[3] == 0x4D
        let linkType = try reader.u32(20)
        var packets: [CapturedPacket] = []
        var offset = 24
        while offset < bytes.count {
            guard bytes.count - offset >= 16 else { return Contents(packets: packets, truncatedAt: offset) }
            let seconds = Int64(try reader.u32(offset))
            let fraction = Int64(try reader.u32(offset + 4))
            let included = Int(try reader.u32(offset + 8))
            guard included <= 262_144 else {
                throw CaptureError(message: "corrupt capture: a record of \(included) bytes at offset \(offset)")
            }
            guard bytes.count - offset - 16 >= included else { return Contents(packets: packets, truncatedAt: offset) }
            packets.append(
                CapturedPacket(
                    timestampNanos: seconds * 1_000_000_000 + (nanosecond ? fraction : fraction * 1000),
                    linkType: linkType,
                    data: bytes[(offset + 16)..<(offset + 16 + included)]))
            offset += 16 + included
        }
        return Contents(packets: packets, truncatedAt: nil)
    }

    static func pcapng(_ bytes: [UInt8]) throws(CaptureError) -> Contents {
        var reader = Reader(bytes: bytes, littleEndian: true)
        var interfaces: [(linkType: UInt32, unitsPerSecond: Int64)] = []
        var packets: [CapturedPacket] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 12 else { return Contents(packets: packets, truncatedAt: offset) }
            let type = try reader.u32(offset)
            if type == 0x0A0D_0D0A {  // section header: its byte-order magic sets the endianness
                let magic = try reader.slice(offset + 8, 4)
                reader.littleEndian = magic == [0x4D, 0x3C, 0x2B, 0x1A]
                guard reader.littleEndian || magic == [0x1A, 0x2B, 0x3C, 0x4D] else {
                    throw CaptureError(message: "corrupt pcapng section header at offset \(offset)")
                }
                interfaces.removeAll()
            }
            let length = Int(try reader.u32(offset + 4))
            guard length >= 12, length % 4 == 0 else {
                throw CaptureError(message: "corrupt pcapng block of \(length) bytes at offset \(offset)")
            }
            guard bytes.count - offset >= length else { return Contents(packets: packets, truncatedAt: offset) }
            let body = offset + 8
            switch type {
            case 1:  // interface description
                var units: Int64 = 1_000_000
                var option = body + 8
                while option + 4 <= offset + length - 4 {
                    let code = try reader.u16(option)
                    let optionLength = Int(try reader.u16(option + 2))
                    if code == 0 { break }
                    if code == 9, optionLength >= 1 {  // if_tsresol
                        let resolution = try reader.slice(option + 4, 1)[0]
                        let exponent = Int64(resolution & 0x7F)
                        guard exponent <= 18 else {
                            throw CaptureError(message: "unsupported timestamp resolution \(resolution)")
                        }
                        units =
                            resolution & 0x80 == 0
                            ? (0..<exponent).reduce(Int64(1)) { value, _ in value * 10 } : Int64(1) << exponent
                    }
                    option += 4 + (optionLength + 3) / 4 * 4
                }
                interfaces.append((UInt32(try reader.u16(body)), units))
            case 6:  // enhanced packet
                let interface = Int(try reader.u32(body))
                guard interface < interfaces.count else {
                    throw CaptureError(message: "packet for undeclared interface \(interface) at offset \(offset)")
                }
                let high = UInt64(try reader.u32(body + 4))
                let low = UInt64(try reader.u32(body + 8))
                let captured = Int(try reader.u32(body + 12))
                guard body + 20 + captured <= offset + length else {
                    throw CaptureError(message: "corrupt enhanced packet block at offset \(offset)")
                }
                let units = interfaces[interface].unitsPerSecond
                let ticks = Int64(bitPattern: high << 32 | low)
                let nanos = ticks / units * 1_000_000_000 + (ticks % units) * 1_000_000_000 / units
                packets.append(
                    CapturedPacket(
                        timestampNanos: nanos, linkType: interfaces[interface].linkType,
                        data: bytes[(body + 20)..<(body + 20 + captured)]))
            case 3:  // simple packet: no timestamp
                guard let first = interfaces.first else {
                    throw CaptureError(message: "packet before any interface at offset \(offset)")
                }
                let captured = min(Int(try reader.u32(body)), length - 16)
                packets.append(
                    CapturedPacket(
                        timestampNanos: 0, linkType: first.linkType, data: bytes[(body + 4)..<(body + 4 + captured)]))
            default:
                break  // section header handled above; statistics, names, comments: nothing to show
            }
            offset += length
        }
        return Contents(packets: packets, truncatedAt: nil)
    }
}

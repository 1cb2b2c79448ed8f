import CoplayCore
import CoplayRuntime
import Foundation
import Testing

/// `coplay dump` on captures built from the golden vectors (Tests/Vectors/wire-v1.txt), in
/// every file format and link type it reads.
@Suite struct CaptureTests {
    static let vectors: [(name: String, bytes: [UInt8], invalid: Bool)] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/wire-v1.txt")
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: " ")
            let hex = fields.last!
            var bytes: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                bytes.append(UInt8(hex[index..<next], radix: 16)!)
                index = next
            }
            return (String(fields[0]), bytes, fields[0].hasPrefix("!"))
        }
    }()

    /// An IPv4/UDP packet from 10.0.0.1:40000 to the default group.
    static func udp(_ payload: [UInt8], protocolNumber: UInt8 = 17, fragmentFlags: UInt8 = 0) -> [UInt8] {
        let total = 20 + 8 + payload.count
        var ip: [UInt8] = [
            0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 1, fragmentFlags, 0, 64, protocolNumber, 0, 0, 10, 0, 0,
            1, 239, 255, 77, 1,
        ]
        ip += [0x9C, 0x40, 0xBA, 0x54, UInt8((8 + payload.count) >> 8), UInt8((8 + payload.count) & 0xFF), 0, 0]
        return ip + payload
    }

    static func linkFrame(_ ip: [UInt8], linkType: UInt32) -> [UInt8] {
        switch linkType {
        case 0: return [2, 0, 0, 0] + ip
        case 1: return [UInt8](repeating: 0xAA, count: 12) + [0x81, 0x00, 0, 5] + [0x08, 0x00] + ip  // with a VLAN tag
        case 113: return [0, 4, 0, 1, 0, 6] + [UInt8](repeating: 0, count: 8) + [0x08, 0x00] + ip
        case 276: return [0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, 4, 6] + [UInt8](repeating: 0, count: 8) + ip
        default: return ip
        }
    }

    static func classicPcap(_ frames: [[UInt8]], linkType: UInt32) -> [UInt8] {
        func le32(_ v: UInt32) -> [UInt8] {
            [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
        }
        var file: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0] + le32(0) + le32(0) + le32(65535) + le32(linkType)
        for (index, frame) in frames.enumerated() {
            file +=
                le32(1_780_000_000 + UInt32(index)) + le32(123_456) + le32(UInt32(frame.count))
                + le32(UInt32(frame.count)) + frame
        }
        return file
    }

    /// Big-endian pcapng with nanosecond timestamps (if_tsresol = 9).
    static func pcapng(_ frames: [[UInt8]], linkType: UInt16) -> [UInt8] {
        func be32(_ v: UInt32) -> [UInt8] {
            [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
        }
        func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
            let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
            return be32(type) + be32(UInt32(padded.count + 12)) + padded + be32(UInt32(padded.count + 12))
        }
        var file = block(0x0A0D_0D0A, [0x1A, 0x2B, 0x3C, 0x4D, 0, 1, 0, 0] + [UInt8](repeating: 0xFF, count: 8))
        file += block(
            1,
            [UInt8(linkType >> 8), UInt8(linkType & 0xFF), 0, 0] + be32(65535) + [0, 9, 0, 1, 9, 0, 0, 0] + [
                0, 0, 0, 0,
            ])
        for frame in frames {
            let nanos: UInt64 = 1_780_000_000_123_456_789
            file += block(
                6,
                be32(0) + be32(UInt32(nanos >> 32)) + be32(UInt32(nanos & 0xFFFF_FFFF)) + be32(UInt32(frame.count))
                    + be32(UInt32(frame.count)) + frame)
        }
        return file
    }

    @Test(arguments: [UInt32(0), 1, 101, 113, 276])
    func everyVector_isFoundAndDecodedAsTheCodecDoes(linkType: UInt32) throws {
        var frames = Self.vectors.map { Self.linkFrame(Self.udp($0.bytes), linkType: linkType) }
        // Not ours: a TCP segment, and an IP fragment.
        frames.append(Self.linkFrame(Self.udp([1, 2, 3], protocolNumber: 6), linkType: linkType))
        frames.append(Self.linkFrame(Self.udp(Self.vectors[0].bytes, fragmentFlags: 0x20), linkType: linkType))
        for file in [Self.classicPcap(frames, linkType: linkType), Self.pcapng(frames, linkType: UInt16(linkType))] {
            let (lines, totals) = try Dump.lines(for: file, json: true)
            let startsWithMagic = Self.vectors.filter { $0.bytes.starts(with: WireFormat.magic) }
            #expect(totals.packets == frames.count)
            #expect(totals.coplay == startsWithMagic.count)
            #expect(totals.malformed == startsWithMagic.filter(\.invalid).count)
            #expect(totals.skipped == frames.count - startsWithMagic.count)
            // Each decoded line agrees with the codec on the header's fields.
            let decoded = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["type"] != nil }
            let valid = Self.vectors.filter { !$0.invalid }.map { try! WireFormat.decode($0.bytes) }
            #expect(decoded.count == valid.count)
            for (line, datagram) in zip(decoded, valid) {
                #expect(line["type"] as? String == datagram.payload.type.description)
                #expect((line["sequence"] as? NSNumber)?.uint32Value == datagram.sequence)
                #expect(line["sender"] as? String == datagram.sender.id.description)
            }
        }
    }

    @Test func pcapngNanosecondTimestamps_andClassicMicroseconds_areRead() throws {
        let frame = Self.linkFrame(Self.udp(Self.vectors[0].bytes), linkType: 1)
        let ng = try CaptureFile.packets(Self.pcapng([frame], linkType: 1))
        #expect(ng.first?.timestampNanos == 1_780_000_000_123_456_789)
        let classic = try CaptureFile.packets(Self.classicPcap([frame], linkType: 1))
        #expect(classic.first?.timestampNanos == 1_780_000_000_123_456_000)
    }

    @Test func truncatedOrForeignFiles_areClearErrors() {
        let file = Self.classicPcap([Self.linkFrame(Self.udp(Self.vectors[0].bytes), linkType: 1)], linkType: 1)
        #expect(throws: CaptureError.self) { try CaptureFile.packets(Array(file.dropLast(5))) }
        do {
            _ = try CaptureFile.packets(Array(file.dropLast(5)))
        } catch {
            #expect(error.message.contains("truncated capture"))
        }
        do {
            _ = try CaptureFile.packets(Array("not a capture at all".utf8))
        } catch {
            #expect(error.message.contains("not a pcap or pcapng file"))
        }
    }
}

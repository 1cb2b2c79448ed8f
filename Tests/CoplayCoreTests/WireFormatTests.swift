import CoplayCore
import Foundation
import Testing

@Suite struct WireFormatTests {
    /// Parses Tests/Vectors/wire-v1.txt: `name hex` lines; `!name kind hex` for rejections.
    static func loadVectorFile() throws -> (valid: [String: [UInt8]], invalid: [String: (String, [UInt8])]) {
        let text = try String(contentsOf: vectorsDirectory.appendingPathComponent("wire-v1.txt"), encoding: .utf8)
        var valid: [String: [UInt8]] = [:]
        var invalid: [String: (String, [UInt8])] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ")
            if fields[0].hasPrefix("!") {
                invalid[String(fields[0].dropFirst())] = (String(fields[1]), hexBytes(fields[2]))
            } else {
                valid[String(fields[0])] = hexBytes(fields[1])
            }
        }
        return (valid, invalid)
    }

    static func hexBytes(_ text: some StringProtocol) -> [UInt8] {
        let bytes = Hex.decode(text)
        #expect(bytes != nil, "a test vector that is not hex: \(text)")
        return bytes ?? []
    }

    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    @Test func hex_roundTrips_andRejectsWhatIsNotHex() {
        let bytes: [UInt8] = [0x00, 0x0F, 0xA5, 0xFF]
        #expect(Hex.encode(bytes) == "000fa5ff")
        #expect(Hex.decode("000fa5ff") == bytes && Hex.decode("000FA5FF") == bytes)
        #expect(Hex.decode("abc") == nil && Hex.decode("zz") == nil && Hex.decode("") == [])
    }

    @Test func goldenVectors_matchTheCodecBothWays() throws {
        if ProcessInfo.processInfo.environment["COPLAY_WRITE_VECTORS"] == "1" {
            var lines = [
                "# coplay wire format v1 test vectors: `name hex` decodes; `!name kind hex` is rejected as kind.",
                "# Shared by the Swift codec tests and the Wireshark dissector test. PROTOCOL.md explains every byte.",
            ]
            lines += WireVectors.valid.map { "\($0.name) \(Self.hex(WireFormat.encode($0.datagram)))" }
            lines += WireVectors.invalid.map { "!\($0.name) \($0.kind.rawValue) \(Self.hex($0.bytes))" }
            try (lines.joined(separator: "\n") + "\n").write(
                to: vectorsDirectory.appendingPathComponent("wire-v1.txt"), atomically: true, encoding: .utf8)
        }
        let file = try Self.loadVectorFile()
        #expect(file.valid.count == WireVectors.valid.count)
        for (name, datagram) in WireVectors.valid {
            let golden = try #require(file.valid[name], "vector \(name) missing from wire-v1.txt")
            #expect(WireFormat.encode(datagram) == golden, "encoding of \(name) changed")
            #expect(try WireFormat.decode(golden) == datagram, "decoding of \(name) changed")
        }
        #expect(file.invalid.count == WireVectors.invalid.count)
        for (name, (kind, bytes)) in file.invalid {
            #expect(throws: DecodeError.self, "\(name) must be rejected") { try WireFormat.decode(bytes) }
            do {
                _ = try WireFormat.decode(bytes)
            } catch {
                #expect(error.kind.rawValue == kind, "\(name): \(error)")
            }
        }
    }

    @Test func header_isThirtyFourBytesWithFieldsAtDocumentedOffsets() throws {
        let datagram = WireVectors.valid[0].datagram
        let encoded = WireFormat.encode(datagram)
        #expect(Array(encoded[0..<4]) == Array("CPLY".utf8))
        #expect(encoded[4] == 1)
        #expect(encoded[5] == MessageType.hello.rawValue)
        #expect(encoded[6] == 0 && encoded[7] == 0)
        #expect(Array(encoded[16..<24]) == [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF])
        #expect(Array(encoded[24..<28]) == [1, 2, 3, 4])
        #expect(Array(encoded[28..<32]) == [0, 0, 0, 1])
        #expect(Int(encoded[32]) << 8 | Int(encoded[33]) == encoded.count - WireFormat.headerBytes)
        #expect(SessionID(name: "living-room").rawValue == fnv1a64(Array("living-room".utf8)))
    }

    @Test func everyValidVector_roundTripsAndFitsADatagram() throws {
        for (name, datagram) in WireVectors.valid {
            let encoded = WireFormat.encode(datagram)
            #expect(encoded.count <= 1200, "\(name)")
            #expect(try WireFormat.decode(encoded) == datagram, "\(name)")
        }
    }

    @Test func longestName_fitsAndOneByteMoreIsRejected() throws {
        let sender = WireVectors.sender
        let name64 = String(repeating: "é", count: 32)  // 64 bytes of UTF-8
        let ok = Datagram(
            session: session, sender: sender, sequence: 1, payload: .hello(Announcement(unicastPort: 1, name: name64)))
        #expect(try WireFormat.decode(WireFormat.encode(ok)) == ok)
        let tooLong = Datagram(
            session: session, sender: sender, sequence: 1,
            payload: .hello(Announcement(unicastPort: 1, name: name64 + "x")))
        #expect(throws: DecodeError(.malformedPayload, "name is 65 bytes, limit 64")) {
            try WireFormat.decode(WireFormat.encode(tooLong))
        }
    }

    /// 100,000 seeded inputs: random bytes, and valid datagrams with bytes flipped, inserted,
    /// removed or truncated. The decoder must never trap, and whatever it accepts must be the
    /// canonical encoding of what it returns (no two byte strings decode to the same datagram).
    @Test func fuzz_decoderRejectsOrRoundTripsEveryInput() throws {
        let seed = ProcessInfo.processInfo.environment["COPLAY_SEED"].flatMap { UInt64($0) } ?? 0xC0FFEE
        var random = SplitMix64(seed: seed)
        let seeds = WireVectors.valid.map { WireFormat.encode($0.datagram) }
        var verdicts: [String: Int] = [:]
        for round in 0..<100_000 {
            var input: [UInt8]
            switch round % 4 {
            case 0:
                input = (0..<Int(random.next() % 80)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                if random.next() % 2 == 0 { input = Array("CPLY".utf8) + [1] + input }
            default:
                input = seeds[Int(random.next() % UInt64(seeds.count))]
                for _ in 0...(random.next() % 3) where !input.isEmpty {
                    let position = Int(random.next() % UInt64(input.count))
                    switch random.next() % 4 {
                    case 0: input[position] = UInt8(truncatingIfNeeded: random.next())
                    case 1: input[position] ^= 1 << (random.next() % 8)
                    case 2: input.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                    default: input.removeSubrange(position...)
                    }
                }
            }
            do {
                let datagram = try WireFormat.decode(input)
                #expect(WireFormat.encode(datagram) == input, "reproduce with COPLAY_SEED=\(seed), round \(round)")
                verdicts["accepted", default: 0] += 1
            } catch {
                verdicts[error.kind.rawValue, default: 0] += 1
            }
        }
        #expect(verdicts.values.reduce(0, +) == 100_000)
        // The mutations reach every layer of the decoder, not just the magic check.
        for kind in [
            "accepted", "tooShort", "badMagic", "unsupportedVersion", "unknownType", "badFlags", "lengthMismatch",
            "malformedPayload",
        ] {
            #expect(verdicts[kind, default: 0] > 0, "no input ended as \(kind): \(verdicts)")
        }
    }
}

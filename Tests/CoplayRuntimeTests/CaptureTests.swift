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
            return (String(fields[0]), Hex.decode(fields.last!) ?? [], fields[0].hasPrefix("!"))
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

    /// The hello vector in an IPv6/UDP packet from [fd77::1]:40000 to [ff12::7c:1]:47700, behind
    /// Ethernet (EtherType 86DD) and as raw IPv6 (link type 229).
    @Test(arguments: [UInt32(1), 229])
    func ipv6Datagrams_areFoundToo(linkType: UInt32) throws {
        let payload = Self.vectors[0].bytes
        let udpLength = 8 + payload.count
        var ip: [UInt8] = [0x60, 0, 0, 0, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 17, 1]
        ip += [0xFD, 0x77] + [UInt8](repeating: 0, count: 13) + [1]
        ip += [0xFF, 0x12] + [UInt8](repeating: 0, count: 10) + [0, 0x7C, 0, 1]
        ip += [0x9C, 0x40, 0xBA, 0x54, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 0, 0] + payload
        let frame = linkType == 1 ? [UInt8](repeating: 0xAA, count: 12) + [0x86, 0xDD] + ip : ip
        let (lines, totals) = try Dump.lines(for: Self.classicPcap([frame], linkType: linkType), json: false)
        #expect(totals.coplay == 1 && totals.malformed == 0, "\(lines)")
        #expect(lines.contains { $0.contains("[fd77::1]:40000") && $0.contains("hello") }, "\(lines)")
    }

    @Test func strictJSONChecker_rejectsADuplicateKey() {
        #expect(StrictJSON.problem(in: #"{"a":1,"b":[{"c":"x"}],"d":null}"#) == nil)
        #expect(StrictJSON.problem(in: #"{"name":"a","x":1,"name":"b"}"#) != nil)
        #expect(StrictJSON.problem(in: #"{"a":1"#) != nil)
    }

    @Test func dumpJSON_isValidForAParserThatRejectsDuplicateKeys() throws {
        let frames = Self.vectors.map { Self.linkFrame(Self.udp($0.bytes), linkType: 1) }
        let (lines, _) = try Dump.lines(for: Self.classicPcap(frames, linkType: 1), json: true)
        #expect(lines.count == Self.vectors.filter { $0.bytes.starts(with: WireFormat.magic) }.count)
        for line in lines {
            #expect(StrictJSON.problem(in: line) == nil, "\(line)")
        }
    }

    @Test func truncatedLastRecord_isReported_andEveryWholePacketIsDecoded() throws {
        let frames = Self.vectors.filter { !$0.invalid }.prefix(3).map {
            Self.linkFrame(Self.udp($0.bytes), linkType: 1)
        }
        for file in [Self.classicPcap(frames, linkType: 1), Self.pcapng(frames, linkType: 1)] {
            for cut in [5, frames[2].count] {  // inside the last packet's data, or its header
                let (lines, totals) = try Dump.lines(for: Array(file.dropLast(cut)), json: false)
                #expect(totals.packets == 2 && lines.count == 2, "cut \(cut): \(totals)")
                #expect(totals.truncatedAt != nil)
            }
            let (whole, totals) = try Dump.lines(for: file, json: false)
            #expect(whole.count == 3 && totals.truncatedAt == nil)
        }
    }

    @Test func withAKeyFile_dumpChecksEveryTag_andMarksForgeries() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        let datagram = try WireFormat.decode(Self.vectors.first { !$0.invalid }!.bytes)
        let keys = GroupKeys(keys: [key], session: datagram.session)
        let good = WireFormat.encode(datagram, signedWith: keys)
        var forged = good
        forged[forged.count - 1] ^= 0xFF
        let untagged = WireFormat.encode(datagram)
        let frames = [good, forged, untagged].map { Self.linkFrame(Self.udp($0), linkType: 1) }
        let (lines, totals) = try Dump.lines(for: Self.classicPcap(frames, linkType: 1), json: false, keys: [key])
        #expect(lines.count == 3)
        #expect(lines[0].hasSuffix("tag=valid") && lines[1].hasSuffix("tag=FORGED") && lines[2].hasSuffix("tag=absent"))
        #expect(totals.forged == 1 && totals.untagged == 1)
        let (json, _) = try Dump.lines(for: Self.classicPcap(frames, linkType: 1), json: true, keys: [key])
        #expect(json.allSatisfy { StrictJSON.problem(in: $0) == nil })
        #expect(json[1].contains("\"tag\":\"forged\""))
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

/// One truth: the Lua dissector (Tools/coplay.lua, run by tshark) and the Swift codec agree on
/// every golden vector, field for field, and both reject the same malformed ones.
@Suite struct DissectorAgreementTests {
    static let tshark = ["/usr/bin/tshark", "/usr/local/bin/tshark"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Tools/coplay.lua").path

    /// Runs tshark with the dissector on `file`; one array of field values per packet.
    static func tsharkFields(_ file: String, _ fields: [String]) throws -> [[String]] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tshark!)
        process.arguments =
            ["-X", "lua_script:\(script)", "-r", file, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
            + fields.flatMap { ["-e", $0] }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    @Test(.enabled(if: tshark != nil, "needs tshark"))
    func dissectorAndCodec_agreeOnEveryVector() throws {
        let withMagic = CaptureTests.vectors.filter { $0.bytes.starts(with: WireFormat.magic) }
        let frames = withMagic.map { CaptureTests.linkFrame(CaptureTests.udp($0.bytes), linkType: 1) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("coplay-vectors-\(getpid()).pcap")
        try Data(CaptureTests.classicPcap(frames, linkType: 1)).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fields = [
            "coplay.type", "coplay.session", "coplay.sender", "coplay.incarnation", "coplay.sequence",
            "coplay.announce.name",
            "coplay.item", "coplay.command.lamport", "coplay.dot.counter", "coplay.probe.t1", "coplay.nack.from",
            "coplay.message.parts", "coplay.end.reason", "coplay.share.fallback", "coplay.announce.port",
            "coplay.leave.reason",
            "coplay.probe.t2", "coplay.probe.t3", "coplay.nack.to", "coplay.command.rate", "coplay.command.position",
            "coplay.message.id", "coplay.share.url", "coplay.share.title", "coplay.share.duration",
            "coplay.interstitial.id", "coplay.interstitial.duration", "coplay.interstitial.at",
            "coplay.announce.waits_out", "coplay.state.snapshot", "coplay.state.parts",
            "coplay.state.lamport",
            "coplay.state.wanted", "coplay.state.commands", "coplay.announce.number",
            "coplay.announce.sent_at",
            "coplay.announce.wants_unicast", "coplay.sent_at",
            "_ws.expert.message",
        ]
        let rows = try Self.tsharkFields(file.path, fields)
        #expect(rows.count == withMagic.count)
        let (lines, _) = try Dump.lines(for: CaptureTests.classicPcap(frames, linkType: 1), json: true)
        let dumped = lines.map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        for ((vector, row), json) in zip(zip(withMagic, rows), dumped) {
            let value = Dictionary(
                uniqueKeysWithValues: zip(fields, row + Array(repeating: "", count: max(0, fields.count - row.count))))
            let malformedByDissector = !(value["_ws.expert.message"] ?? "").isEmpty
            if vector.invalid {
                #expect(malformedByDissector, "the dissector accepted \(vector.name)")
                #expect(json?["malformed"] != nil, "the codec accepted \(vector.name)")
                continue
            }
            #expect(
                !malformedByDissector, "the dissector rejected \(vector.name): \(value["_ws.expert.message"] ?? "")")
            guard let json, let datagram = try? WireFormat.decode(vector.bytes) else {
                Issue.record("\(vector.name) did not decode")
                continue
            }
            func number(_ text: String?) -> UInt64? {
                guard let text, !text.isEmpty else { return nil }
                return text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
            }
            #expect(number(value["coplay.type"]) == UInt64(datagram.payload.type.rawValue), "\(vector.name): type")
            #expect(number(value["coplay.session"]) == datagram.session.rawValue, "\(vector.name): session")
            #expect(number(value["coplay.sender"]) == datagram.sender.id.rawValue, "\(vector.name): sender")
            #expect(
                number(value["coplay.incarnation"]) == UInt64(datagram.sender.incarnation.rawValue),
                "\(vector.name): incarnation")
            #expect(number(value["coplay.sequence"]) == UInt64(datagram.sequence), "\(vector.name): sequence")
            // The send time (a keyed datagram's freshness): the dissector, the dump and the codec agree.
            let sentTime = (json["sentTimeUnixNanos"] as? NSNumber)?.int64Value
            #expect(sentTime == datagram.sentAt?.unixNanos, "\(vector.name): the dump's send time")
            #expect(value["coplay.sent_at"].flatMap { Int64($0) } == sentTime, "\(vector.name): the dissector's")
            if datagram.payload.type == .hello || datagram.payload.type == .heartbeat {
                #expect(value["coplay.announce.name"] == json["name"] as? String, "\(vector.name): name")
                // The multicast path's stamp and flag: the dissector, the dump and the codec agree.
                let stamped = (json["number"] as? NSNumber)?.uint64Value
                #expect(number(value["coplay.announce.number"]) == stamped, "\(vector.name): announcement number")
                let sentAt = (json["sentAtUnixNanos"] as? NSNumber)?.int64Value
                #expect(value["coplay.announce.sent_at"].flatMap { Int64($0) } == sentAt, "\(vector.name): sent at")
                if case .heartbeat(let announcement) = datagram.payload, announcement.path != nil {
                    #expect(stamped != nil && sentAt != nil, "\(vector.name): the stamp is in the dump")
                }
                let wants = json["wantsUnicast"] as? Bool
                #expect(["True", "1"].contains(value["coplay.announce.wants_unicast"] ?? "") == (wants ?? false))
            }
            if let item = json["item"] as? String { #expect(value["coplay.item"] == item, "\(vector.name): item") }
            if let lamport = (json["lamport"] as? NSNumber)?.uint64Value, datagram.payload.type == .command {
                #expect(number(value["coplay.command.lamport"]) == lamport, "\(vector.name): lamport")
            }
            if case .stateRequest(let request) = datagram.payload {
                #expect(number(value["coplay.state.snapshot"]) == request.snapshot, "\(vector.name): snapshot")
                #expect(number(value["coplay.state.wanted"]) == UInt64(request.wanted), "\(vector.name): wanted")
                #expect(json["snapshot"] as? String == String(request.snapshot, radix: 16), "\(vector.name): dump")
            }
            if case .state(let part) = datagram.payload {
                #expect(number(value["coplay.state.snapshot"]) == part.snapshot, "\(vector.name): snapshot")
                #expect(number(value["coplay.state.parts"]) == UInt64(part.count), "\(vector.name): parts")
                #expect(number(value["coplay.state.lamport"]) == part.lamport, "\(vector.name): lamport")
                #expect(
                    number(value["coplay.state.commands"]) == UInt64(part.winners.count), "\(vector.name): commands")
                #expect((json["winners"] as? [Any])?.count == part.winners.count, "\(vector.name): dump")
                #expect((json["lamport"] as? NSNumber)?.uint64Value == part.lamport, "\(vector.name): dump lamport")
            }
            if let dot = json["dot"] as? [String: Any] {
                #expect(
                    number(value["coplay.dot.counter"]) == (dot["counter"] as? NSNumber)?.uint64Value,
                    "\(vector.name): dot")
            }
            if let t1 = (json["t1"] as? NSNumber)?.int64Value {
                #expect(value["coplay.probe.t1"] == String(t1), "\(vector.name): t1")
            }
            if let ranges = json["ranges"] as? [[String: Any]] {
                #expect(
                    number(value["coplay.nack.from"]) == (ranges[0]["from"] as? NSNumber)?.uint64Value,
                    "\(vector.name): nack")
            }
            if let parts = (json["parts"] as? NSNumber)?.uint64Value {
                #expect(number(value["coplay.message.parts"]) == parts, "\(vector.name): parts")
            }
            if let reason = json["reason"] as? String, datagram.payload.type == .end {
                #expect(value["coplay.end.reason"] == reason, "\(vector.name): end")
            }
            if let fallback = json["fallbackURL"] as? String, !fallback.isEmpty {
                #expect(value["coplay.share.fallback"] == fallback, "\(vector.name): fallback")
            }
            if let port = (json["unicastPort"] as? NSNumber)?.uint64Value {
                #expect(number(value["coplay.announce.port"]) == port, "\(vector.name): port")
            }
            if datagram.payload.type == .leave, let reason = json["reason"] as? String {
                #expect(
                    number(value["coplay.leave.reason"]) == (reason == "left" ? 0 : 1), "\(vector.name): leave reason")
            }
            if let t2 = (json["t2"] as? NSNumber)?.int64Value {
                #expect(value["coplay.probe.t2"] == String(t2), "\(vector.name): t2")
            }
            if let t3 = (json["t3"] as? NSNumber)?.int64Value {
                #expect(value["coplay.probe.t3"] == String(t3), "\(vector.name): t3")
            }
            if let ranges = json["ranges"] as? [[String: Any]] {
                #expect(
                    number(value["coplay.nack.to"]) == (ranges[0]["to"] as? NSNumber)?.uint64Value,
                    "\(vector.name): nack to")
            }
            if let rate = (json["rate"] as? NSNumber)?.doubleValue {
                #expect(Double(value["coplay.command.rate"] ?? "") == rate, "\(vector.name): rate")
            }
            if let position = (json["position"] as? NSNumber)?.doubleValue {
                #expect(Double(value["coplay.command.position"] ?? "") == position, "\(vector.name): position")
            }
            if let id = (json["messageID"] as? NSNumber)?.uint64Value {
                #expect(number(value["coplay.message.id"]) == id, "\(vector.name): message id")
            }
            if let url = json["url"] as? String { #expect(value["coplay.share.url"] == url, "\(vector.name): url") }
            if let title = json["title"] as? String {
                #expect(value["coplay.share.title"] == title, "\(vector.name): title")
            }
            if let waitsOut = json["waitsOutSuspensions"] as? Bool {
                let shown = value["coplay.announce.waits_out"] ?? ""
                #expect(["1", "True", "true"].contains(shown) == waitsOut, "\(vector.name): waits out (\(shown))")
            }
            if let duration = (json["duration"] as? NSNumber)?.doubleValue {
                let field =
                    json["interstitial"] == nil ? "coplay.share.duration" : "coplay.interstitial.duration"
                #expect(Double(value[field] ?? "") == duration, "\(vector.name): duration")
            }
            if let interstitial = json["interstitial"] as? String {
                #expect(value["coplay.interstitial.id"] == interstitial, "\(vector.name): interstitial")
            }
            if let at = (json["at"] as? NSNumber)?.doubleValue, json["interstitial"] != nil {
                #expect(
                    Double(value["coplay.interstitial.at"] ?? "") == at, "\(vector.name): interstitial at")
            }
        }
    }
}

/// Wire format version 1: a 34-byte header, a typed payload, an optional send time, an optional
/// authentication tag.
/// All integers are big-endian. PROTOCOL.md is the byte-by-byte specification of this file.
///
/// ```
/// offset size field
///  0     4   magic "CPLY" (43 50 4C 59)
///  4     1   version (1)
///  5     1   type (MessageType)
///  6     1   flags: bit 0 = authentication tag present, bit 1 = send time present; bits 2-7 zero
///  7     1   tag length in bytes: 0 without bit 0, 1...32 with it
///  8     8   session id (FNV-1a 64 of the session name)
/// 16     8   sender peer id
/// 24     4   sender incarnation
/// 28     4   sequence number
/// 32     2   payload length n
/// 34     n   payload
/// 34+n   s   send time: 8 bytes (signed Unix nanoseconds, the sender's clock) with bit 1, else 0
/// 34+n+s t   authentication tag
/// ```
public enum WireFormat {
    public static let magic: [UInt8] = [0x43, 0x50, 0x4C, 0x59]

    /// The sender's peer id from a datagram's header, read without decoding anything else (the
    /// shell's event loop uses it to let known members through first under a flood); nil if
    /// the bytes are too short or lack the magic. It is only a claim until decoded and checked.
    @inlinable
    public static func claimedSender(of bytes: some Collection<UInt8>) -> UInt64? {
        guard bytes.count >= headerBytes, bytes.starts(with: magic) else { return nil }
        return bytes.dropFirst(16).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
    /// The message type the header claims (the shell's event loop sets strangers' hellos aside
    /// rather than dropping them); nil where `claimedSender` is.
    @inlinable
    public static func claimedType(of bytes: some Collection<UInt8>) -> MessageType? {
        guard bytes.count >= headerBytes, bytes.starts(with: magic) else { return nil }
        return MessageType(rawValue: bytes.dropFirst(5).first ?? 0)
    }
    public static let version: UInt8 = 1
    public static let headerBytes = 34
    public static let authTagBytesMax = 32
    /// Entries in one `peer-list` (at most 31 bytes each, an IPv6 one: 992 bytes at most, within
    /// any datagram with its header and tag).
    public static let peerListEntriesMax = 32
    /// The longest reason an `end` datagram carries, in bytes of UTF-8.
    public static let endReasonBytesMax = 128
    /// The default multicast group and port (administratively scoped, RFC 2365).
    public static let defaultGroupAddress = "239.255.77.1"
    public static let defaultPort: UInt16 = 47700

    private static let flagAuthTag: UInt8 = 0x01
    private static let flagSentTime: UInt8 = 0x02
    /// The bytes of the send time, when flag bit 1 says it is there.
    public static let sentTimeBytes = 8
    private static let helloFlagReply: UInt8 = 0x01
    private static let helloFlagWaiting: UInt8 = 0x02
    private static let helloFlagReady: UInt8 = 0x04
    private static let helloFlagWaitsOut: UInt8 = 0x08
    private static let helloFlagPath: UInt8 = 0x10
    private static let helloFlagWantsUnicast: UInt8 = 0x20
    private static let helloFlagViewer: UInt8 = 0x40
    private static let helloFlagSeat: UInt8 = 0x80
    private static let helloFlags: UInt8 =
        helloFlagReply | helloFlagWaiting | helloFlagReady | helloFlagWaitsOut | helloFlagPath | helloFlagWantsUnicast
        | helloFlagViewer | helloFlagSeat
    static let commandFlagRepair: UInt8 = 0x01

    // MARK: Encoding

    public static func encode(_ datagram: Datagram) -> [UInt8] {
        precondition(datagram.authTag.count <= authTagBytesMax, "auth tag of \(datagram.authTag.count) bytes")
        var writer = ByteWriter(capacity: headerBytes + 64)
        writer.write(bytes: magic)
        writer.write(version)
        writer.write(datagram.payload.type.rawValue)
        writer.write((datagram.authTag.isEmpty ? 0 : flagAuthTag) | (datagram.sentAt == nil ? 0 : flagSentTime))
        writer.write(UInt8(datagram.authTag.count))
        writer.write(datagram.session.rawValue)
        writer.write(datagram.sender.id.rawValue)
        writer.write(datagram.sender.incarnation.rawValue)
        writer.write(datagram.sequence)
        writer.write(UInt16(0))  // payload length, patched below
        let payloadStart = writer.bytes.count
        encodePayload(datagram.payload, into: &writer)
        writer.patch(UInt16(writer.bytes.count - payloadStart), at: payloadStart - 2)
        if let sentAt = datagram.sentAt { writer.write(UInt64(bitPattern: sentAt.unixNanos)) }
        writer.write(bytes: datagram.authTag)
        return writer.bytes
    }

    /// The encoded length of a datagram.
    public static func encodedSize(_ datagram: Datagram) -> Int { encode(datagram).count }

    private static func encodePayload(_ payload: Payload, into writer: inout ByteWriter) {
        switch payload {
        case .hello(let announcement), .heartbeat(let announcement):
            var flags: UInt8 = announcement.isReply ? helloFlagReply : 0
            if announcement.isWaiting { flags |= helloFlagWaiting }
            if announcement.isReady { flags |= helloFlagReady }
            if announcement.waitsOutSuspensions { flags |= helloFlagWaitsOut }
            if announcement.path != nil { flags |= helloFlagPath }
            if announcement.wantsUnicast { flags |= helloFlagWantsUnicast }
            if announcement.isViewer { flags |= helloFlagViewer }
            if announcement.seat { flags |= helloFlagSeat }
            writer.write(flags)
            writer.write(announcement.unicastPort)
            writer.writeShortString(announcement.name)
            writer.writeShortString(announcement.item ?? "")
            precondition(announcement.suspensions.count <= Announcement.suspensionsMax, "too many suspensions")
            writer.write(UInt8(announcement.suspensions.count))
            for reason in announcement.suspensions { writer.writeShortString(reason) }
            writeVectorClock(announcement.digest, into: &writer)
            if let path = announcement.path {
                writer.write(path.number)
                writer.write(path.sentAt.unixNanos)
            }
        case .leave(let reason):
            writer.write(reason.rawValue)
        case .probe(let probe):
            writer.write(probe.token)
            writer.write(probe.originWall.unixNanos)
        case .probeReply(let reply):
            writer.write(reply.token)
            writer.write(reply.originWall.unixNanos)
            writer.write(reply.receiveWall.unixNanos)
            writer.write(reply.transmitWall.unixNanos)
        case .command(let envelope, let isRepair):
            writer.write(isRepair ? commandFlagRepair : 0)
            writeCommand(envelope, into: &writer)
        case .nack(let ranges):
            writer.write(UInt8(ranges.count))
            for range in ranges {
                writeMember(range.origin, into: &writer)
                writer.write(range.from)
                writer.write(range.to)
            }
        case .ready(let trigger):
            writeDot(trigger, into: &writer)
        case .end(let reason):
            writer.writeShortString(reason)
        case .unreliableMessage(let part):
            writeMessagePart(part, into: &writer)
        case .peerList(let entries):
            precondition(entries.count <= peerListEntriesMax, "peer list of \(entries.count) entries")
            writer.write(UInt8(entries.count))
            for entry in entries {
                writeMember(entry.member, into: &writer)
                if let v4 = entry.endpoint.address.ipv4 {
                    writer.write(UInt8(4))
                    writer.write(v4)
                } else {
                    writer.write(UInt8(6))
                    writer.write(entry.endpoint.address.high)
                    writer.write(entry.endpoint.address.low)
                }
                writer.write(entry.endpoint.port)
            }
        case .audience(let summary):
            writer.write(summary.viewers)
            writer.write(summary.audience)
        case .stateRequest(let request):
            writer.write(request.snapshot)
            writer.write(request.wanted)
            writer.write(request.base)
        case .state(let part):
            writeStatePart(part, into: &writer)
        }
    }

    // MARK: Decoding

    /// Decodes one datagram, or throws the reason it is rejected. Never traps, whatever the bytes.
    public static func decode(
        _ bytes: ArraySlice<UInt8>, datagramBytesMax: Int = 1200, nameBytesMax: Int = 64
    ) throws(DecodeError) -> Datagram {
        guard bytes.count >= headerBytes else {
            throw DecodeError(.tooShort, "\(bytes.count) bytes, header is \(headerBytes)")
        }
        guard bytes.count <= datagramBytesMax else {
            throw DecodeError(.tooLong, "\(bytes.count) bytes, limit \(datagramBytesMax)")
        }
        var reader = ByteReader(bytes)
        guard Array(try reader.readBytes(4)) == magic else { throw DecodeError(.badMagic, "not a coplay datagram") }
        let version = try reader.readUInt8()
        guard version == Self.version else {
            throw DecodeError(.unsupportedVersion, "version \(version), this agent speaks \(Self.version)")
        }
        let typeByte = try reader.readUInt8()
        guard let type = MessageType(rawValue: typeByte) else {
            throw DecodeError(.unknownType, "type 0x\(String(typeByte, radix: 16))")
        }
        let flags = try reader.readUInt8()
        let tagLength = Int(try reader.readUInt8())
        guard flags & ~(flagAuthTag | flagSentTime) == 0 else {
            throw DecodeError(.badFlags, "reserved flag bits 0x\(String(flags, radix: 16))")
        }
        let hasTag = flags & flagAuthTag != 0
        guard hasTag ? (1...authTagBytesMax).contains(tagLength) : tagLength == 0 else {
            throw DecodeError(.badFlags, "tag length \(tagLength) with tag flag \(hasTag ? "set" : "clear")")
        }
        let session = SessionID(try reader.readUInt64())
        let sender = Member(id: PeerID(try reader.readUInt64()), incarnation: Incarnation(try reader.readUInt32()))
        let sequence = try reader.readUInt32()
        let payloadLength = Int(try reader.readUInt16())
        let timeLength = flags & flagSentTime != 0 ? sentTimeBytes : 0
        guard headerBytes + payloadLength + timeLength + tagLength == bytes.count else {
            throw DecodeError(
                .lengthMismatch,
                "header \(headerBytes) + payload \(payloadLength) + time \(timeLength) + tag \(tagLength) != \(bytes.count) bytes"
            )
        }
        var payloadReader = ByteReader(try reader.readBytes(payloadLength))
        let payload = try decodePayload(type, from: &payloadReader, nameBytesMax: nameBytesMax)
        guard payloadReader.remaining == 0 else {
            throw DecodeError(.malformedPayload, "\(payloadReader.remaining) trailing bytes in \(type)")
        }
        let sentAt = timeLength == 0 ? nil : WallInstant(unixNanos: Int64(bitPattern: try reader.readUInt64()))
        let tag = Array(try reader.readBytes(tagLength))
        return Datagram(
            session: session, sender: sender, sequence: sequence, payload: payload, sentAt: sentAt, authTag: tag)
    }

    public static func decode(_ bytes: [UInt8], datagramBytesMax: Int = 1200, nameBytesMax: Int = 64)
        throws(DecodeError) -> Datagram
    {
        try decode(bytes[...], datagramBytesMax: datagramBytesMax, nameBytesMax: nameBytesMax)
    }

    private static func decodePayload(_ type: MessageType, from reader: inout ByteReader, nameBytesMax: Int)
        throws(DecodeError) -> Payload
    {
        switch type {
        case .hello, .heartbeat:
            let flags = try reader.readUInt8()
            guard flags & ~helloFlags == 0 else {
                throw DecodeError(.malformedPayload, "reserved \(type) flag bits 0x\(String(flags, radix: 16))")
            }
            let port = try reader.readUInt16()
            guard port != 0 else { throw DecodeError(.malformedPayload, "unicast port 0") }
            let name = try reader.readShortString(maxBytes: nameBytesMax, field: "name")
            let item = try reader.readShortString(maxBytes: itemIDBytesMax, field: "item id")
            let suspensionCount = Int(try reader.readUInt8())
            guard suspensionCount <= Announcement.suspensionsMax else {
                throw DecodeError(
                    .malformedPayload, "\(suspensionCount) suspensions, limit \(Announcement.suspensionsMax)")
            }
            var suspensions: [String] = []
            for _ in 0..<suspensionCount {
                let reason = try reader.readShortString(
                    maxBytes: Announcement.suspensionReasonBytesMax, field: "suspension")
                guard !reason.isEmpty else { throw DecodeError(.malformedPayload, "empty suspension reason") }
                suspensions.append(reason)
            }
            let digest = try readVectorClock(from: &reader, field: "digest")
            var path: PathStamp?
            if flags & helloFlagPath != 0 {
                let number = try reader.readUInt32()
                guard number != 0 else { throw DecodeError(.malformedPayload, "announcement number 0") }
                path = PathStamp(number: number, sentAt: try reader.readWallInstant())
            }
            let announcement = Announcement(
                isReply: flags & helloFlagReply != 0, unicastPort: port, name: name, item: item.isEmpty ? nil : item,
                isWaiting: flags & helloFlagWaiting != 0, isReady: flags & helloFlagReady != 0,
                waitsOutSuspensions: flags & helloFlagWaitsOut != 0,
                suspensions: suspensions,
                digest: digest, path: path, wantsUnicast: flags & helloFlagWantsUnicast != 0,
                isViewer: flags & helloFlagViewer != 0, seat: flags & helloFlagSeat != 0)
            return type == .hello ? .hello(announcement) : .heartbeat(announcement)
        case .leave:
            let raw = try reader.readUInt8()
            guard let reason = LeaveReason(rawValue: raw) else {
                throw DecodeError(.malformedPayload, "leave reason \(raw)")
            }
            return .leave(reason)
        case .probe:
            return .probe(
                ClockProbe(token: try reader.readUInt64(), originWall: try reader.readWallInstant()))
        case .probeReply:
            return .probeReply(
                ClockProbeReply(
                    token: try reader.readUInt64(),
                    originWall: try reader.readWallInstant(),
                    receiveWall: try reader.readWallInstant(),
                    transmitWall: try reader.readWallInstant()))
        case .command:
            let flags = try reader.readUInt8()
            guard flags & ~commandFlagRepair == 0 else {
                throw DecodeError(.malformedPayload, "reserved command flag bits 0x\(String(flags, radix: 16))")
            }
            return .command(try readCommand(from: &reader), isRepair: flags & commandFlagRepair != 0)
        case .nack:
            let count = Int(try reader.readUInt8())
            guard (1...nackRangesMax).contains(count) else {
                throw DecodeError(.malformedPayload, "nack of \(count) ranges")
            }
            var ranges: [MissingRange] = []
            for _ in 0..<count {
                let range = MissingRange(
                    origin: try readMember(from: &reader), from: try reader.readUInt32(), to: try reader.readUInt32())
                guard range.from >= 1, range.from <= range.to else {
                    throw DecodeError(.malformedPayload, "nack range \(range.from)...\(range.to)")
                }
                ranges.append(range)
            }
            return .nack(ranges)
        case .ready:
            return .ready(trigger: try readDot(from: &reader))
        case .end:
            return .end(reason: try reader.readShortString(maxBytes: WireFormat.endReasonBytesMax, field: "end reason"))
        case .unreliableMessage:
            return .unreliableMessage(try readMessagePart(from: &reader))
        case .peerList:
            let count = Int(try reader.readUInt8())
            guard count <= peerListEntriesMax else {
                throw DecodeError(.malformedPayload, "peer list of \(count) entries, limit \(peerListEntriesMax)")
            }
            var entries: [PeerEntry] = []
            for _ in 0..<count {
                let member = try readMember(from: &reader)
                let family = try reader.readUInt8()
                let address: IPAddress
                switch family {
                case 4: address = IPAddress(ipv4: try reader.readUInt32())
                case 6:
                    address = IPAddress(high: try reader.readUInt64(), low: try reader.readUInt64())
                    guard !address.isIPv4 else {
                        throw DecodeError(.malformedPayload, "an IPv4 address written as IPv6 in a peer list")
                    }
                default: throw DecodeError(.malformedPayload, "address family \(family) in a peer list")
                }
                let endpoint = Endpoint(address: address, port: try reader.readUInt16())
                guard endpoint.isUnicastDestination else {
                    throw DecodeError(.malformedPayload, "peer list entry \(endpoint) is not a unicast endpoint")
                }
                entries.append(PeerEntry(member: member, endpoint: endpoint))
            }
            return .peerList(entries)
        case .stateRequest:
            return .stateRequest(
                StateRequest(
                    snapshot: try reader.readUInt64(), wanted: try reader.readUInt32(), base: try reader.readUInt8()))
        case .state:
            return .state(try readStatePart(from: &reader))
        case .audience:
            let summary = AudienceSummary(viewers: try reader.readUInt32(), audience: try reader.readUInt32())
            guard summary.viewers <= summary.audience else {
                throw DecodeError(
                    .malformedPayload, "an audience of \(summary.audience) with \(summary.viewers) viewers of its own")
            }
            return .audience(summary)
        }
    }
}

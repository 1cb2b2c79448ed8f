/// The encodings shared by several messages (members, dots, vector clocks) and the command
/// payload. PROTOCOL.md, "Commands", is their specification.
extension WireFormat {
    /// Most vector-clock entries in one datagram (16 bytes each).
    public static let vectorClockEntriesMax = 48
    public static let nackRangesMax = 32
    public static let itemIDBytesMax = 128
    public static let urlBytesMax = 512
    public static let metadataBytesMax = 128
    /// Largest playback rate a command may carry.
    public static let rateMax = 64.0
    /// Smallest moving rate a command may carry (mpv's own minimum speed): slower is not playback,
    /// and would make "when does it reach the end" overflow any clock.
    public static let rateMin = 0.01
    /// Largest media position (seconds) a command may carry: about 31 years.
    /// Positions (media seconds, or a live item's program date: seconds since 1970, to 2100).
    public static let positionMax = 4.2e9
    /// A share's duration field for a live item, which has none.
    static let liveDuration = -1.0
    /// The wall-clock instants a datagram may carry, in Unix nanoseconds: 1970 to about 2116
    /// (2^62). With offsets bounded by `offsetNanosMax`, every sum and difference of instants the
    /// core computes then stays far inside Int64.
    public static let wallNanosRange: ClosedRange<Int64> = 0...(1 << 62)
    /// The largest clock offset to a peer believed: about 73 years (2^61 ns).
    public static let offsetNanosMax: Int64 = 1 << 61
    /// The largest Lamport timestamp a command may carry (2^53: a command a microsecond for
    /// 285 years), so that "one more than everything seen" never overflows.
    public static let lamportMax: UInt64 = 1 << 53

    private enum OperationCode: UInt8 {
        case share = 1
        case play = 2
        case seek = 3
        case start = 4
        case playNow = 5
        case pause = 6
        case rate = 7
        case message = 8
        case queueAdd = 9
        case queueRemove = 10
        case queueMove = 11
        case queueClear = 12
        case advance = 13
        case queueEntry = 14
        case interstitialAt = 15
        case interstitial = 16
        case playReady = 17
    }

    static func writeInterstitial(_ interstitial: Interstitial, into writer: inout ByteWriter) {
        writer.writeShortString(interstitial.id)
        writer.writeLongString(interstitial.url)
        writer.write(interstitial.durationSeconds)
    }

    static func readInterstitial(from reader: inout ByteReader) throws(DecodeError) -> Interstitial {
        let id = try reader.readShortString(maxBytes: itemIDBytesMax, field: "interstitial id")
        guard !id.isEmpty else { throw DecodeError(.malformedPayload, "empty interstitial id") }
        let url = try reader.readLongString(maxBytes: urlBytesMax, field: "interstitial url")
        guard !url.isEmpty else { throw DecodeError(.malformedPayload, "empty interstitial url") }
        let seconds = try reader.readDouble(
            in: 0...Interstitial.durationMax, field: "interstitial duration")
        guard seconds > 0 else {
            throw DecodeError(.malformedPayload, "an interstitial of no duration")
        }
        return Interstitial(id: id, url: url, durationSeconds: seconds)
    }

    static func writeQueueItem(_ item: QueueItem, into writer: inout ByteWriter) {
        writer.writeShortString(item.id)
        writer.writeLongString(item.url)
        writer.writeShortString(item.title)
        writer.write(item.durationSeconds ?? 0)
    }

    static func readQueueItem(from reader: inout ByteReader) throws(DecodeError) -> QueueItem {
        let id = try reader.readShortString(maxBytes: itemIDBytesMax, field: "queue entry id")
        guard !id.isEmpty else { throw DecodeError(.malformedPayload, "empty queue entry id") }
        let url = try reader.readLongString(maxBytes: urlBytesMax, field: "queue url")
        guard !url.isEmpty else { throw DecodeError(.malformedPayload, "empty queue url") }
        let title = try reader.readShortString(maxBytes: metadataBytesMax, field: "queue title")
        let seconds = try reader.readDouble(in: 0...positionMax, field: "queue duration")
        return QueueItem(id: id, url: url, title: title, durationSeconds: seconds > 0 ? seconds : nil)
    }

    static func writeQueuePosition(_ position: QueuePosition, into writer: inout ByteWriter) {
        precondition((1...QueuePosition.depthMax).contains(position.identifiers.count), "queue position depth")
        writer.write(UInt8(position.identifiers.count))
        for identifier in position.identifiers {
            writer.write(identifier.digit)
            writer.write(identifier.site)
            writer.write(identifier.counter)
        }
    }

    /// 1 to `depthMax` identifiers, the last with a digit of 1 or more (a position made by
    /// `QueuePosition.between` always ends so, and `between` relies on it).
    static func readQueuePosition(from reader: inout ByteReader) throws(DecodeError) -> QueuePosition {
        let count = Int(try reader.readUInt8())
        guard (1...QueuePosition.depthMax).contains(count) else {
            throw DecodeError(.malformedPayload, "queue position of \(count) levels")
        }
        var identifiers: [QueuePosition.Identifier] = []
        for _ in 0..<count {
            identifiers.append(
                QueuePosition.Identifier(
                    digit: try reader.readUInt16(), site: try reader.readUInt64(), counter: try reader.readUInt32()))
        }
        guard identifiers[count - 1].digit >= 1 else {
            throw DecodeError(.malformedPayload, "a queue position ending in digit 0")
        }
        return QueuePosition(identifiers)
    }

    static func writeMessagePart(_ part: MessagePart, into writer: inout ByteWriter) {
        writer.write(part.messageID)
        writer.write(part.index)
        writer.write(part.count)
        writer.write(UInt8(part.recipients.count))
        for member in part.recipients { writeMember(member, into: &writer) }
        writer.write(UInt16(part.bytes.count))
        writer.write(bytes: part.bytes)
    }

    static func readMessagePart(from reader: inout ByteReader) throws(DecodeError) -> MessagePart {
        let messageID = try reader.readUInt32()
        let index = try reader.readUInt16()
        let count = try reader.readUInt16()
        guard count >= 1, Int(count) <= MessagePart.partsMax, index < count else {
            throw DecodeError(.malformedPayload, "message part \(index) of \(count)")
        }
        let recipientCount = Int(try reader.readUInt8())
        guard recipientCount <= MessagePart.recipientsMax, (index == 0) == (recipientCount > 0) else {
            throw DecodeError(.malformedPayload, "\(recipientCount) recipients in message part \(index)")
        }
        var recipients: [Member] = []
        for _ in 0..<recipientCount { recipients.append(try readMember(from: &reader)) }
        let length = Int(try reader.readUInt16())
        let bytes = Array(try reader.readBytes(length))
        return MessagePart(messageID: messageID, index: index, count: count, recipients: recipients, bytes: bytes)
    }

    static func writeMember(_ member: Member, into writer: inout ByteWriter) {
        writer.write(member.id.rawValue)
        writer.write(member.incarnation.rawValue)
    }

    static func readMember(from reader: inout ByteReader) throws(DecodeError) -> Member {
        Member(id: PeerID(try reader.readUInt64()), incarnation: Incarnation(try reader.readUInt32()))
    }

    static func writeDot(_ dot: Dot, into writer: inout ByteWriter) {
        writeMember(dot.origin, into: &writer)
        writer.write(dot.counter)
    }

    static func readDot(from reader: inout ByteReader) throws(DecodeError) -> Dot {
        let dot = Dot(origin: try readMember(from: &reader), counter: try reader.readUInt32())
        guard dot.counter >= 1 else { throw DecodeError(.malformedPayload, "command counter 0") }
        return dot
    }

    static func writeVectorClock(_ clock: VectorClock, into writer: inout ByteWriter) {
        let entries = clock.sorted
        precondition(entries.count <= vectorClockEntriesMax, "vector clock of \(entries.count) entries")
        writer.write(UInt8(entries.count))
        for entry in entries {
            writeMember(entry.member, into: &writer)
            writer.write(entry.count)
        }
    }

    /// Entries strictly ascending by (id, incarnation), none zero: one encoding per clock.
    static func readVectorClock(from reader: inout ByteReader, field: String) throws(DecodeError) -> VectorClock {
        let count = Int(try reader.readUInt8())
        guard count <= vectorClockEntriesMax else {
            throw DecodeError(.malformedPayload, "\(field) of \(count) entries")
        }
        var entries: [Member: UInt32] = [:]
        var previous: Member?
        for _ in 0..<count {
            let member = try readMember(from: &reader)
            let value = try reader.readUInt32()
            guard value > 0 else { throw DecodeError(.malformedPayload, "\(field) entry of 0") }
            if let previous, (previous.id, previous.incarnation) >= (member.id, member.incarnation) {
                throw DecodeError(.malformedPayload, "\(field) entries out of order")
            }
            previous = member
            entries[member] = value
        }
        return VectorClock(entries)
    }

    static func writeCommand(_ envelope: CommandEnvelope, into writer: inout ByteWriter) {
        writeDot(envelope.dot, into: &writer)
        writer.write(envelope.lamport)
        writeVectorClock(envelope.dependencies, into: &writer)
        writer.writeShortString(envelope.command.item)
        switch envelope.command.operation {
        case .share(let activity):
            writer.write(OperationCode.share.rawValue)
            writer.writeLongString(activity.url)
            writer.writeShortString(activity.title)
            writer.writeShortString(activity.subtitle)
            writer.writeShortString(activity.type)
            writer.writeLongString(activity.fallbackURL)
            // A live item has no duration: the field says "live" with the one negative value it
            // takes (agents before live items refuse it as a malformed duration, and play nothing).
            writer.write(activity.live ? liveDuration : activity.durationSeconds ?? 0)
        case .play(let rate, let position, let requestedAt):
            writer.write(OperationCode.play.rawValue)
            writer.write(rate)
            writer.write(position)
            writer.write(requestedAt.unixNanos)
        case .seek(let position, let resumeRate, let requestedAt):
            writer.write(OperationCode.seek.rawValue)
            writer.write(position)
            writer.write(resumeRate)
            writer.write(requestedAt.unixNanos)
        case .start(let rate, let position, let at, let trigger):
            writer.write(OperationCode.start.rawValue)
            writer.write(rate)
            writer.write(position)
            writer.write(at.unixNanos)
            writeDot(trigger, into: &writer)
        case .playNow(let rate, let position, let at), .playReady(let rate, let position, let at):
            let isReady = if case .playReady = envelope.command.operation { true } else { false }
            writer.write((isReady ? OperationCode.playReady : OperationCode.playNow).rawValue)
            writer.write(rate)
            writer.write(position)
            writer.write(at.unixNanos)
        case .pause(let position, let at):
            writer.write(OperationCode.pause.rawValue)
            writer.write(position)
            writer.write(at.unixNanos)
        case .rate(let rate, let position, let at):
            writer.write(OperationCode.rate.rawValue)
            writer.write(rate)
            writer.write(position)
            writer.write(at.unixNanos)
        case .message(let part):
            writer.write(OperationCode.message.rawValue)
            writeMessagePart(part, into: &writer)
        case .queue(.add(let item, let position)):
            writer.write(OperationCode.queueAdd.rawValue)
            writeQueueItem(item, into: &writer)
            writeQueuePosition(position, into: &writer)
        case .queue(.remove(let id, let added)):
            writer.write(OperationCode.queueRemove.rawValue)
            writer.writeShortString(id)
            writeDot(added, into: &writer)
        case .queue(.move(let id, let position)):
            writer.write(OperationCode.queueMove.rawValue)
            writer.writeShortString(id)
            writeQueuePosition(position, into: &writer)
        case .queue(.clear(let covering)):
            writer.write(OperationCode.queueClear.rawValue)
            writeVectorClock(covering, into: &writer)
        case .queue(.advance(let from, let item, let rate, let requestedAt)):
            writer.write(OperationCode.advance.rawValue)
            writer.writeShortString(from ?? "")
            writeQueueItem(item, into: &writer)
            writer.write(rate)
            writer.write(requestedAt.unixNanos)
        case .queue(.placed(let item, let position, let added)):
            writer.write(OperationCode.queueEntry.rawValue)
            writeQueueItem(item, into: &writer)
            writeQueuePosition(position, into: &writer)
            writeDot(added, into: &writer)
        case .scheduleInterstitial(let interstitial, let at):
            writer.write(OperationCode.interstitialAt.rawValue)
            writeInterstitial(interstitial, into: &writer)
            writer.write(at)
        case .interstitial(let interstitial, let position, let rate, let requestedAt):
            writer.write(OperationCode.interstitial.rawValue)
            writeInterstitial(interstitial, into: &writer)
            writer.write(position)
            writer.write(rate)
            writer.write(requestedAt.unixNanos)
        }
    }

    static func readCommand(from reader: inout ByteReader) throws(DecodeError) -> CommandEnvelope {
        let dot = try readDot(from: &reader)
        let lamport = try reader.readUInt64()
        guard (1...lamportMax).contains(lamport) else {
            throw DecodeError(.malformedPayload, "lamport timestamp \(lamport) outside 1…2^53")
        }
        let dependencies = try readVectorClock(from: &reader, field: "dependencies")
        let item = try reader.readShortString(maxBytes: itemIDBytesMax, field: "item id")
        guard !item.isEmpty else { throw DecodeError(.malformedPayload, "empty item id") }
        let code = try reader.readUInt8()
        func rate(positive: Bool) throws(DecodeError) -> Double {
            let value = try reader.readDouble(in: 0...rateMax, field: "rate")
            guard !positive || value > 0 else {
                throw DecodeError(.malformedPayload, "rate 0 where playback must move")
            }
            guard value == 0 || value >= rateMin else {
                throw DecodeError(.malformedPayload, "rate \(value) below the minimum \(rateMin)")
            }
            return value
        }
        func position() throws(DecodeError) -> Double { try reader.readDouble(in: 0...positionMax, field: "position") }
        func wall() throws(DecodeError) -> WallInstant { try reader.readWallInstant() }
        func duration() throws(DecodeError) -> Double? {
            let seconds = try reader.readDouble(in: 0...positionMax, field: "duration")
            return seconds > 0 ? seconds : nil
        }
        let operation: Operation
        switch OperationCode(rawValue: code) {
        case .share:
            let url = try reader.readLongString(maxBytes: urlBytesMax, field: "url")
            guard !url.isEmpty else { throw DecodeError(.malformedPayload, "empty url") }
            let title = try reader.readShortString(maxBytes: metadataBytesMax, field: "title")
            let subtitle = try reader.readShortString(maxBytes: metadataBytesMax, field: "subtitle")
            let type = try reader.readShortString(maxBytes: metadataBytesMax, field: "type")
            let fallbackURL = try reader.readLongString(maxBytes: urlBytesMax, field: "fallback url")
            let seconds = try reader.readDouble(in: liveDuration...positionMax, field: "duration")
            guard seconds >= 0 || seconds == liveDuration else {
                throw DecodeError(.malformedPayload, "duration \(seconds): negative, and not the live item's -1")
            }
            operation = .share(
                Activity(
                    url: url, itemID: item, title: title, subtitle: subtitle, type: type, fallbackURL: fallbackURL,
                    durationSeconds: seconds > 0 ? seconds : nil, live: seconds == liveDuration))
        case .play: operation = .play(rate: try rate(positive: true), position: try position(), requestedAt: try wall())
        case .seek:
            operation = .seek(position: try position(), resumeRate: try rate(positive: false), requestedAt: try wall())
        case .start:
            operation = .start(
                rate: try rate(positive: true), position: try position(), at: try wall(),
                trigger: try readDot(from: &reader))
        case .playNow: operation = .playNow(rate: try rate(positive: true), position: try position(), at: try wall())
        case .playReady:
            operation = .playReady(rate: try rate(positive: true), position: try position(), at: try wall())
        case .pause: operation = .pause(position: try position(), at: try wall())
        case .rate: operation = .rate(rate: try rate(positive: false), position: try position(), at: try wall())
        case .message: operation = .message(try readMessagePart(from: &reader))
        case .queueAdd:
            operation = .queue(.add(try readQueueItem(from: &reader), at: try readQueuePosition(from: &reader)))
        case .queueRemove:
            let id = try reader.readShortString(maxBytes: itemIDBytesMax, field: "queue entry id")
            guard !id.isEmpty else { throw DecodeError(.malformedPayload, "empty queue entry id") }
            operation = .queue(.remove(id: id, added: try readDot(from: &reader)))
        case .queueMove:
            let id = try reader.readShortString(maxBytes: itemIDBytesMax, field: "queue entry id")
            guard !id.isEmpty else { throw DecodeError(.malformedPayload, "empty queue entry id") }
            operation = .queue(.move(id: id, to: try readQueuePosition(from: &reader)))
        case .queueClear:
            operation = .queue(.clear(covering: try readVectorClock(from: &reader, field: "queue clear")))
        case .advance:
            let from = try reader.readShortString(maxBytes: itemIDBytesMax, field: "advance from")
            let target = try readQueueItem(from: &reader)
            guard target.id == item else {
                throw DecodeError(.malformedPayload, "an advance whose item is not its entry's")
            }
            operation = .queue(
                .advance(
                    from: from.isEmpty ? nil : from, to: target, rate: try rate(positive: false),
                    requestedAt: try wall()))
        case .queueEntry:
            operation = .queue(
                .placed(
                    try readQueueItem(from: &reader), at: try readQueuePosition(from: &reader),
                    added: try readDot(from: &reader)))
        case .interstitialAt:
            operation = .scheduleInterstitial(try readInterstitial(from: &reader), at: try position())
        case .interstitial:
            operation = .interstitial(
                try readInterstitial(from: &reader), position: try position(),
                rate: try rate(positive: false),
                requestedAt: try wall())
        case nil: throw DecodeError(.malformedPayload, "unknown command operation \(code)")
        }
        return CommandEnvelope(
            dot: dot, lamport: lamport, dependencies: dependencies, command: Command(item: item, operation: operation))
    }
}

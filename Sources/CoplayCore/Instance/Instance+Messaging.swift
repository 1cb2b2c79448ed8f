/// An app message as delivered (GroupSessionMessenger).
public struct MessageReport: Hashable, Sendable {
    public var from: Originator
    public var messageID: UInt32
    public var text: String
    public var isReliable: Bool
    /// How many participants it was for.
    public var recipientCount: Int
}

/// What `msg` sent.
public struct MessageSent: Hashable, Sendable {
    public var messageID: UInt32
    public var bytes: Int
    public var parts: Int
    public var isReliable: Bool
    public var recipients: [String]
}

/// A message being reassembled from its parts.
struct PartialMessage: Hashable, Sendable {
    var recipients: [Member] = []
    var count = 0
    var parts: [Int: [UInt8]] = [:]
    var bytes = 0
    var started: MonotonicInstant
    var isReliable: Bool
}

/// A message's identity: its sender's membership and number.
struct MessageKey: Hashable, Sendable {
    var origin: Member
    var id: UInt32
}

extension Instance {
    // MARK: Sending

    mutating func sendMessage(
        to names: [String]?, unreliable: Bool, text: String, now: Timestamp, into out: inout [Directive]
    ) {
        func fail(_ message: String) {
            out.append(.emit(.commandError(.init(message: message, usage: "msg [to=<name|id>,…] [unreliable] <text>"))))
        }
        guard state.isJoined else { return fail("not joined (state \(state.name))") }
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return fail("the message is empty") }
        guard bytes.count <= settings.messageBytesMax else {
            return fail("the message is \(bytes.count) bytes; the limit is \(settings.messageBytesMax)")
        }
        var recipients: [PeerRecord] = []
        if let names {
            for name in names {
                let matches = peers.values.filter {
                    $0.name == name || ($0.member.id.description.hasPrefix(name.lowercased()) && name.count >= 4)
                }
                guard matches.count == 1 else {
                    return fail(
                        matches.isEmpty
                            ? "no participant '\(name)' (see peers)"
                            : "'\(name)' names \(matches.count) participants; use the id")
                }
                if !recipients.contains(where: { $0.member == matches[0].member }) { recipients.append(matches[0]) }
            }
        } else {
            recipients = peers.values.sorted { $0.member.id < $1.member.id }
        }
        guard !recipients.isEmpty else { return fail("no other participant to send to") }
        guard recipients.count <= MessagePart.recipientsMax else {
            return fail("more than \(MessagePart.recipientsMax) recipients")
        }
        let members = recipients.map(\.member)
        let messageID = nextMessageID
        nextMessageID &+= 1

        // Each part fills what a datagram leaves after the headers (the first also names the recipients).
        func overhead(_ part: MessagePart) -> Int {
            let payload: Payload =
                unreliable
                ? .unreliableMessage(part)
                : .command(
                    log.next(Command(item: MessagePart.itemMarker, operation: .message(part)), by: member),
                    isRepair: false)
            return WireFormat.encodedSize(Datagram(session: session, sender: member, sequence: 1, payload: payload))
        }
        let firstRoom =
            settings.datagramBytesMax
            - overhead(MessagePart(messageID: messageID, index: 0, count: 1, recipients: members, bytes: []))
        let otherRoom =
            settings.datagramBytesMax
            - overhead(MessagePart(messageID: messageID, index: 1, count: 2, recipients: [], bytes: []))
        guard firstRoom >= 16, otherRoom >= 16 else {
            return fail("no room for message text in a datagram (too many recipients)")
        }
        var chunks = [Array(bytes.prefix(firstRoom))]
        var offset = chunks[0].count
        while offset < bytes.count {
            chunks.append(Array(bytes[offset..<min(bytes.count, offset + otherRoom)]))
            offset += otherRoom
        }
        guard chunks.count <= MessagePart.partsMax else {
            return fail("the message needs \(chunks.count) datagrams; the limit is \(MessagePart.partsMax)")
        }
        for (index, chunk) in chunks.enumerated() {
            let part = MessagePart(
                messageID: messageID, index: UInt16(index), count: UInt16(chunks.count),
                recipients: index == 0 ? members : [],
                bytes: chunk)
            if unreliable {
                out.append(.multicast(outgoing(.unreliableMessage(part))))
            } else {
                issueGroupCommand(
                    Command(item: MessagePart.itemMarker, operation: .message(part)), now: now, into: &out)
            }
        }
        counters.messagesSent += 1
        out.append(
            .emit(
                .messageSent(
                    MessageSent(
                        messageID: messageID, bytes: bytes.count, parts: chunks.count, isReliable: !unreliable,
                        recipients: recipients.map(\.name)))))
    }

    // MARK: Receiving

    /// A part of a message, delivered (reliable: in order, exactly once, by the command log) or
    /// received (unreliable: in any order, perhaps twice, perhaps never).
    mutating func receiveMessagePart(
        _ part: MessagePart, from origin: Member, isReliable: Bool, now: Timestamp, into out: inout [Directive]
    ) {
        let key = MessageKey(origin: origin, id: part.messageID)
        if !isReliable, completedUnreliable.contains(key) { return }
        if partialMessages[key] == nil, partialMessages.count >= settings.partialMessagesMax,
            let oldest = partialMessages.min(by: { $0.value.started < $1.value.started })
        {
            partialMessages[oldest.key] = nil
            counters.messagesIncomplete += 1
        }
        var partial = partialMessages[key] ?? PartialMessage(started: now.monotonic, isReliable: isReliable)
        if part.index == 0 { partial.recipients = part.recipients }
        partial.count = Int(part.count)
        if partial.parts[Int(part.index)] == nil {
            partial.parts[Int(part.index)] = part.bytes
            partial.bytes += part.bytes.count
        }
        guard partial.bytes <= settings.messageBytesMax else {
            partialMessages[key] = nil
            counters.messagesIncomplete += 1
            return
        }
        guard partial.parts.count == partial.count, !partial.recipients.isEmpty else {
            partialMessages[key] = partial
            return
        }
        partialMessages[key] = nil
        if !isReliable {
            completedUnreliable.append(key)
            if completedUnreliable.count > 256 { completedUnreliable.removeFirst(completedUnreliable.count - 256) }
        }
        guard origin != member, partial.recipients.contains(member) else { return }
        let bytes = (0..<partial.count).flatMap { partial.parts[$0] ?? [] }
        counters.messagesReceived += 1
        out.append(
            .emit(
                .message(
                    MessageReport(
                        from: originator(origin), messageID: part.messageID,
                        text: String(decoding: bytes, as: UTF8.self),
                        isReliable: isReliable, recipientCount: partial.recipients.count))))
    }

    /// Forgets unreliable messages whose parts did not all arrive in time.
    mutating func expireUnreliableMessages(now: Timestamp) {
        let before = partialMessages.count
        let oldest = now.monotonic - settings.unreliableMessageTimeout
        partialMessages = partialMessages.filter { $0.value.isReliable || $0.value.started > oldest }
        counters.messagesIncomplete += before - partialMessages.count
    }
}

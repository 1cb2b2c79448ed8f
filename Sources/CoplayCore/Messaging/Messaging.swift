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

/// App messages (GroupSessionMessenger): splitting a message into parts of one datagram each,
/// reassembling received parts (bounded, with a timeout for unreliable ones), and suppressing
/// unreliable duplicates. Reliable parts travel as commands in the causal log, so they arrive
/// exactly once and in order; unreliable ones are multicast once.
struct Messaging: Sendable {
    enum Output: Hashable, Sendable {
        /// Multicast this unreliable part.
        case multicast(MessagePart)
        /// Issue this reliable part as a group command.
        case issue(MessagePart)
        case emit(Event)
        /// Something to count in `Counters`.
        case count(Counters.Tally)
    }

    @inline(__always) var settings: Settings { sharedSettings.value }
    private let sharedSettings: SharedSettings
    private var nextMessageID: UInt32 = 1
    /// Messages being reassembled, by sender and number. At most `Settings.partialMessagesMax`;
    /// the oldest is given up first.
    private var partialMessages: [MessageKey: PartialMessage] = [:]
    /// The last `Settings.completedMessagesRememberedMax` unreliable messages completed, so that a
    /// duplicated part does not deliver one twice.
    private var completedUnreliable: [MessageKey] = []

    init(settings: Settings) { self.sharedSettings = SharedSettings(settings) }

    // MARK: Sending

    /// `msg`: `peers` are the live participants, `overheadBytes` what a datagram
    /// carrying a part needs besides the text. A message that cannot go is one command error.
    /// `framing`: what this agent's datagrams cost on the wire; `nextEnvelope`: the envelope a
    /// command issued now would travel in (a reliable part's cost depends on its dependencies).
    mutating func send(
        to names: [String]?, unreliable: Bool, text: String, peers: [PeerID: PeerRecord], framing: Framing,
        nextEnvelope: (Command) -> CommandEnvelope
    ) -> [Output] {
        let peers = peers.values.ordered { $0.member.id < $1.member.id }
        // A reliable part leaves room to travel in a state part too (a snapshot carries the
        // messages its receiver has not delivered).
        return send(to: names, unreliable: unreliable, text: text, peers: peers) { part in
            guard !unreliable else { return framing.bytes(.unreliableMessage(part)) - framing.tagBytes }
            let envelope = nextEnvelope(Command(item: MessagePart.itemMarker, operation: .message(part)))
            return framing.bytes(.command(envelope, isRepair: false)) - framing.tagBytes
                + WireFormat.commandRoomForStateBytes
        }
    }

    /// `overheadBytes`: what a part costs on the wire besides its text.
    mutating func send(
        to names: [String]?, unreliable: Bool, text: String, peers: [PeerRecord], overheadBytes: (MessagePart) -> Int
    ) -> [Output] {
        func fail(_ message: String) -> [Output] {
            [.emit(.commandError(.init(message: message, usage: Self.usage)))]
        }
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return fail("the message is empty") }
        guard bytes.count <= settings.messageBytesMax else {
            return fail("the message is \(bytes.count) bytes; the limit is \(settings.messageBytesMax)")
        }
        var recipients: [PeerRecord] = []
        if let names {
            for name in names {
                let matches = peers.filter {
                    $0.name == name
                        || ($0.member.id.description.hasPrefix(name.asciiLowercased)
                            && name.count >= settings.idPrefixCharactersMin)
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
            recipients = peers
        }
        guard !recipients.isEmpty else { return fail("no other participant to send to") }
        guard recipients.count <= MessagePart.recipientsMax else {
            return fail("more than \(MessagePart.recipientsMax) recipients")
        }
        let members = recipients.map({ $0.member })
        let messageID = nextMessageID
        nextMessageID &+= 1

        // Each part fills what a datagram leaves after the headers (the first also names the recipients).
        let firstRoom =
            settings.datagramBytesMax
            - overheadBytes(MessagePart(messageID: messageID, index: 0, count: 1, recipients: members, bytes: []))
        let otherRoom =
            settings.datagramBytesMax
            - overheadBytes(MessagePart(messageID: messageID, index: 1, count: 2, recipients: [], bytes: []))
        guard firstRoom >= settings.messagePartBytesMin, otherRoom >= settings.messagePartBytesMin else {
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
        var out: [Output] = chunks.enumerated().map { index, chunk in
            let part = MessagePart(
                messageID: messageID, index: UInt16(index), count: UInt16(chunks.count),
                recipients: index == 0 ? members : [], bytes: chunk)
            return unreliable ? .multicast(part) : .issue(part)
        }
        out.append(.count(.messagesSent))
        out.append(
            .emit(
                .messageSent(
                    MessageSent(
                        messageID: messageID, bytes: bytes.count, parts: chunks.count, isReliable: !unreliable,
                        recipients: recipients.map({ $0.name })))))
        return out
    }

    static let usage = "msg [to=<name|id>,…] [unreliable] <text>"

    // MARK: Receiving

    /// A part of a message, delivered (reliable: in order, exactly once, by the command log) or
    /// received (unreliable: in any order, perhaps twice, perhaps never). `local` is this agent;
    /// `originator` names the sender. Emits the message once it is whole and for this agent.
    mutating func receive(
        _ part: MessagePart, from origin: Member, isReliable: Bool, local: Member, originator: Originator,
        now: MonotonicInstant
    ) -> [Output] {
        let key = MessageKey(origin: origin, id: part.messageID)
        if !isReliable, completedUnreliable.contains(key) { return [] }
        var out: [Output] = []
        if partialMessages[key] == nil, partialMessages.count >= settings.partialMessagesMax,
            let oldest = partialMessages.min(by: { $0.value.started < $1.value.started })
        {
            partialMessages[oldest.key] = nil
            out.append(.count(.messagesIncomplete))
        }
        var partial = partialMessages[key] ?? PartialMessage(started: now, isReliable: isReliable)
        if part.index == 0 { partial.recipients = part.recipients }
        partial.count = Int(part.count)
        if partial.parts[Int(part.index)] == nil {
            partial.parts[Int(part.index)] = part.bytes
            partial.bytes += part.bytes.count
        }
        guard partial.bytes <= settings.messageBytesMax else {
            partialMessages[key] = nil
            return out + [.count(.messagesIncomplete)]
        }
        guard partial.parts.count == partial.count, !partial.recipients.isEmpty else {
            partialMessages[key] = partial
            return out
        }
        partialMessages[key] = nil
        if !isReliable {
            completedUnreliable.append(key)
            let excess = completedUnreliable.count - settings.completedMessagesRememberedMax
            if excess > 0 { completedUnreliable.removeFirst(excess) }
        }
        guard origin != local, partial.recipients.contains(local) else { return out }
        let bytes = (0..<partial.count).flatMap { partial.parts[$0] ?? [] }
        let report = MessageReport(
            from: originator, messageID: part.messageID, text: String(decoding: bytes, as: UTF8.self),
            isReliable: isReliable, recipientCount: partial.recipients.count)
        return out + [.count(.messagesReceived), .emit(.message(report))]
    }

    /// Forgets unreliable messages whose parts did not all arrive in time.
    mutating func tick(now: MonotonicInstant) -> [Output] {
        let before = partialMessages.count
        let oldest = now - settings.unreliableMessageTimeout
        partialMessages = partialMessages.filter { $0.value.isReliable || $0.value.started > oldest }
        return Array(repeating: .count(.messagesIncomplete), count: before - partialMessages.count)
    }

    /// When the oldest unreliable message in reassembly will be given up (none: no wake needed).
    var nextWake: MonotonicInstant? {
        partialMessages.values.filter { !$0.isReliable }.map({ $0.started }).min().map {
            $0 + settings.unreliableMessageTimeout
        }
    }
}

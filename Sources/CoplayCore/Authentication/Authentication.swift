/// Who may speak in this group, and the one place that signs and checks. With a key file every
/// datagram is stamped with its send time and signed (the group key's HMAC-SHA-256, truncated:
/// `GroupKeys`), and only authentic, recent ones (`Freshness`) not seen before (a sliding window
/// per sender against replays: `ReplayWindows`) are admitted;
/// without one, only untagged datagrams are. The shell and the simulation both encode through
/// `seal`, so what the core checks is what they send.
public struct Authentication: Sendable {
    /// Why a datagram was not admitted.
    struct Refusal: Error, Hashable, Sendable {
        var reason: DropReason
        var detail: String
    }

    /// The keys in force (current first), or nil for an open group.
    public private(set) var keys: GroupKeys?
    private var replayWindows: ReplayWindows
    private let freshness: Freshness
    private let session: SessionID

    init(keys: [[UInt8]]?, session: SessionID, settings: Settings) {
        self.session = session
        self.keys = keys.map { GroupKeys(keys: $0, session: session) }
        replayWindows = ReplayWindows(windowsMax: settings.replayWindowsMax, width: settings.replayWindowWidth)
        freshness = Freshness(settings: settings)
    }

    /// The key file was read again: sign with its current key, accept its keys.
    mutating func rekey(_ keys: [[UInt8]]?) {
        self.keys = keys.map { GroupKeys(keys: $0, session: session) }
    }

    /// The tag's bytes on every datagram this agent sends.
    var tagBytes: Int { keys == nil ? 0 : GroupKeys.tagBytes }

    /// Whether a decoded datagram (`bytes` as received) may be read: with a key, tagged with one
    /// of the keys in force, fresh (`Freshness`: received at `receivedAt`, its sender's clock
    /// `senderOffsetNanos` from this agent's when measured) and not seen before from its sender;
    /// without, untagged. A datagram the relay brought (`sealed`) opened under its seal, whose key
    /// is derived from the same keys in force (`RelaySeal`, rekeyed with them): a key holder made
    /// it, as the tag would say, so the tag's HMAC is not computed again. Among a thousand tabs in
    /// a thread it was 7% of what a pause cost each.
    mutating func admit(
        _ datagram: Datagram, bytes: [UInt8], receivedAt: WallInstant, senderOffsetNanos: Int64?, sealed: Bool = false
    ) -> Refusal? {
        guard let keys else {
            guard datagram.authTag.isEmpty else {
                return Refusal(reason: .unauthenticated, detail: "tagged datagram, no key configured")
            }
            return nil
        }
        guard !datagram.authTag.isEmpty else {
            return Refusal(reason: .missingTag, detail: "untagged datagram in a keyed group")
        }
        guard datagram.authTag.count == GroupKeys.tagBytes, sealed || keys.verifies(bytes) else {
            return Refusal(reason: .badTag, detail: "forged, or signed with another key")
        }
        if datagram.payload.type != .probeReply,
            let stale = freshness.judge(
                sentAt: datagram.sentAt, receivedAt: receivedAt, senderOffsetNanos: senderOffsetNanos)
        {
            return Refusal(reason: .stale, detail: stale)
        }
        guard replayWindows.accept(datagram.sequence, from: datagram.sender) else {
            return Refusal(reason: .replayed, detail: "sequence \(datagram.sequence)")
        }
        return nil
    }

    /// `datagram` as it goes on the wire, sent at `sentAt` (this agent's clock): stamped with that
    /// time and signed with the current key, when there is one.
    public func seal(_ datagram: Datagram, sentAt: WallInstant) -> [UInt8] {
        guard let keys else { return WireFormat.encode(datagram) }
        var stamped = datagram
        stamped.sentAt = sentAt
        return WireFormat.encode(stamped, signedWith: keys)
    }
}

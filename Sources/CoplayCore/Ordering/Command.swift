/// One command's identity: its origin membership and its number among that origin's commands
/// (1, 2, 3, …).
public struct Dot: Hashable, Sendable, CustomStringConvertible {
    public var origin: Member
    public var counter: UInt32
    public init(origin: Member, counter: UInt32) {
        self.origin = origin
        self.counter = counter
    }
    /// `0a1b2c3d/42#7`: the origin's first 8 hex digits, its incarnation, the counter. The digits
    /// from the id's top 32 bits, not cut from its 16 (a String's prefix walks it by characters).
    public var description: String {
        var text = hex16(origin.id.rawValue >> 32, bytes: 4)
        text += "/"
        text += String(origin.incarnation.rawValue)
        text += "#"
        text += String(counter)
        return text
    }
}

/// What the group is watching: the payload of `share` (GroupActivities' activity).
public struct Activity: Hashable, Sendable {
    public var url: String
    /// The item's identity: the custom id if one was given, else the URL.
    public var itemID: String
    public var title: String
    public var subtitle: String
    public var type: String
    /// Where to get the item when `url` cannot be played here (GroupActivities' fallbackURL); may be empty.
    public var fallbackURL: String
    /// The item's length in seconds, if the sharer gave it: every agent then stops and clamps
    /// positions at the same end (nil: unknown, each player finds its own end).
    public var durationSeconds: Double?
    /// A live stream, as the sharer said (`share … live`): its positions are program dates, and
    /// it has no duration. (A live HLS playlist is found live by each player anyway.)
    public var live: Bool

    public init(
        url: String, itemID: String? = nil, title: String = "", subtitle: String = "", type: String = "",
        fallbackURL: String = "", durationSeconds: Double? = nil, live: Bool = false
    ) {
        self.url = url
        self.itemID = itemID ?? url
        self.title = title
        self.subtitle = subtitle
        self.type = type
        self.fallbackURL = fallbackURL
        self.durationSeconds = live ? nil : durationSeconds
        self.live = live
    }
}

/// A group command's effect. Times are on the wall clock of whoever sent the datagram that
/// carried the command (receivers convert them with their offset estimate to that sender);
/// positions are media seconds.
public enum Operation: Hashable, Sendable {
    /// Propose `Activity` as the group's activity; every agent loads its item.
    case share(Activity)
    /// Coordinated start: everyone on the item waits, prepares at `position`, reports ready.
    case play(rate: Double, position: Double, requestedAt: WallInstant)
    /// Coordinated seek: everyone moves to `position`; if `resumeRate` > 0, play resumes at a
    /// common instant as after `play`.
    case seek(position: Double, resumeRate: Double, requestedAt: WallInstant)
    /// The common instant for the waiting start or seek `trigger`: play at `rate` from
    /// `position` at `at`.
    case start(rate: Double, position: Double, at: WallInstant, trigger: Dot)
    /// Start at once (playImmediately): the media is at `position` at `at`, moving at `rate`.
    case playNow(rate: Double, position: Double, at: WallInstant)
    /// A `play` that needed no round of readies: everyone on the item was known ready where the
    /// group paused, so it starts at once, as `playNow` does (its own name, so that every agent
    /// says a play was pressed, not a play-now).
    case playReady(rate: Double, position: Double, at: WallInstant)
    /// Pause at `position` (the originator's media time when it paused, at `at`).
    case pause(position: Double, at: WallInstant)
    /// Change the rate while playing: at `at` the media is at `position`, moving at `rate` after.
    case rate(rate: Double, position: Double, at: WallInstant)
    /// One part of a reliable app message (GroupSessionMessenger); not playback state.
    case message(MessagePart)
    /// A change to the group's queue, or a move of the group to one of its entries
    /// (`SharedQueue`).
    case queue(QueueOperation)
    /// An interstitial for everyone, when the item reaches `at` (media seconds) while playing.
    case scheduleInterstitial(Interstitial, at: Double)
    /// An interstitial for everyone, now: the item holds at `position` — paused there, or, with
    /// `rate` > 0, waiting for a coordinated start at `rate` requested for when the interstitial
    /// ends (`requestedAt` + its duration): everyone reports ready once theirs has ended. Made
    /// when the group's timeline reaches a scheduled interstitial (naming it: it is resolved), or
    /// typed without `at=`.
    case interstitial(Interstitial, position: Double, rate: Double, requestedAt: WallInstant)

    /// A change to the queue or a move of the group to an entry.
    public var isQueue: Bool {
        if case .queue = self { return true }
        return false
    }

    public var name: String {
        switch self {
        case .share: "share"
        case .play: "play"
        case .seek: "seek"
        case .start: "start"
        case .playNow: "play-now"
        case .playReady: "play-ready"
        case .pause: "pause"
        case .rate: "rate"
        case .message: "message"
        case .queue(let operation): operation.name
        case .scheduleInterstitial: "interstitial-at"
        case .interstitial: "interstitial"
        }
    }

    /// What a person did, for the reason an event gives: the operation's name, but for a
    /// play-ready, which is the `play` that was pressed.
    public var reason: String {
        if case .playReady = self { return "play" }
        return name
    }

    /// The same operation with every time moved by `nanos` (to re-express it on another clock).
    public func shifted(by nanos: Int64) -> Operation {
        func shift(_ wall: WallInstant) -> WallInstant { WallInstant(unixNanos: wall.unixNanos &+ nanos) }
        switch self {
        case .queue(.advance(let from, let item, let rate, let requestedAt)):
            return .queue(.advance(from: from, to: item, rate: rate, requestedAt: shift(requestedAt)))
        case .interstitial(let interstitial, let position, let rate, let requestedAt):
            return .interstitial(
                interstitial, position: position, rate: rate, requestedAt: shift(requestedAt))
        case .share, .message, .queue, .scheduleInterstitial: return self
        case .play(let rate, let position, let requestedAt):
            return .play(rate: rate, position: position, requestedAt: shift(requestedAt))
        case .seek(let position, let resumeRate, let requestedAt):
            return .seek(position: position, resumeRate: resumeRate, requestedAt: shift(requestedAt))
        case .start(let rate, let position, let at, let trigger):
            return .start(rate: rate, position: position, at: shift(at), trigger: trigger)
        case .playNow(let rate, let position, let at): return .playNow(rate: rate, position: position, at: shift(at))
        case .playReady(let rate, let position, let at):
            return .playReady(rate: rate, position: position, at: shift(at))
        case .pause(let position, let at): return .pause(position: position, at: shift(at))
        case .rate(let rate, let position, let at): return .rate(rate: rate, position: position, at: shift(at))
        }
    }
}

/// One part of an app message. A message of n bytes of UTF-8 travels as `count` parts, in
/// order; the first names the recipients.
public struct MessagePart: Hashable, Sendable {
    /// The sender's number for the message (per incarnation).
    public var messageID: UInt32
    public var index: UInt16
    public var count: UInt16
    /// In part 0: the memberships the message is for (those known when it was sent, or those
    /// chosen). Empty in the other parts.
    public var recipients: [Member]
    /// A slice of the message's UTF-8 bytes.
    public var bytes: [UInt8]

    public init(messageID: UInt32, index: UInt16, count: UInt16, recipients: [Member], bytes: [UInt8]) {
        self.messageID = messageID
        self.index = index
        self.count = count
        self.recipients = recipients
        self.bytes = bytes
    }

    /// Most parts to a message, and most recipients named.
    public static let partsMax = 64
    public static let recipientsMax = 64
    /// The item field of a message command (messages belong to no item).
    public static let itemMarker = "-"
}

/// A group command: for which item, and what.
public struct Command: Hashable, Sendable {
    /// The item it is for (for `share`, the shared activity's item).
    public var item: String
    public var operation: Operation
    public init(item: String, operation: Operation) {
        self.item = item
        self.operation = operation
    }
}

/// A command as it travels: its dot, a Lamport timestamp for the deterministic order of
/// concurrent commands, and the origin's delivered vector clock when it issued the command
/// (its causal dependencies; the origin's own entry is implied by the dot).
public struct CommandEnvelope: Hashable, Sendable {
    public var dot: Dot
    public var lamport: UInt64
    public var dependencies: VectorClock
    public var command: Command

    public init(dot: Dot, lamport: UInt64, dependencies: VectorClock, command: Command) {
        self.dot = dot
        self.lamport = lamport
        self.dependencies = dependencies
        self.command = command
    }

    /// The total order in which concurrent commands are resolved, the same on every agent:
    /// Lamport timestamp, then origin id, then incarnation, then counter. Causally later
    /// commands always have a larger Lamport timestamp, so they always win.
    public var orderKey: OrderKey {
        OrderKey(
            lamport: lamport, id: dot.origin.id.rawValue, incarnation: dot.origin.incarnation.rawValue,
            counter: dot.counter)
    }

    public struct OrderKey: Hashable, Comparable, Sendable {
        public var lamport: UInt64
        public var id: UInt64
        public var incarnation: UInt32
        public var counter: UInt32
        public static func < (lhs: Self, rhs: Self) -> Bool {
            (lhs.lamport, lhs.id, lhs.incarnation, lhs.counter) < (rhs.lamport, rhs.id, rhs.incarnation, rhs.counter)
        }
    }
}

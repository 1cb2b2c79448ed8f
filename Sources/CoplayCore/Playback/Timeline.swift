/// What playback of one item is doing, as a function of time on the local wall clock.
///
/// Legal transitions (each made by a group command): `paused` → `waiting` (play, seek with a
/// rate to resume), `waiting` → `playing` (start), any → `paused` (pause), any → `playing`
/// (play-now, rate).
public enum Timeline: Hashable, Sendable {
    /// Still at `position`.
    case paused(position: Double)
    /// Everyone prepares at `position` and reports ready; playback at `rate` starts at a common
    /// instant, decided for the command `trigger`, requested at `requestedAt`.
    case waiting(position: Double, rate: Double, trigger: Dot, requestedAt: WallInstant)
    /// At `at` the media is at `position`, moving at `rate` seconds per second.
    case playing(rate: Double, position: Double, at: WallInstant)

    /// The media position at wall-clock instant `wall`.
    public func position(at wall: WallInstant) -> Double {
        switch self {
        case .paused(let position), .waiting(let position, _, _, _): return position
        case .playing(let rate, let position, let at):
            guard wall > at else { return position }
            return position + rate * Double(wall.unixNanos &- at.unixNanos) / 1e9
        }
    }

    /// The same timeline with its instants moved by `nanos`.
    public func shifted(by nanos: Int64) -> Timeline {
        switch self {
        case .paused: return self
        case .waiting(let position, let rate, let trigger, let requestedAt):
            return .waiting(
                position: position, rate: rate, trigger: trigger, requestedAt: requestedAt + .nanoseconds(nanos))
        case .playing(let rate, let position, let at):
            return .playing(rate: rate, position: position, at: at + .nanoseconds(nanos))
        }
    }

    /// The rate playback moves at (0 unless playing).
    public var rate: Double {
        if case .playing(let rate, _, _) = self { return rate }
        return 0
    }

    public var isWaiting: Bool {
        if case .waiting = self { return true }
        return false
    }

    /// The state a delivered command defines.
    public init?(_ operation: Operation, dot: Dot) {
        switch operation {
        case .share, .message: return nil
        case .queue(.advance(_, _, let rate, let requestedAt)):
            // The next item, from its start: paused there, or a coordinated start from there.
            self =
                rate > 0
                ? .waiting(position: 0, rate: rate, trigger: dot, requestedAt: requestedAt) : .paused(position: 0)
        case .queue, .scheduleInterstitial: return nil
        case .interstitial(let interstitial, let position, let rate, let requestedAt):
            // Held where it interrupts the item: paused there, or waiting for everyone to have
            // played it (the start's deadline counts from its end).
            self =
                rate > 0
                ? .waiting(
                    position: position, rate: rate, trigger: dot,
                    requestedAt: requestedAt + .seconds(saturating: interstitial.durationSeconds))
                : .paused(position: position)
        case .play(let rate, let position, let requestedAt):
            self = .waiting(position: position, rate: rate, trigger: dot, requestedAt: requestedAt)
        case .seek(let position, let resumeRate, let requestedAt):
            self =
                resumeRate > 0
                ? .waiting(position: position, rate: resumeRate, trigger: dot, requestedAt: requestedAt)
                : .paused(position: position)
        case .start(let rate, let position, let at, _), .playNow(let rate, let position, let at),
            .playReady(let rate, let position, let at):
            self = .playing(rate: rate, position: position, at: at)
        case .pause(let position, _):
            self = .paused(position: position)
        case .rate(let rate, let position, let at):
            self = rate == 0 ? .paused(position: position) : .playing(rate: rate, position: position, at: at)
        }
    }
}

/// A media item as this agent loaded it.
public struct LoadedItem: Hashable, Sendable {
    /// Its identity: the custom id if given, else the URL.
    public var id: String
    public var url: String
    /// Its length in seconds, if known; playback stops there.
    public var durationSeconds: Double?
    /// How long the simulated player takes to be ready after a load or a seek.
    public var bufferSeconds: Double
    /// Shared as a live stream (`Activity.live`): a player that cannot tell by itself should
    /// treat it as one.
    public var live: Bool

    public init(
        id: String? = nil, url: String, durationSeconds: Double? = nil, bufferSeconds: Double = 0, live: Bool = false
    ) {
        self.id = id ?? url
        self.url = url
        self.durationSeconds = live ? nil : durationSeconds
        self.bufferSeconds = bufferSeconds
        self.live = live
    }

    public var idHash: UInt64 { fnv1a64(Array(id.utf8)) }
}

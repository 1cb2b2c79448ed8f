/// The default player: a clock-driven model of a media player. Its position follows the wall
/// clock and the rate; after a load or a seek it needs `bufferSeconds` before it is ready; a
/// stall freezes it for a while. It performs no IO: the instance asks it where it is and tells
/// it what to do, and reads `nextEvent` to know when to tick it.
///
/// States: `empty` → `buffering` (load, prepare) → `ready` (buffer elapsed) → `moving`
/// (play) → `ready` (pause) ; `moving` → `stalled` (stall) → `moving` (stall over, then the
/// instance re-synchronises it).
public struct SimulatedPlayer: Hashable, Sendable {
    public enum State: Hashable, Sendable {
        case empty
        /// Preparing to show `position`; ready at `readyAt` (local monotonic clock).
        case buffering(position: Double, readyAt: MonotonicInstant)
        /// Prepared and still at `position`.
        case ready(position: Double)
        /// At `at` (local wall clock) the media is at `position`, moving at `rate`.
        case moving(rate: Double, position: Double, at: WallInstant)
        /// Frozen at `position` until `until`.
        case stalled(position: Double, until: MonotonicInstant)
    }

    public private(set) var state: State = .empty
    public private(set) var item: LoadedItem?

    public init() {}

    /// Something the player reports.
    public enum Report: Hashable, Sendable {
        /// Prepared at this position.
        case ready(position: Double)
        /// The stall ended at this position.
        case stallEnded(position: Double)
        /// Playback reached the end of the item.
        case ended
    }

    public func position(at now: Timestamp) -> Double {
        switch state {
        case .empty: return 0
        case .buffering(let position, _), .ready(let position), .stalled(let position, _): return position
        case .moving(let rate, let position, let at):
            let moved = now.wall > at ? position + rate * Double(now.wall.unixNanos - at.unixNanos) / 1e9 : position
            if let duration = item?.durationSeconds { return min(moved, duration) }
            return moved
        }
    }

    public var rate: Double {
        if case .moving(let rate, _, _) = state { return rate }
        return 0
    }

    public var isReady: Bool {
        switch state {
        case .ready, .moving: true
        case .empty, .buffering, .stalled: false
        }
    }

    /// Loads `item` and prepares it at `position`.
    public mutating func load(_ item: LoadedItem, at position: Double, now: Timestamp) {
        self.item = item
        prepare(at: position, now: now)
    }

    /// Seeks to `position` and pauses there; ready after the item's buffering delay.
    public mutating func prepare(at position: Double, now: Timestamp) {
        let buffer = Duration.nanoseconds(Int64((item?.bufferSeconds ?? 0) * 1e9))
        state = .buffering(position: clamp(position), readyAt: now.monotonic + buffer)
    }

    /// Pauses where it is (or shows `position`, when snapping to another's time) without buffering.
    public mutating func pause(at position: Double) {
        guard item != nil else { return }
        state = .ready(position: clamp(position))
    }

    /// Plays at `rate` so that the media is at `position` at wall instant `at` (in the past:
    /// it continues from where it would be by now).
    public mutating func play(rate: Double, position: Double, at: WallInstant) {
        guard item != nil else { return }
        state = .moving(rate: rate, position: position, at: at)
    }

    /// Freezes for `seconds`.
    public mutating func stall(seconds: Double, now: Timestamp) {
        guard item != nil else { return }
        state = .stalled(position: position(at: now), until: now.monotonic + .nanoseconds(Int64(seconds * 1e9)))
    }

    /// When the player next has something to report, on the monotonic clock.
    public func nextEvent(now: Timestamp) -> MonotonicInstant? {
        switch state {
        case .buffering(_, let readyAt): return readyAt
        case .stalled(_, let until): return until
        case .moving(let rate, _, _):
            guard let duration = item?.durationSeconds, rate > 0 else { return nil }
            let remaining = max(0, (duration - position(at: now)) / rate)
            return now.monotonic + .nanoseconds(Int64(remaining * 1e9))
        case .empty, .ready: return nil
        }
    }

    /// Advances the model to `now` and returns what happened.
    public mutating func advance(now: Timestamp) -> [Report] {
        switch state {
        case .buffering(let position, let readyAt) where readyAt <= now.monotonic:
            state = .ready(position: position)
            return [.ready(position: position)]
        case .stalled(let position, let until) where until <= now.monotonic:
            state = .ready(position: position)
            return [.stallEnded(position: position)]
        case .moving:
            if let duration = item?.durationSeconds, position(at: now) >= duration {
                state = .ready(position: duration)
                return [.ended]
            }
            return []
        default:
            return []
        }
    }

    private func clamp(_ position: Double) -> Double {
        guard let duration = item?.durationSeconds else { return max(0, position) }
        return min(max(0, position), duration)
    }
}

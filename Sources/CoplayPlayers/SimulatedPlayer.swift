import CoplayCore

/// The default player: a clock-driven model of a media player, on the far side of the player
/// boundary. Its position follows the wall clock and the rate; after a load or a seek it needs
/// the item's `bufferSeconds` before it reports ready; a simulated stall freezes it for a while;
/// it stops at the item's end. It performs no IO: its owner (the shell or the simulation) hands
/// it the core's `PlayerCommand`s, feeds its `PlayerReport`s back to the core, and calls
/// `advance` at `nextEvent`.
public struct SimulatedPlayer: Hashable, Sendable {
    /// Where it is, in the same terms the core uses for its belief.
    public private(set) var model = PlayerModel()
    /// When a pending load or seek completes, or a stall ends (local monotonic clock).
    private var readyAt: MonotonicInstant?
    private var stalledUntil: MonotonicInstant?

    public init() {}

    public var item: LoadedItem? { model.item }
    public var rate: Double { model.rate }
    public func position(at now: Timestamp) -> Double { model.position(at: now) }

    /// Carries out a command; returns what it reports at once.
    public mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        switch command {
        case .load, .prepare:
            model.apply(command)
            stalledUntil = nil
            readyAt = now.monotonic + .seconds(saturating: model.item?.bufferSeconds ?? 0)
        case .play, .pause, .unload:
            model.apply(command)
            readyAt = nil
            stalledUntil = nil
        case .simulateStall(let seconds):
            guard model.item != nil else { return [] }
            let position = model.position(at: now)
            model.apply(.stalled(position: position))
            readyAt = nil
            stalledUntil = now.monotonic + .seconds(saturating: seconds)
            return [.stalled(position: position)] + advance(now: now)
        }
        return advance(now: now)
    }

    /// When it next has something to report, on the monotonic clock.
    public func nextEvent(now: Timestamp) -> MonotonicInstant? {
        if let readyAt { return readyAt }
        if let stalledUntil { return stalledUntil }
        guard case .moving(let rate, _, _) = model.state, rate > 0, let duration = model.item?.durationSeconds else {
            return nil
        }
        let remaining = max(0, (duration - model.position(at: now)) / rate)
        return now.monotonic + .seconds(saturating: remaining)
    }

    /// Advances to `now`; returns what happened.
    public mutating func advance(now: Timestamp) -> [PlayerReport] {
        if let due = readyAt, due <= now.monotonic {
            readyAt = nil
            guard case .preparing(let position) = model.state else { return [] }
            model.apply(.ready(position: position))
            return [.ready(position: position)]
        }
        if let due = stalledUntil, due <= now.monotonic {
            stalledUntil = nil
            guard case .stalled(let position) = model.state else { return [] }
            model.apply(.stallEnded(position: position))
            return [.stallEnded(position: position)]
        }
        if case .moving = model.state, let duration = model.item?.durationSeconds,
            model.position(at: now) >= duration
        {
            model.apply(.ended(position: duration))
            return [.ended(position: duration)]
        }
        return []
    }
}

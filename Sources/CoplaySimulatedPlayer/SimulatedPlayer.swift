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
    /// How far its real speed is from the speed it is told: +0.003 runs 0.3% fast, as a sound
    /// card's clock does. Zero by default (then the core's belief is exact).
    public var speedError = 0.0
    /// When set, it reports a position sample this often while playing, as mpv's client does; the
    /// core then steers it by those samples (rate nudges, seeks).
    public var sampleInterval: Duration?
    private var nextSampleAt: MonotonicInstant?
    /// When set, every load and seek takes this long, whatever the item's `bufferSeconds` (a
    /// player on a slow link; `.infinity`: one that never gets ready).
    public var preparationSeconds: Double?

    public init(speedError: Double = 0, sampleInterval: Duration? = nil, preparationSeconds: Double? = nil) {
        self.speedError = speedError
        self.sampleInterval = sampleInterval
        self.preparationSeconds = preparationSeconds
    }

    public var item: LoadedItem? { model.item }
    public var rate: Double { model.rate }
    public func position(at now: Timestamp) -> Double { model.position(at: now) }

    /// Carries out a command; returns what it reports at once.
    /// From `now` on, the player runs `value` fast (negative: slow), whatever it was told.
    public mutating func setSpeedError(_ value: Double, now: Timestamp) {
        if case .moving(let rate, _, _) = model.state {
            model.apply(.adjustRate(rate / (1 + speedError) * (1 + value), at: now.wall))
        }
        speedError = value
    }

    public mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        switch command {
        case .load, .prepare:
            model.apply(command)
            stalledUntil = nil
            let seconds = preparationSeconds ?? model.item?.bufferSeconds ?? 0
            readyAt = seconds.isFinite ? now.monotonic + .seconds(saturating: seconds) : nil
        case .play(let rate, let position, let at):
            // From the later of `at` and now on, it runs at its own (erroneous) speed.
            let start = max(at, now.wall)
            let startPosition = position + rate * Double(start.unixNanos &- at.unixNanos) / 1e9
            model.apply(.play(rate: rate * (1 + speedError), position: startPosition, at: start))
            readyAt = nil
            stalledUntil = nil
            nextSampleAt = sampleInterval.map { now.monotonic + $0 }
        case .adjustRate(let rate, let at):
            model.apply(.adjustRate(rate * (1 + speedError), at: at))
        case .pause, .unload:
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
        case .interstitial, .endInterstitial:
            model.apply(command)  // a second player of its own: the main one holds
            return []
        }
        return advance(now: now)
    }

    /// When it next has something to report, on the monotonic clock.
    public func nextEvent(now: Timestamp) -> MonotonicInstant? {
        if let readyAt { return readyAt }
        if let stalledUntil { return stalledUntil }
        guard case .moving(let rate, _, _) = model.state, rate > 0 else { return nil }
        let sample = sampleInterval == nil ? nil : nextSampleAt
        guard let duration = model.item?.durationSeconds else { return sample }
        let end = now.monotonic + .seconds(saturating: max(0, (duration - model.position(at: now)) / rate))
        return sample.map { min($0, end) } ?? end
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
        if let interval = sampleInterval, let due = nextSampleAt, due <= now.monotonic, case .moving = model.state {
            nextSampleAt = now.monotonic + interval
            return [
                .sample(position: model.position(at: now), rate: model.rate / (1 + speedError), at: now.wall)
            ]
        }
        return []
    }
}

extension SimulatedPlayer: PlayerLoop.Player {}

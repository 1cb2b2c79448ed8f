/// What the core believes the local player is doing: updated by the commands it sends and by
/// the reports it receives, so that it can answer "where is the player now" without asking.
///
/// States: `empty` → `preparing` (load, prepare) → `ready` (report) → `moving` (play) →
/// `ready` (pause, end) ; `moving` → `stalled` (report) → `preparing` (stall over).
public struct PlayerModel: Hashable, Sendable {
    public enum State: Hashable, Sendable {
        case empty
        /// Loading or seeking to `position`; not ready yet.
        case preparing(position: Double)
        /// Prepared and holding `position`.
        case ready(position: Double)
        /// At `at` (local wall clock) the media is at `position`, moving at `rate`.
        case moving(rate: Double, position: Double, at: WallInstant)
        /// Stopped for want of media at `position`.
        case stalled(position: Double)
    }

    public private(set) var state: State = .empty
    public private(set) var item: LoadedItem?
    /// The interstitial the second player shows, if any.
    public private(set) var interstitial: Interstitial?
    /// The current item's live window, as last reported (`PlayerReport.liveWindow`): nil for an
    /// on-demand item.
    public private(set) var live: LiveWindow?
    /// The item's duration came from the player (`PlayerReport.duration`), not its share.
    private var durationFromPlayer = false
    /// The player was told to pause and nothing since told it to move: a sample saying it moves
    /// was taken before the pause reached it (a browser tab's crosses the pause on its way).
    private var toldToPause = false

    public init() {}

    public func position(at now: Timestamp) -> Double { position(atWall: now.wall) }

    public func position(atWall now: WallInstant) -> Double {
        switch state {
        case .empty: return 0
        case .preparing(let position), .ready(let position), .stalled(let position): return position
        case .moving(let rate, let position, let at):
            let elapsedSeconds = now > at ? Double(now.unixNanos &- at.unixNanos) / 1e9 : 0
            return clamp(position + rate * elapsedSeconds)
        }
    }

    public var rate: Double {
        if case .moving(let rate, _, _) = state { return rate }
        return 0
    }

    public var isReady: Bool {
        switch state {
        case .ready, .moving: true
        case .empty, .preparing, .stalled: false
        }
    }

    public var isStalled: Bool {
        if case .stalled = state { return true }
        return false
    }

    /// The command is on its way to the player: believe it done (a load or prepare is done once
    /// the player reports ready).
    public mutating func apply(_ command: PlayerCommand) {
        switch command {
        case .load, .prepare, .play, .unload: toldToPause = false
        case .pause: toldToPause = true
        case .adjustRate, .simulateStall, .interstitial, .endInterstitial: break
        }
        switch command {
        case .load(let item, let position):
            self.item = item
            live = nil
            durationFromPlayer = false
            state = .preparing(position: clamp(position))
        case .prepare(let position):
            guard item != nil else { return }
            state = .preparing(position: clamp(position))
        case .play(let rate, let position, let at):
            guard item != nil else { return }
            state = .moving(rate: rate, position: position, at: at)
        case .adjustRate(let rate, let at):
            guard case .moving = state else { return }
            state = .moving(rate: rate, position: position(atWall: at), at: at)
        case .pause(let position):
            guard item != nil else { return }
            state = .ready(position: clamp(position))
        case .unload:
            item = nil
            live = nil
            durationFromPlayer = false
            state = .empty
        case .simulateStall:
            break  // the player says whether it stalled
        case .interstitial(let interstitial):
            self.interstitial = interstitial
        case .endInterstitial:
            interstitial = nil
        }
    }

    /// The player reported.
    public mutating func apply(_ report: PlayerReport) {
        guard item != nil else { return }
        switch report {
        case .ready(let position):
            if case .preparing = state { state = .ready(position: clamp(position)) }
        case .stalled(let position):
            state = .stalled(position: clamp(position))
        case .stallEnded(let position):
            state = .ready(position: clamp(position))
        case .ended(let position):
            state = .ready(position: clamp(position))
        case .sample(let position, let rate, let at):
            switch state {
            case .ready where toldToPause && rate > 0:
                break  // stale: taken before the pause reached the player
            case .moving, .ready:
                state = rate > 0 ? .moving(rate: rate, position: position, at: at) : .ready(position: clamp(position))
            case .empty, .preparing, .stalled: break
            }
        case .liveWindow(let window):
            live = window
            // Positions are program dates: a length the player found means nothing here.
            if durationFromPlayer { item?.durationSeconds = nil }
        case .duration(let seconds):
            guard !isLive, item?.durationSeconds == nil else { break }
            item?.durationSeconds = seconds
            durationFromPlayer = true
        case .userAction, .failed, .loadFailed, .interstitialFailed, .copyFound, .anotherEncode:
            break
        }
    }

    /// Whether the current item is live: shared as one, or its player found a live playlist.
    public var isLive: Bool { live != nil || item?.live == true }

    /// `position` within the item: not before 0, not past its duration when that is known.
    public func clamp(_ position: Double) -> Double {
        guard !isLive, let duration = item?.durationSeconds else { return max(0, position) }
        return min(max(0, position), duration)
    }
}

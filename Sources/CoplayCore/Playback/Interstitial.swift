/// An interstitial: an ad or an intro played in a second player while the main item waits
/// (Apple's advice: never inject it into the main item's stream, which would put one
/// participant's times out of step with everyone's).
public struct Interstitial: Hashable, Sendable {
    /// Its name: made by its issuer from its id and a count (`interstitial` events and the
    /// hold that resolves a scheduled one name it).
    public var id: String
    public var url: String
    /// How long it plays, in seconds: the main item waits this long (the second player is
    /// stopped then, whatever the file's own length).
    public var durationSeconds: Double

    public init(id: String, url: String, durationSeconds: Double) {
        self.id = id
        self.url = url
        self.durationSeconds = durationSeconds
    }

    /// Longest interstitial: an hour (an intro is seconds, an ad break minutes).
    public static let durationMax = 3600.0
}

/// An interstitial this agent is playing now.
struct PlayingInterstitial: Hashable, Sendable {
    var interstitial: Interstitial
    /// For the whole group (the group waits at `position` for everyone to finish), or for this
    /// participant only (under a `playingInterstitial` suspension).
    var forAll: Bool
    var item: String
    /// The main item's position it interrupts.
    var position: Double
    var endsAt: MonotonicInstant
    /// The `playingInterstitial` suspension it runs under (for this participant only).
    var suspension: Suspension?
}

/// An interstitial waiting for the main item to reach `position`.
struct ScheduledInterstitial: Hashable, Sendable {
    var interstitial: Interstitial
    var position: Double
    /// The group command that scheduled it (nil: for this participant only).
    var command: CommandEnvelope?
}

/// A group interstitial the main item just reached here: the hold (an `interstitial` command at
/// its position) goes out when its turn comes, unless another participant's came first.
struct InterstitialHoldDue: Hashable, Sendable {
    var interstitial: Interstitial
    var item: String
    var position: Double
    var rate: Double
    /// When the group's timeline reached `position` (local wall clock).
    var reachedAt: WallInstant
    var due: MonotonicInstant
}

/// Playback's interstitials, its sub-machine's state (as `Suspensions` holds its
/// suspensions): the one playing here, those still to come, the hold due, the last look at
/// the playing item, and those already begun. Bounded by `Settings.itemsMax` and
/// `interstitialsScheduledMax`.
struct Interstitials: Hashable, Sendable {
    /// The interstitial playing here, if any.
    var playing: PlayingInterstitial?
    /// Group interstitials still to come, by item (at most `itemsMax` items,
    /// `interstitialsScheduledMax` each).
    var scheduled: [String: [ScheduledInterstitial]] = [:]
    /// This participant's own, on its current item (at most `interstitialsScheduledMax`).
    var localScheduled: [ScheduledInterstitial] = []
    /// The hold to send for a group interstitial the item reached, when its turn comes.
    var holdDue: InterstitialHoldDue?
    /// Where the playing item was at the last look for scheduled interstitials: the item, the
    /// command that began the playing stretch, the position.
    var watch: (item: String, stretch: Dot, position: Double)?
    /// Group interstitials begun or resolved here lately (the last `interstitialsScheduledMax`):
    /// reaching one and then receiving its hold plays it once.
    private(set) var resolved: [String] = []
    /// Interstitials typed here, for their ids.
    var made = 0

    /// A new membership: the group's schedule is learned afresh (one playing plays on).
    mutating func onNewMembership() {
        scheduled.removeAll()
        holdDue = nil
        watch = nil
    }

    /// `id` was begun or resolved: its hold, arriving later, plays nothing again.
    mutating func resolve(_ id: String, keeping max: Int) {
        resolved.append(id)
        if resolved.count > max { resolved.removeFirst() }
    }

    static func == (left: Self, right: Self) -> Bool {
        left.playing == right.playing && left.scheduled == right.scheduled
            && left.localScheduled == right.localScheduled && left.holdDue == right.holdDue
            && left.watch?.item == right.watch?.item && left.watch?.stretch == right.watch?.stretch
            && left.watch?.position == right.watch?.position && left.resolved == right.resolved
            && left.made == right.made
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(playing)
        hasher.combine(scheduled)
        hasher.combine(holdDue)
        hasher.combine(resolved)
        hasher.combine(made)
    }
}

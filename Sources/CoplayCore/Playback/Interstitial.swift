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

/// Why a player cannot play its item: the kinds every player's adapter tells apart (mpv, the
/// socket protocol, the browser page), so that each can say the remedy, and the group sees who
/// is not watching and why. The core announces it beside this participant's suspensions as
/// `cannotPlay:<kind>` (`Suspensions.cannotPlay`) until another item is loaded; it does not
/// separate the participant: its commands still drive the group.
public enum PlaybackProblem: String, Sendable {
    /// Anything else; the error's text says what (what a player that does not tell kinds apart
    /// reports).
    case other
    /// The format or a codec is not one this player decodes.
    case format
    /// There is no such file: its server answered 404 or 410, or the path does not exist.
    case notFound
    /// Its server cannot be reached from here.
    case unreachable
    /// Its server answers no byte ranges, so the player cannot start it anywhere but at 0.
    case noRanges
    /// A path on another machine's disk: this player reads URLs only (a browser).
    case localPath
    /// A live stream this player cannot follow.
    case live
    /// An item known by its content (its id is a `Fingerprint`) of which this participant has
    /// no copy: not at the item's path, not in its media folders, and no URL it reaches.
    case noCopy

    /// The reason peers see in this participant's suspensions.
    public var announcedReason: String { "cannotPlay:" + rawValue }
}

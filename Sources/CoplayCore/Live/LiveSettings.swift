/// Live items (`Settings.live`): where a start lands, and the bounds of reading a live playlist,
/// each with its reason.
public struct LiveSettings: Hashable, Sendable {
    /// A start on a live item lands this many target durations behind the playlist's edge (its
    /// last segment's end, as last read). The edge moves in steps of a segment, so the group is
    /// then between this less one and this plus one behind it (plus the age of the reading): 1.5
    /// keeps it within the three target durations a live player is expected to be, with half a
    /// segment to spare before the next is written (`coplay-bench live`).
    public var holdbackTargets = 1.5
    /// A playlist is refused when larger: a window of a few hundred segments is a few tens of
    /// KiB; a hostile server must not make the agent hold more.
    public var playlistBytesMax = 1 << 20
    /// Of a segment, only its first presentation time is read: this many bytes at most (the first
    /// video frame's header is in the first few packets; an audio-only stream's at once).
    public var segmentBytesMax = 1 << 20
    /// One fetch of a playlist or segment, from connecting to its last byte: a server slower than
    /// this (or one that never ends its answer) is refused, and the item fails to load.
    public var fetchTimeout: Duration = .seconds(5)
    /// A playlist is read again twice a target duration, but not more often than this: the window
    /// moves on as segments are added and deleted, and a start lands behind the edge as last read.
    public var refreshIntervalMin: Duration = .milliseconds(500)
    /// mpv seeks exactly in a live stream only inside what it has cached, so a seek waits for its
    /// cache to hold the target: looked at every `mpvSeekLookInterval`, for at most
    /// `mpvSeekWaitMax`, then it goes anyway. A cached range short of the target that has not
    /// grown for `mpvSeekStepAfter` has stopped (mpv's read-ahead reached its bound): mpv is moved
    /// `mpvSeekStepInside` inside its end, so that it lands in what is cached and reads on.
    public var mpvSeekWaitMax: Duration = .seconds(3)
    public var mpvSeekLookInterval: Duration = .milliseconds(20)
    public var mpvSeekStepAfter: Duration = .milliseconds(100)
    public var mpvSeekStepInside = 0.1

    public init() {}
}

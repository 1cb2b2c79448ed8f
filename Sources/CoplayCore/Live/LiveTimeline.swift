/// A live item's timeline is its program date (`EXT-X-PROGRAM-DATE-TIME`, seconds since 1970
/// UTC): the group's commands, starts and state carry dates, and each player maps its own
/// position to them. Two players that joined a stream at different moments started at different
/// media times, but the same frame has the same date for both.
///
/// For a player whose position is the stream's media time (mpv with `rebase-start-time=no`: the
/// transport stream's PTS), the map is one offset: date = media time + `offset`. It is found from
/// one segment whose first PTS was read (`TransportStream`), and the playlist's dates and
/// durations: each dated segment gives the offset once; their mean is taken, since a playlist
/// writes its dates to the millisecond and two agents that read different windows would
/// otherwise differ by up to one.
public enum LiveTimeline {
    /// `anchor` is the index in `playlist.segments` of the segment whose first media time is
    /// `mediaTime`. Nil when no segment is dated or the index is out of range.
    public static func offset(_ playlist: HLSPlaylist.MediaPlaylist, anchor: Int, mediaTime: Double) -> Double? {
        let segments = playlist.segments
        guard segments.indices.contains(anchor), mediaTime.isFinite else { return nil }
        // The media time at which each segment starts, from the anchor's by the durations.
        var starts = [Double](repeating: 0, count: segments.count)
        starts[anchor] = mediaTime
        if anchor + 1 < segments.count {
            for index in (anchor + 1)..<segments.count {
                starts[index] = starts[index - 1] + segments[index - 1].duration
            }
        }
        for index in stride(from: anchor - 1, through: 0, by: -1) {
            starts[index] = starts[index + 1] - segments[index].duration
        }
        var sum = 0.0
        var count = 0
        for (index, segment) in segments.enumerated() {
            guard let date = segment.date else { continue }
            sum += date - starts[index]
            count += 1
        }
        return count > 0 ? sum / Double(count) : nil
    }

    /// Where a start or a rejoin on a live item may land: inside the window of segments the
    /// playlist still lists (a position behind it has been deleted), and `holdback` behind its
    /// edge, as HLS players keep (a position nearer the edge runs out before the next segment
    /// is written). A position inside [window start, edge − holdback] is kept; any other is moved
    /// to edge − holdback (not before the window's start).
    public static func clamp(_ position: Double, window: ClosedRange<Double>, holdback: Double) -> Double {
        let latest = max(window.lowerBound, window.upperBound - holdback)
        return (window.lowerBound...latest).contains(position) ? position : latest
    }
}

/// A live item's window: the program dates its playlist still lists (`dates`: its first
/// segment's date to its last one's end), and the longest a segment lasts (`targetDuration`).
public struct LiveWindow: Hashable, Sendable {
    public var dates: ClosedRange<Double>
    public var targetDuration: Double

    public init(dates: ClosedRange<Double>, targetDuration: Double) {
        self.dates = dates
        self.targetDuration = targetDuration
    }
}

import CoplayCore
import Synchronization

/// Puts a live HLS item on the group's timeline, the program date, for a player whose position is
/// the stream's media time (mpv, with `rebase-start-time=no`: the transport stream's PTS).
///
/// On a load of an `http://` playlist (a `.m3u8` URL, or an item shared `live`) it reads the
/// playlist itself (`HTTPFetch`, bounded in bytes and time) before the player loads anything: a
/// master playlist's first variant, the media playlist's segments and dates, and the first PTS of
/// its newest segment. A playlist that has ended is an on-demand item and loads as any other. A
/// live one without date tags, or one that cannot be read, fails to load with the reason
/// (`PlayerReport.loadFailed`). Otherwise the player loads it, and from then on every position
/// crosses this boundary mapped: date = media time + offset (`LiveTimeline.offset`). The playlist
/// is read again twice a target duration (at most every `Settings.live.refreshIntervalMin`), and each reading's
/// window goes to the core (`PlayerReport.liveWindow`), which keeps starts inside it.
struct LivePlayer<Inner: LiveStreamPlayer>: PlayerDriver {
    private(set) var inner: Inner
    private let settings: Settings
    var kind: String { inner.kind }
    var openFile: String? { inner.openFile }

    /// The current live item: its playlist and the map of its positions.
    private struct Live {
        var item: LoadedItem
        var playlistURL: String
        var offset: Double
        var playlist: HLSPlaylist.MediaPlaylist
        var window: LiveWindow
        /// The player stalled since it was last ready: its cache ends where it starved, and a
        /// rejoin reloads the stream where the group is (`reload`).
        var stalled = false
        var refreshAt: MonotonicInstant
        /// Failed readings since the last good one (the first is said; the window is kept).
        var failedRefreshes = 0
    }

    /// A load waiting for its playlist: the item, where the core asked for it, and the last
    /// command the core gave meanwhile (a prepare, a play or a pause), carried out once loaded.
    private struct Pending {
        var item: LoadedItem
        var position: Double
        var then: PlayerCommand?
    }

    private var live: Live?
    private var pending: Pending?
    /// After a live load, what to do once the player is loaded (in media time), instead of
    /// telling the core it is ready.
    private var settling: PlayerCommand?
    private let readings = Readings()
    /// The reading in flight (its number) and when it began; a newer load forgets an older one.
    private var reading: (number: Int, refresh: Bool)?
    private var readingNumber = 0
    private static var pollInterval: Duration { .milliseconds(10) }

    init(_ inner: Inner, settings: Settings) {
        self.inner = inner
        self.settings = settings
    }

    /// Whether coplay reads `item`'s playlist itself: an `http://` playlist (by its extension), or
    /// any `http://` item shared as live.
    static func readsPlaylist(of item: LoadedItem) -> Bool {
        guard item.url.hasPrefix("http://") else { return false }
        let path = item.url.split(separator: "?", maxSplits: 1)[0].lowercased()
        return item.live || path.hasSuffix(".m3u8") || path.hasSuffix(".m3u")
    }

    mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
        switch command {
        case .load(let item, let position):
            live = nil
            pending = nil
            settling = nil
            reading = nil
            guard Self.readsPlaylist(of: item) else { return inner.perform(command, now: now) }
            // What was playing stops while the playlist is read: the core believes the new item loading.
            _ = inner.perform(.unload, now: now)
            pending = Pending(item: item, position: position)
            startReading(item.url, refresh: false, declaredLive: item.live)
            return []
        case .unload:
            live = nil
            pending = nil
            settling = nil
            reading = nil
            return inner.perform(command, now: now)
        case .prepare, .play, .pause:
            if pending != nil {
                pending?.then = command
                return []
            }
            guard let live else { return inner.perform(command, now: now) }
            if settling != nil {
                settling = command.shifted(by: -live.offset)
                return []
            }
            if live.stalled, case .prepare(let date) = command {
                return load(then: command, at: date, now: now)
            }
            return deliver(inner.perform(command.shifted(by: -live.offset), now: now), now: now)
        case .adjustRate, .simulateStall, .interstitial, .endInterstitial:
            if pending != nil || settling != nil, case .adjustRate = command { return [] }
            return deliver(inner.perform(command, now: now), now: now)
        }
    }

    func nextEvent(now: Timestamp) -> MonotonicInstant? {
        var due = inner.nextEvent(now: now)
        if reading != nil {
            let poll = now.monotonic + Self.pollInterval
            due = due.map { min($0, poll) } ?? poll
        } else if let live {
            due = due.map { min($0, live.refreshAt) } ?? live.refreshAt
        }
        return due
    }

    mutating func advance(now: Timestamp) -> [PlayerReport] {
        var reports = deliver(inner.advance(now: now), now: now)
        if let (number, refresh) = reading, let result = readings.take(number) {
            reading = nil
            reports += refresh ? refreshed(result, now: now) : loaded(result, now: now)
        } else if reading == nil, let live, now.monotonic >= live.refreshAt {
            let next = now.monotonic + refreshInterval(live.window)
            self.live?.refreshAt = next
            startReading(live.playlistURL, refresh: true)
        }
        return reports
    }

    mutating func receive(line: [UInt8], at now: Timestamp) -> [PlayerReport] {
        deliver(inner.receive(line: line, at: now), now: now)
    }

    mutating func connected(now: Timestamp) -> [PlayerReport] { deliver(inner.connected(now: now), now: now) }

    mutating func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) {
        let (reports, leave) = inner.disconnected(now: now)
        return (deliver(reports, now: now), leave)
    }

    mutating func close() { inner.close() }
    mutating func show(_ text: String) { inner.show(text) }

    // MARK: Readings

    private mutating func startReading(_ url: String, refresh: Bool, declaredLive: Bool = false) {
        readingNumber += 1
        reading = (readingNumber, refresh)
        let (number, settings, readings) = (readingNumber, settings, readings)
        BackgroundThread.start {
            readings.put(number, Self.read(url, anchor: !refresh, declaredLive: declaredLive, settings: settings))
        }
    }

    private mutating func loaded(_ result: Result<Reading, HTTPFetch.Failure>, now: Timestamp) -> [PlayerReport] {
        guard let pending else { return [] }
        self.pending = nil
        let reading: Reading
        switch result {
        case .failure(let failure):
            return [.loadFailed("the live playlist \(pending.item.url): \(failure)")]
        case .success(let value): reading = value
        }
        if reading.playlist.ended, !pending.item.live {
            // An on-demand playlist: positions are its own, as for any file.
            var reports = inner.perform(.load(pending.item, position: pending.position), now: now)
            if let then = pending.then { reports += inner.perform(then, now: now) }
            return reports
        }
        guard let dates = reading.playlist.window, let offset = reading.offset else {
            return [
                .loadFailed(
                    "the live playlist \(pending.item.url) has no EXT-X-PROGRAM-DATE-TIME on its segments: a live"
                        + " item is coordinated by its program dates (ffmpeg: -hls_flags program_date_time)")
            ]
        }
        let window = LiveWindow(dates: dates, targetDuration: reading.playlist.targetDuration)
        var item = pending.item
        item.live = true
        live = Live(
            item: item, playlistURL: reading.url, offset: offset, playlist: reading.playlist, window: window,
            refreshAt: now.monotonic + refreshInterval(window))
        // The player prepares inside the window even where the core asked for a date outside it
        // (an item just shared is at 0): it reports where it is, and a start lands in the window.
        let position = LiveTimeline.clamp(
            pending.position, window: dates, holdback: settings.live.holdbackTargets * window.targetDuration)
        return [.liveWindow(window)] + load(then: pending.then ?? .prepare(position: position), at: position, now: now)
    }

    /// Loads the current live item from the segment holding `date` (one earlier, in case the
    /// window moved on since it was read), then carries out `then` once loaded. Seeking instead
    /// lands off: a seek as the file loads, or beyond what mpv cached (after a stall, with a
    /// bounded read-ahead), goes to ffmpeg's HLS demuxer, which finds a live segment by its own
    /// count of durations (0.3 to 0.8 s off, `coplay-bench live`, `stall --live`); in mpv's cache
    /// of the window the seek is exact.
    private mutating func load(then: PlayerCommand, at date: Double, now: Timestamp) -> [PlayerReport] {
        guard let live else { return [] }
        let segments = live.playlist.segments
        let holding = segments.lastIndex { ($0.date ?? .infinity) <= date } ?? 0
        let fromEnd = max(0, holding - 1) - segments.count
        settling = then.shifted(by: -live.offset)
        self.live?.stalled = false
        return deliver(inner.loadLive(live.item, fromEnd: fromEnd, now: now), now: now)
    }

    /// The reports of the player, on their way to the core: the first readiness after a live
    /// load is the player's own (where the stream began), so `settling` is carried out instead.
    private mutating func deliver(_ reports: [PlayerReport], now: Timestamp) -> [PlayerReport] {
        for report in reports {
            if case .stalled = report { live?.stalled = true }
        }
        guard let command = settling else { return map(reports) }
        var delivered: [PlayerReport] = []
        for (index, report) in reports.enumerated() {
            if case .ready = report {
                settling = nil
                delivered += map(inner.perform(command, now: now))
                return delivered + deliver(Array(reports[(index + 1)...]), now: now)
            }
            delivered += map([report])
        }
        return delivered
    }

    private mutating func refreshed(_ result: Result<Reading, HTTPFetch.Failure>, now: Timestamp) -> [PlayerReport] {
        guard var live else { return [] }
        switch result {
        case .failure(let failure):
            live.failedRefreshes += 1
            self.live = live
            guard live.failedRefreshes == 1 else { return [] }
            return [.failed("the live playlist \(live.playlistURL) could not be read again: \(failure)")]
        case .success(let reading):
            guard let dates = reading.playlist.window else { return [] }
            live.failedRefreshes = 0
            live.playlist = reading.playlist
            live.window = LiveWindow(dates: dates, targetDuration: reading.playlist.targetDuration)
            live.refreshAt = now.monotonic + refreshInterval(live.window)
            self.live = live
            return [.liveWindow(live.window)]
        }
    }

    private func refreshInterval(_ window: LiveWindow) -> Duration {
        max(settings.live.refreshIntervalMin, .milliseconds(Int64(min(window.targetDuration, 60) * 500)))
    }

    // MARK: Mapping

    /// A report's positions from the player's media time to program dates.
    private func map(_ reports: [PlayerReport]) -> [PlayerReport] {
        guard let offset = live?.offset else { return reports }
        return reports.map { $0.shifted(by: offset) }
    }

    // MARK: Reading a playlist (on a thread of its own)

    struct Reading: Sendable {
        /// The media playlist's URL (a master playlist's first variant).
        var url: String
        var playlist: HLSPlaylist.MediaPlaylist
        /// date − media time, when a segment's first PTS was read (`anchor`).
        var offset: Double?
    }

    /// Reads the playlist at `url` (following a master playlist to its first variant) and, with
    /// `anchor`, the head of its newest segment still served, for the map of its positions (of a
    /// live playlist, or one `declaredLive`).
    static func read(
        _ url: String, anchor: Bool, declaredLive: Bool = false, settings: Settings
    ) -> Result<Reading, HTTPFetch.Failure> {
        do throws(HTTPFetch.Failure) {
            var limits = HLSPlaylist.Limits()
            limits.bytesMax = settings.live.playlistBytesMax
            func playlist(at url: String) throws(HTTPFetch.Failure) -> HLSPlaylist {
                let bytes = try HTTPFetch.get(url, bytesMax: limits.bytesMax, timeout: settings.live.fetchTimeout)
                do { return try HLSPlaylist.parse(bytes, limits: limits) } catch {
                    throw HTTPFetch.Failure(error.description)
                }
            }
            var mediaURL = url
            var media: HLSPlaylist.MediaPlaylist
            switch try playlist(at: url) {
            case .media(let found): media = found
            case .master(let variants):
                mediaURL = HTTPFetch.resolve(variants[0], against: url)
                guard case .media(let found) = try playlist(at: mediaURL) else {
                    throw HTTPFetch.Failure("its first variant \(mediaURL) is a master playlist too")
                }
                media = found
            }
            // An on-demand playlist (ended, not shared live) plays as any file: no segment is read.
            guard anchor, !media.ended || declaredLive, !media.segments.isEmpty, media.window != nil else {
                return .success(Reading(url: mediaURL, playlist: media, offset: nil))
            }
            // The newest segment, or the one before if the server deleted it meanwhile.
            var lastFailure = HTTPFetch.Failure("no segment could be read")
            for index in stride(from: media.segments.count - 1, through: max(0, media.segments.count - 3), by: -1) {
                let segmentURL = HTTPFetch.resolve(media.segments[index].uri, against: mediaURL)
                do throws(HTTPFetch.Failure) {
                    let head = try HTTPFetch.get(
                        segmentURL, bytesMax: settings.live.segmentBytesMax, timeout: settings.live.fetchTimeout,
                        enough: { TransportStream.firstPresentationTimes(in: $0).video != nil })
                    guard let time = TransportStream.firstPresentationTime(in: head) else {
                        throw HTTPFetch.Failure(
                            "its segment \(segmentURL) has no MPEG-TS presentation time (only MPEG-TS segments are read)"
                        )
                    }
                    let offset = LiveTimeline.offset(media, anchor: index, mediaTime: time)
                    return .success(Reading(url: mediaURL, playlist: media, offset: offset))
                } catch {
                    lastFailure = error
                }
            }
            throw lastFailure
        } catch {
            return .failure(error)
        }
    }

    /// Readings finished by their threads, by number, until taken (at most a few: one is in
    /// flight at a time, and a forgotten one is dropped when the next is put).
    final class Readings: Sendable {
        private let results = Mutex<[Int: Result<Reading, HTTPFetch.Failure>]>([:])

        func put(_ number: Int, _ result: Result<Reading, HTTPFetch.Failure>) {
            results.withLock {
                $0 = $0.filter { $0.key > number - 4 }
                $0[number] = result
            }
        }

        func take(_ number: Int) -> Result<Reading, HTTPFetch.Failure>? {
            results.withLock { $0.removeValue(forKey: number) }
        }
    }
}

/// A player that can start a live stream at a given segment (`LivePlayer` loads it there).
protocol LiveStreamPlayer: PlayerDriver {
    /// Loads the live `item`, its cache starting `fromEnd` segments before the playlist's end
    /// (negative), paused; reports ready as a load does.
    mutating func loadLive(_ item: LoadedItem, fromEnd: Int, now: Timestamp) -> [PlayerReport]
}

extension MpvPlayer: LiveStreamPlayer {}

import Testing

@testable import CoplayCore

/// Live items: the HLS playlist reader, program dates, a transport stream's first PTS, the map
/// of media time to dates, where a start lands, and the live flag on the wire and the console.
@Suite struct LiveTests {
    /// A playlist as ffmpeg 5.1 writes one (`-f hls -hls_time 1 -hls_list_size 6 -hls_flags
    /// program_date_time+delete_segments`), three segments of it.
    static let ffmpegPlaylist = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-TARGETDURATION:1
        #EXT-X-MEDIA-SEQUENCE:17
        #EXTINF:1.000000,
        #EXT-X-PROGRAM-DATE-TIME:2026-11-26T05:26:33.692+0000
        live17.ts
        #EXTINF:1.000000,
        #EXT-X-PROGRAM-DATE-TIME:2026-11-26T05:26:34.692+0000
        live18.ts
        #EXTINF:0.960000,
        #EXT-X-PROGRAM-DATE-TIME:2026-11-26T05:26:35.693+0000
        live19.ts

        """

    static func media(_ text: String) throws -> HLSPlaylist.MediaPlaylist {
        guard case .media(let media) = try HLSPlaylist.parse(Array(text.utf8)) else {
            throw HLSPlaylist.Refusal("not a media playlist")
        }
        return media
    }

    @Test func programDates_areRFC3339_inEveryZoneForm() {
        // 2026-11-26T05:26:33.692Z is 1795670793.692 s after 1970 (date -u -d @1795670793).
        #expect(ProgramDate.parse("2026-11-26T05:26:33.692+0000") == 1_795_670_793.692)
        #expect(ProgramDate.parse("2026-11-26T05:26:33.692Z") == 1_795_670_793.692)
        #expect(ProgramDate.parse("2026-11-26T06:26:33.692+01:00") == 1_795_670_793.692)
        #expect(ProgramDate.parse("2026-11-26T00:26:33.692-05:00") == 1_795_670_793.692)
        #expect(ProgramDate.parse("1970-01-01T00:00:00Z") == 0)
        #expect(ProgramDate.parse("2000-02-29T00:00:00Z") == 951_782_400)
        for bad in [
            "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-26T24:00:00Z", "2026-11-26T05:26:33",
            "2026-11-26 05:26:33Z", "2026-11-26T05:26:33.Z", "2026-11-26T05:26:33Zjunk", "yesterday",
            "2026-11-26T05:26:33+2500",
        ] {
            #expect(ProgramDate.parse(Substring(bad)) == nil, "\(bad)")
        }
    }

    @Test func aLivePlaylist_givesItsSegmentsDatesAndWindow() throws {
        let playlist = try Self.media(Self.ffmpegPlaylist)
        #expect(playlist.targetDuration == 1)
        #expect(playlist.mediaSequence == 17)
        #expect(!playlist.ended)
        #expect(playlist.segments.map(\.uri) == ["live17.ts", "live18.ts", "live19.ts"])
        #expect(playlist.segments.map(\.duration) == [1, 1, 0.96])
        let window = try #require(playlist.window)
        #expect(abs(window.lowerBound - 1_795_670_793.692) < 1e-6)
        #expect(abs(window.upperBound - (1_795_670_795.693 + 0.96)) < 1e-6)
    }

    @Test func aSegmentWithoutItsOwnDate_followsTheOneBefore_andUndatedPlaylistsHaveNoWindow() throws {
        let inferred = try Self.media(
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00Z\n#EXTINF:2,\na.ts\n#EXTINF:1.5,\nb.ts\n#EXT-X-ENDLIST\n"
        )
        #expect(inferred.ended)
        #expect(inferred.segments.map(\.date) == [1_767_225_600, 1_767_225_602])
        let undated = try Self.media("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n")
        #expect(undated.window == nil)
    }

    @Test func aMasterPlaylist_givesItsVariants() throws {
        let master = try HLSPlaylist.parse(
            Array(
                "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000\nlow/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2000000\nhigh/index.m3u8\n"
                    .utf8))
        #expect(master == .master(variants: ["low/index.m3u8", "high/index.m3u8"]))
    }

    /// Huge, endless (as far as the limits go) and malformed playlists are refused, each with its
    /// reason, and none is held beyond its limit.
    @Test func hostilePlaylists_areRefusedWithAReason() {
        var limits = HLSPlaylist.Limits()
        limits.entriesMax = 100
        let segment = "#EXTINF:1,\nx.ts\n"
        let cases: [(String, [UInt8], String)] = [
            (
                "huge", Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\n".utf8) + [UInt8](repeating: 0x23, count: 2 << 20),
                "bytes"
            ),
            (
                "endless", Array(("#EXTM3U\n#EXT-X-TARGETDURATION:1\n" + String(repeating: segment, count: 101)).utf8),
                "more than 100 segments"
            ),
            ("a long line", Array(("#EXTM3U\n" + String(repeating: "a", count: 5000) + "\n").utf8), "a line of"),
            ("not HLS", Array("<html></html>".utf8), "#EXTM3U"),
            ("not UTF-8", [0x23, 0x45, 0xFF, 0xFE], "UTF-8"),
            (
                "a malformed date",
                Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-PROGRAM-DATE-TIME:2026-11-26T99:00:00Z\n".utf8),
                "EXT-X-PROGRAM-DATE-TIME"
            ),
            (
                "a date past 2100",
                Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-PROGRAM-DATE-TIME:2200-01-01T00:00:00Z\n".utf8),
                "EXT-X-PROGRAM-DATE-TIME"
            ),
            (
                "dates a year apart",
                Array(
                    "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00Z\n#EXTINF:1,\na.ts\n#EXT-X-PROGRAM-DATE-TIME:2027-01-01T00:00:00Z\n#EXTINF:1,\nb.ts\n"
                        .utf8), "jump"
            ),
            ("a NaN duration", Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:nan,\na.ts\n".utf8), "EXTINF"),
            ("an infinite target", Array("#EXTM3U\n#EXT-X-TARGETDURATION:inf\n".utf8), "TARGETDURATION"),
            ("a segment without EXTINF", Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\na.ts\n".utf8), "without EXTINF"),
            ("no target duration", Array("#EXTM3U\n#EXTINF:1,\na.ts\n".utf8), "TARGETDURATION"),
            ("a live playlist of nothing", Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\n".utf8), "without a segment"),
        ]
        for (name, bytes, reason) in cases {
            do {
                _ = try HLSPlaylist.parse(bytes, limits: limits)
                Issue.record("\(name) was accepted")
            } catch {
                #expect(error.description.contains(reason), "\(name): \(error)")
            }
        }
    }

    /// A 188-byte packet starting a PES of `stream` with `pts` (90 kHz), as a multiplexer writes one.
    static func packet(stream: UInt8, pts: UInt64, pid: UInt16 = 0x100) -> [UInt8] {
        var bytes: [UInt8] = [0x47, 0x40 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10]
        bytes += [0, 0, 1, stream, 0, 0, 0x80, 0x80, 5]
        bytes += [
            0x21 | UInt8((pts >> 29) & 0x0E), UInt8((pts >> 22) & 0xFF), UInt8(((pts >> 14) & 0xFE) | 1),
            UInt8((pts >> 7) & 0xFF), UInt8(((pts << 1) & 0xFE) | 1),
        ]
        return bytes + [UInt8](repeating: 0xFF, count: 188 - bytes.count)
    }

    @Test func aSegmentsFirstPTS_isTheVideosWhenThereIsVideo() {
        // 1.421333 s: ffmpeg's first video PTS in live1.ts (ffprobe -show_entries packet=pts_time).
        let audio = Self.packet(stream: 0xC0, pts: 127_800, pid: 0x101)
        let video = Self.packet(stream: 0xE0, pts: 127_920)
        let null = [0x47, 0x1F, 0xFF, 0x10] + [UInt8](repeating: 0xFF, count: 184)
        let times = TransportStream.firstPresentationTimes(in: null + audio + video)
        #expect(times.audio == 127_800.0 / 90_000)
        #expect(times.video == 127_920.0 / 90_000)
        #expect(TransportStream.firstPresentationTime(in: audio + video) == 127_920.0 / 90_000)
        #expect(TransportStream.firstPresentationTime(in: audio) == 127_800.0 / 90_000)
        // The top bit of 33: 26.5 hours in.
        #expect(
            TransportStream.firstPresentationTime(in: Self.packet(stream: 0xE0, pts: 1 << 32)) == 4_294_967_296.0
                / 90_000
        )
        // Nothing: no PES, a cut packet, junk.
        #expect(TransportStream.firstPresentationTime(in: null) == nil)
        #expect(TransportStream.firstPresentationTime(in: Array(video.prefix(100))) == nil)
        var random = SplitMix64(seed: 7)
        for _ in 0..<200 {
            let junk = (0..<(Int(random.next() % 2000))).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            _ = TransportStream.firstPresentationTimes(in: junk)  // never traps, never reads past the end
        }
    }

    @Test func theOffset_isTheMeanOverTheDatedSegments_fromAnyAnchor() throws {
        let playlist = try Self.media(Self.ffmpegPlaylist)
        // Segment 19 starts at media time 3.421333; 18 at 2.421333, 17 at 1.421333. Dates:
        // 33.692, 34.692, 35.693 (the last rounded up a millisecond).
        let fromLast = try #require(LiveTimeline.offset(playlist, anchor: 2, mediaTime: 3.421333))
        let fromFirst = try #require(LiveTimeline.offset(playlist, anchor: 0, mediaTime: 1.421333))
        let expected = 1_795_670_793.692 - 1.421333 + 0.001 / 3
        #expect(abs(fromLast - expected) < 1e-6)
        #expect(abs(fromFirst - expected) < 1e-6)
        #expect(LiveTimeline.offset(playlist, anchor: 3, mediaTime: 1) == nil)
        #expect(LiveTimeline.offset(playlist, anchor: 0, mediaTime: .nan) == nil)
    }

    @Test func aStart_landsInTheWindow_holdbackBehindItsEdge() {
        let window = 100.0...106.0
        #expect(LiveTimeline.clamp(103, window: window, holdback: 1.5) == 103)  // inside: kept
        #expect(LiveTimeline.clamp(0, window: window, holdback: 1.5) == 104.5)  // behind (just shared)
        #expect(LiveTimeline.clamp(99.9, window: window, holdback: 1.5) == 104.5)  // deleted meanwhile
        #expect(LiveTimeline.clamp(105, window: window, holdback: 1.5) == 104.5)  // too near the edge
        #expect(LiveTimeline.clamp(0, window: 100.0...101.0, holdback: 3) == 100)  // never before the window
    }

    @Test func theLiveFlag_travelsAsTheDurationsMinusOne_andNothingElseNegativeIsAccepted() throws {
        let share = Command(
            item: "news", operation: .share(Activity(url: "http://tv.example/live.m3u8", itemID: "news", live: true)))
        let envelope = CommandEnvelope(
            dot: Dot(origin: WireVectors.sender, counter: 1), lamport: 1, dependencies: VectorClock(), command: share)
        var writer = ByteWriter()
        WireFormat.writeCommand(envelope, into: &writer)
        var reader = ByteReader(writer.bytes[...])
        let decoded = try WireFormat.readCommand(from: &reader)
        guard case .share(let activity) = decoded.command.operation else {
            Issue.record("not a share")
            return
        }
        #expect(activity.live)
        #expect(activity.durationSeconds == nil)
        // The same bytes with -2 where -1 stands.
        var bytes = writer.bytes
        let minusOne = withUnsafeBytes(of: (-1.0).bitPattern.bigEndian, Array.init)
        let at = try #require(
            (0...(bytes.count - 8)).last { Array(bytes[$0..<($0 + 8)]) == minusOne })
        bytes.replaceSubrange(at..<(at + 8), with: withUnsafeBytes(of: (-2.0).bitPattern.bigEndian, Array.init))
        #expect(throws: DecodeError.self) {
            var hostile = ByteReader(bytes[...])
            _ = try WireFormat.readCommand(from: &hostile)
        }
        // A duration given with live is refused at the console.
        guard case .failure = ConsoleCommand.parse("share http://tv.example/live.m3u8 live duration=5") else {
            Issue.record("a live item with a duration was accepted")
            return
        }
        guard
            case .success(.share(let typed, _, _)?) = ConsoleCommand.parse(
                "share http://tv.example/live.m3u8 id=tv live")
        else {
            Issue.record("not a share")
            return
        }
        #expect(typed.live && typed.itemID == "tv")
    }
}

/// The playback machine on a live item: starts land in the window, and nobody waits.
@Suite struct LivePlaybackTests {
    private let alice = Member(id: aliceID, incarnation: Incarnation(1))

    private func context(_ now: Timestamp, peers: [PeerID: PeerRecord] = [:]) -> PlaybackContext {
        PlaybackContext(
            now: now, member: alice, name: "alice", state: .joined(since: at(0).monotonic), peers: peers,
            offset: { _ in nil })
    }

    private func issued(_ outputs: [Playback.Output]) -> [Operation] {
        outputs.compactMap { if case .issue(let command) = $0 { command.operation } else { nil } }
    }

    @Test func play_onALiveItem_landsHoldbackBehindTheEdge_andInsideTheWindowIsKept() {
        var playback = Playback(settings: Settings())
        _ = playback.onCommand(.load(LoadedItem(url: "http://tv/live.m3u8")), context(at(0)))
        // Loaded at 0, which is 1970: behind any window. The player says it is live.
        _ = playback.onPlayerReport(
            .liveWindow(LiveWindow(dates: 1_795_670_000...1_795_670_006, targetDuration: 2)), context(at(1)))
        _ = playback.onPlayerReport(.ready(position: 1_795_670_003), context(at(1)))
        #expect(playback.player.isLive)
        guard case .play(_, let position, _)? = issued(playback.onCommand(.play(rate: 1), context(at(2)))).first
        else {
            Issue.record("no play issued")
            return
        }
        #expect(position == 1_795_670_003, "inside the window, 1.5 target durations from the edge: kept")
        // A seek typed to a position the playlist no longer lists lands 3 s (1.5 × 2) behind its edge.
        guard case .seek(let sought, _, _)? = issued(playback.onCommand(.seek(seconds: 60), context(at(3)))).first
        else {
            Issue.record("no seek issued")
            return
        }
        #expect(sought == 1_795_670_003)
        // On-demand items are not moved.
        var film = Playback(settings: Settings())
        _ = film.onCommand(.load(LoadedItem(url: "film.mkv")), context(at(0)))
        _ = film.onPlayerReport(.ready(position: 0), context(at(1)))
        guard case .seek(let filmPosition, _, _)? = issued(film.onCommand(.seek(seconds: 60), context(at(3)))).first
        else {
            Issue.record("no seek issued")
            return
        }
        #expect(filmPosition == 60)
    }

    @Test func nobodyWaitsForAStalledParticipant_onALiveItem_whateverThePolicy() {
        var settings = Settings()
        settings.suspensionReasonsThatTriggerWaiting = [Suspension.stallRecovery]
        let bob = Member(id: bobID, incarnation: Incarnation(1))
        var record = PeerRecord(member: bob, name: "bob", endpoint: bobEndpoint, now: at(0).monotonic)
        record.item = "http://tv/live.m3u8"
        record.suspensions = [Suspension.stallRecovery]
        let peers = [bobID: record]
        var playback = Playback(settings: settings)
        _ = playback.onCommand(.load(LoadedItem(url: "http://tv/live.m3u8")), context(at(0)))
        #expect(playback.waitsOutSuspensions(among: peers), "on-demand so far: the policy waits")
        _ = playback.onPlayerReport(
            .liveWindow(LiveWindow(dates: 1_795_670_000...1_795_670_006, targetDuration: 2)), context(at(1)))
        #expect(!playback.waitsOutSuspensions(among: peers), "live: nobody waits")
        var shared = Playback(settings: settings)
        _ = shared.onCommand(.load(LoadedItem(url: "http://tv/live.m3u8", live: true)), context(at(0)))
        #expect(!shared.waitsOutSuspensions(among: peers), "shared as live: nobody waits, window or not")
    }
}

import Foundation
import Testing

@testable import CoplayRuntime

/// The subtitles beside a film, as a party or `coplay web --media` serves them: found by the
/// film's name, listed at NAME.tracks.json, served as WebVTT (an SRT converted), and nothing
/// beyond what sits beside a film of the library.
@Suite struct SubtitlesTests {
    static let srt = Array(
        "\u{FEFF}1\r\n00:00:01,000 --> 00:00:02,500\r\nHello, world\r\n\r\n2\r\n00:01:00,250 --> 00:01:03,000\r\nLine one\r\nline two, 1,000\r\n"
            .utf8)

    @Test func anSRT_becomesWebVTT_onlyItsTimingsChanged() {
        let vtt = String(decoding: Subtitles.webVTT(fromSRT: Self.srt), as: UTF8.self)
        #expect(
            vtt
                == "WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.500\nHello, world\n\n2\n00:01:00.250 --> 00:01:03.000\nLine one\nline two, 1,000\n"
        )
    }

    @Test func aFilmsSidecars_areListedAndServed_andNothingElse() throws {
        let folder = NSTemporaryDirectory() + "coplay-subtitles-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let write = { (name: String, bytes: [UInt8]) in
            try Data(bytes).write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        try write("Our Film.mkv", [1, 2, 3])
        try write("Our Film.en.srt", Self.srt)
        try write("Our Film.fr.vtt", Array("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nBonjour\n".utf8))
        try write("Our Film.FR.srt", Self.srt)  // a second French track: the .vtt is kept
        try write("Our Film.srt", Self.srt)
        try write("Our Film.a.b.srt", Self.srt)  // no language: not a track
        try write("Other.en.srt", Self.srt)
        try FileManager.default.createSymbolicLink(
            atPath: folder + "/Our Film.de.srt", withDestinationPath: "/etc/passwd")
        let tracks = Subtitles.sidecars(of: folder + "/Our Film.mkv")
        #expect(tracks.map(\.language) == ["", "en", "fr"], "\(tracks)")  // FR and fr: one, the .vtt
        #expect(tracks.last.map { !$0.isSRT } == true)

        var library = MediaLibrary(prefix: "/media/s3cret/")
        #expect(try library.add(folder).get() == nil)
        var server = WebServer(files: [:], media: library)
        func get(_ path: String) -> (status: String, headers: String, body: String) {
            let reply = WebTests.flattened(server.respond(to: Array("GET \(path) HTTP/1.1\r\n\r\n".utf8)))
            return (reply.status, reply.headers, String(decoding: reply.body, as: UTF8.self))
        }
        let listing = get("/media/s3cret/Our%20Film.mkv.tracks.json")
        #expect(listing.status == "HTTP/1.1 200 OK" && listing.headers.contains("Content-Type: application/json"))
        let parsed = try JSONSerialization.jsonObject(with: Data(listing.body.utf8)) as? [String: Any]
        let urls = (parsed?["tracks"] as? [[String: Any]])?.compactMap { $0["url"] as? String }
        #expect(
            urls == [
                "/media/s3cret/Our%20Film.mkv.vtt", "/media/s3cret/Our%20Film.mkv.en.vtt",
                "/media/s3cret/Our%20Film.mkv.fr.vtt",
            ], "\(listing.body)")
        let english = get("/media/s3cret/Our%20Film.mkv.en.vtt")
        #expect(english.status == "HTTP/1.1 200 OK" && english.headers.contains("Content-Type: text/vtt"))
        #expect(english.body.hasPrefix("WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.500\nHello, world"))
        #expect(get("/media/s3cret/Our%20Film.mkv.fr.vtt").body.contains("Bonjour"))
        #expect(get("/media/s3cret/Our%20Film.mkv.vtt").body.hasPrefix("WEBVTT"))
        for refused in [
            "/media/s3cret/Our%20Film.mkv.de.vtt", "/media/s3cret/Our%20Film.mkv.it.vtt",
            "/media/s3cret/None.mkv.tracks.json", "/media/s3cret/Other.mkv.en.vtt",
            "/media/other/Our%20Film.mkv.en.vtt",
            "/media/s3cret/..%2FOur%20Film.mkv.en.vtt",
        ] {
            #expect(get(refused).status == "HTTP/1.1 404 Not Found", "\(refused)")
        }
        #expect(get("/media/s3cret/Other.en.srt").status == "HTTP/1.1 200 OK", "a folder's file, served as itself")
    }

    static let ffmpegInstalled = ["/usr/bin/ffmpeg", "/usr/bin/ffprobe"].allSatisfy {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// An MKV with two SubRip streams of its own (English, French) and an MP4 with a mov_text
    /// one: each stream extracted by ffmpeg, listed beside the sidecars (a sidecar first for its
    /// language), served as WebVTT with its cues; the listing says it is pending until then.
    @Test(.enabled(if: ffmpegInstalled, "ffmpeg and ffprobe (apt install ffmpeg)"))
    func aFilmsOwnTextStreams_areListedAndServed() throws {
        let folder = NSTemporaryDirectory() + "coplay-embedded-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let english =
            "1\n00:00:01,000 --> 00:00:02,500\nHello <b>there</b>\n\n2\n00:00:03,000 --> 00:00:04,000\nSecond cue\n"
        let french = "1\n00:00:01,000 --> 00:00:02,500\nBonjour\n"
        try Data(english.utf8).write(to: URL(fileURLWithPath: folder + "/e.srt"))
        try Data(french.utf8).write(to: URL(fileURLWithPath: folder + "/f.srt"))
        func ffmpeg(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            process.arguments = ["-nostdin", "-v", "error", "-y"] + arguments
            process.standardInput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "ffmpeg \(arguments)")
        }
        let video = ["-f", "lavfi", "-i", "testsrc=size=160x90:rate=24:duration=5"]
        try ffmpeg(
            video + [
                "-i", folder + "/e.srt", "-i", folder + "/f.srt", "-map", "0", "-map", "1", "-map", "2", "-c:v",
                "libx264", "-c:s", "srt", "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fre",
                folder + "/Our Film.mkv",
            ])
        try ffmpeg(
            video + [
                "-i", folder + "/e.srt", "-map", "0", "-map", "1", "-c:v", "libx264", "-c:s", "mov_text",
                folder + "/clip.mp4",
            ])
        // A sidecar for English: it is the English track, the film's own French stream beside it.
        try Data(Self.srt).write(to: URL(fileURLWithPath: folder + "/Our Film.en.srt"))

        var library = MediaLibrary(prefix: "/media/s3cret/")
        #expect(try library.add(folder).get() == nil)
        var server = WebServer(files: [:], media: library)
        func get(_ path: String) -> (status: String, body: String) {
            let reply = WebTests.flattened(server.respond(to: Array("GET \(path) HTTP/1.1\r\n\r\n".utf8)))
            return (reply.status, String(decoding: reply.body, as: UTF8.self))
        }
        func listing(_ film: String) throws -> [String: Any] {
            var parsed: [String: Any] = [:]
            let deadline = Date().addingTimeInterval(20)
            repeat {
                parsed =
                    try JSONSerialization.jsonObject(with: Data(get("/media/s3cret/\(film).tracks.json").body.utf8))
                    as? [String: Any] ?? [:]
                if parsed["pending"] == nil { break }
                usleep(50_000)
            } while Date() < deadline
            return parsed
        }
        let film = try listing("Our%20Film.mkv")
        #expect(film["pending"] == nil, "extracted: \(film)")
        let tracks = (film["tracks"] as? [[String: Any]]) ?? []
        #expect(tracks.compactMap { $0["language"] as? String } == ["en", "fr"], "\(film)")
        #expect(get("/media/s3cret/Our%20Film.mkv.en.vtt").body.contains("Hello, world"), "the sidecar's English")
        let served = get("/media/s3cret/Our%20Film.mkv.fr.vtt")
        #expect(served.status == "HTTP/1.1 200 OK" && served.body.hasPrefix("WEBVTT"), "\(served)")
        #expect(served.body.contains("00:01.000 --> 00:02.500\nBonjour"), "\(served.body)")

        let clip = try listing("clip.mp4")
        let clipTracks = (clip["tracks"] as? [[String: Any]]) ?? []
        // mov_text without a language tag reads `und`: no language, served as NAME.vtt.
        #expect(clipTracks.compactMap { $0["url"] as? String } == ["/media/s3cret/clip.mp4.vtt"], "\(clip)")
        let cues = get("/media/s3cret/clip.mp4.vtt").body
        #expect(cues.contains("Hello there") || cues.contains("Hello <b>there</b>"), "\(cues)")
        #expect(cues.contains("00:03.000 --> 00:04.000\nSecond cue"), "\(cues)")
    }

    @Test func aStreamsLanguage_isNamedAsASidecarWouldBe() {
        #expect(EmbeddedSubtitles.language("eng") == "en" && EmbeddedSubtitles.language("FRA") == "fr")
        #expect(EmbeddedSubtitles.language("und") == "" && EmbeddedSubtitles.language("") == "")
        #expect(EmbeddedSubtitles.language("pt-br") == "pt-br" && EmbeddedSubtitles.language("tlh") == "tlh")
        #expect(EmbeddedSubtitles.language("<script>") == "" && EmbeddedSubtitles.language("a,b") == "")
        #expect(EmbeddedSubtitles.language(String(repeating: "x", count: 40)) == "")
    }
}

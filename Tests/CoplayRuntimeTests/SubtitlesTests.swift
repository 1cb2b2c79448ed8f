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
}

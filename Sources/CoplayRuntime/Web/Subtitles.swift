import CoplayCore
import Glibc
import Synchronization

extension Settings {
    /// The subtitles served beside a film (`Subtitles`).
    public enum Subtitles {
        /// Tracks listed for one film: a film with subtitles in many languages has a dozen.
        public static let tracksMax = 16
        /// The largest subtitle file served: a feature film's SRT is 50-150 KB; it is read
        /// whole and converted for each request.
        public static let fileBytesMax = 4 << 20
        /// A language tag's length (`en`, `fr`, `pt-BR`, `zh-Hant`).
        public static let languageBytesMax = 12
        /// Entries of a film's folder looked at for its sidecars: a folder of films and their
        /// subtitles, not a disk.
        public static let folderEntriesMax = 4096
        /// Films whose own text subtitle streams (an MKV's or an MP4's) are kept, extracted:
        /// a party's queue, a folder's films as they are asked for.
        public static let embeddedFilmsMax = 64
        /// All the extracted tracks together: a film's dozen are a few megabytes; past this,
        /// a film's streams are not kept (its sidecars still are).
        public static let embeddedBytesMax = 64 << 20
        /// How long ffmpeg may take to extract one stream: it reads the whole file, interleaved
        /// (a 4 GB film from a disk in tens of seconds). A stream not out by then is not listed.
        public static let extractionTimeout: Duration = .seconds(120)
        /// What ffprobe's list of a film's subtitle streams may be: a line each.
        public static let probeAnswerMax = 16 << 10
    }
}

/// The subtitles beside a film (`film.srt`, `film.en.srt`, `film.fr.vtt` next to `film.mkv`), as
/// a browser takes them: WebVTT (SRT converted), listed at `NAME.tracks.json` and served at
/// `NAME.LANG.vtt` (`NAME.vtt` for a file with no language), where NAME is the film's name in
/// the media's URL. Each participant picks its own track; nothing of it is a group command.
enum Subtitles {
    struct Track: Equatable {
        /// Its language as its file names it; "" for none.
        var language: String
        /// The file on disk (for a stream of the film's own, the film).
        var path: String
        var isSRT: Bool
        /// The film's own stream it is (its index in the container), extracted by ffmpeg; nil
        /// for a sidecar file.
        var stream: Int? = nil
    }

    /// A film's tracks: its sidecars, then its own text streams (`EmbeddedSubtitles`, once
    /// extracted), one per language, a sidecar first. `pending`: its streams are still being
    /// read.
    static func tracks(of path: String) -> (tracks: [Track], pending: Bool) {
        let sidecars = sidecars(of: path)
        let (embedded, pending) = EmbeddedSubtitles.shared.tracks(of: path)
        var seen = Set(sidecars.map(\.language))
        let own = embedded.filter { seen.insert($0.language).inserted }
        return (Array((sidecars + own).prefix(Settings.Subtitles.tracksMax)), pending)
    }

    /// The sidecar files of the film at `path`: in its folder, named as the film without its
    /// extension, then an optional language, then `.srt` or `.vtt` (case-insensitive), regular
    /// files only. Sorted by language; at most `tracksMax`.
    static func sidecars(of path: String) -> [Track] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard let file = parts.last, parts.count > 1 || !path.hasPrefix("/") else { return [] }
        let folder = parts.count > 1 ? parts.dropLast().joined(separator: "/") : "."
        let stem = file.lastIndex(of: ".").map { String(file[..<$0]) } ?? String(file)
        guard !stem.isEmpty, let directory = opendir(folder.isEmpty ? "/" : folder) else { return [] }
        defer { closedir(directory) }
        var tracks: [Track] = []
        var looked = 0
        while looked < Settings.Subtitles.folderEntriesMax, let entry = readdir(directory) {
            looked += 1
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasPrefix(stem + "."), let track = track(named: name, stem: stem) else { continue }
            let full = (folder.isEmpty ? "" : folder) + "/" + name
            var status = stat()
            guard lstat(full, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { continue }
            tracks.append(Track(language: track.language, path: full, isSRT: track.isSRT))
        }
        tracks.sort { ($0.language, $0.isSRT ? 1 : 0) < ($1.language, $1.isSRT ? 1 : 0) }
        // One track per language: a .vtt before an .srt of the same language.
        var seen = Set<String>()
        return Array(tracks.filter { seen.insert($0.language).inserted }.prefix(Settings.Subtitles.tracksMax))
    }

    /// `STEM.srt`, `STEM.LANG.vtt`: the language and the kind, or nil for another file.
    static func track(named name: String, stem: String) -> (language: String, isSRT: Bool)? {
        let rest = name.dropFirst(stem.count + 1)  // after "STEM."
        let lowered = rest.lowercased()
        let isSRT = lowered.hasSuffix("srt")
        guard lowered == "srt" || lowered == "vtt" || lowered.hasSuffix(".srt") || lowered.hasSuffix(".vtt")
        else { return nil }
        let language = lowered.count == 3 ? "" : String(lowered.dropLast(4))  // `FR` is `fr`
        guard language.utf8.count <= Settings.Subtitles.languageBytesMax,
            language.utf8.allSatisfy({ isLetter($0) || $0 == UInt8(ascii: "-") }),
            language.first != "-"
        else { return nil }
        return (language, isSRT)
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// `NAME.tracks.json` for the film served as NAME: its tracks, each with its language and
    /// the URL path of its WebVTT (beside the film's, under `prefix`).
    static func listing(_ tracks: [Track], film name: String, prefix: String, pending: Bool = false) -> [UInt8] {
        let entries = tracks.map { track -> JSONValue in
            let served = name + (track.language.isEmpty ? "" : "." + track.language) + ".vtt"
            return .object([
                ("language", .string(track.language)),
                ("url", .string(prefix + MediaLibrary.percentEncoded(served))),
            ])
        }
        var fields: [(String, JSONValue)] = [("tracks", .array(entries))]
        if pending { fields.append(("pending", true)) }  // the film's own streams: ask again
        return Array(JSONValue.object(fields).serialized.utf8)
    }

    /// A track as WebVTT: a .vtt as it is, an SRT converted (a byte-order mark dropped, CR LF as
    /// LF, the timing lines' decimal commas as points, the `WEBVTT` header first). Nil when the
    /// file cannot be read or is larger than `fileBytesMax`.
    static func webVTT(of track: Track) -> [UInt8]? {
        if let stream = track.stream { return EmbeddedSubtitles.shared.webVTT(of: track.path, stream: stream) }
        let descriptor = open(track.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
            status.st_size <= Settings.Subtitles.fileBytesMax
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes[filled...].withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        bytes.removeSubrange(filled...)
        return track.isSRT ? webVTT(fromSRT: bytes) : bytes
    }

    /// SRT as WebVTT (WebVTT's own note on converting SRT: the header, and `.` before the
    /// milliseconds in the timings; a cue's number stays, as its identifier).
    static func webVTT(fromSRT srt: [UInt8]) -> [UInt8] {
        var input = srt[...]
        if input.starts(with: [0xEF, 0xBB, 0xBF]) { input = input.dropFirst(3) }
        var out = Array("WEBVTT\n\n".utf8)
        out.reserveCapacity(input.count + 16)
        var lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if input.last == UInt8(ascii: "\n") { lines.removeLast() }  // the last line's end, not a line
        for line in lines {
            var line = line
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if isTiming(line) {
                out += line.map { $0 == UInt8(ascii: ",") ? UInt8(ascii: ".") : $0 }
            } else {
                out += line
            }
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    /// `00:00:01,000 --> 00:00:02,500`: an SRT timing line.
    private static func isTiming(_ line: ArraySlice<UInt8>) -> Bool {
        let arrow = Array(" --> ".utf8)
        guard line.count >= 29, line.count <= 80 else { return false }
        return line.indices.dropLast(arrow.count).contains { line[$0...].starts(with: arrow) }
            && line.first.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } == true
    }
}

extension MediaLibrary {
    /// A request for a film's subtitles: `NAME.tracks.json` or `NAME[.LANG].vtt`, where NAME is
    /// a film of the library. The body and its type, or nil for any other path.
    func subtitles(forRequest requestPath: Substring) -> (body: [UInt8], type: String)? {
        guard requestPath.hasPrefix(prefix),
            let name = Invitation.percentDecoded(String(requestPath.dropFirst(prefix.count))),
            Self.isServable(name)
        else { return nil }
        if name.hasSuffix(".tracks.json") {
            let film = String(name.dropLast(".tracks.json".count))
            guard let path = path(forRequest: Substring(prefix + Self.percentEncoded(film))) else { return nil }
            let (tracks, pending) = Subtitles.tracks(of: path)
            return (Subtitles.listing(tracks, film: film, prefix: prefix, pending: pending), "application/json")
        }
        guard name.hasSuffix(".vtt") else { return nil }
        let named = name.dropLast(4)
        // NAME.vtt (no language), else NAME.LANG.vtt: the film is what stands before.
        var candidates: [(film: Substring, language: String)] = [(named, "")]
        if let dot = named.lastIndex(of: ".") {
            candidates.append((named[..<dot], named[named.index(after: dot)...].lowercased()))
        }
        for (film, language) in candidates {
            guard let path = path(forRequest: Substring(prefix + Self.percentEncoded(String(film)))),
                let track = Subtitles.tracks(of: path).tracks.first(where: { $0.language == language }),
                let body = Subtitles.webVTT(of: track)
            else { continue }
            return (body, "text/vtt; charset=utf-8")
        }
        return nil
    }
}

/// A film's own text subtitle streams (an MKV's SubRip or ASS, an MP4's mov_text, WebVTT), as
/// ffmpeg extracts them to WebVTT: once per film, on a thread of its own (ffmpeg reads the whole
/// film), kept in memory within `Settings.Subtitles`' bounds. The web server's loop never waits
/// for it: a listing asked for meanwhile says it is pending. Where ffmpeg is not installed, a film
/// has none.
final class EmbeddedSubtitles: Sendable {
    static let shared = EmbeddedSubtitles()

    private enum Film {
        case extracting
        case extracted([(track: Subtitles.Track, webVTT: [UInt8])])
    }
    private struct Store {
        var films: [String: Film] = [:]
        var bytes = 0
    }
    private let store = Mutex(Store())

    /// The text codecs a browser's track can show once converted (bitmap subtitles, PGS and
    /// DVD's, cannot).
    static let textCodecs: Set<String> = ["subrip", "srt", "ass", "ssa", "webvtt", "mov_text", "text"]

    /// Starts reading the film's streams, if not yet (a party does so for its films as it starts).
    func prepare(_ path: String) { _ = tracks(of: path) }

    /// The film's extracted tracks, and whether they are still being read (started now if not).
    func tracks(of path: String) -> (tracks: [Subtitles.Track], pending: Bool) {
        let start: Bool = store.withLock { store in
            guard store.films[path] == nil else { return false }
            guard store.films.count < Settings.Subtitles.embeddedFilmsMax else { return false }
            store.films[path] = .extracting
            return true
        }
        if start {
            BackgroundThread.start { [self] in
                let extracted = Self.extract(path)
                store.withLock { store in
                    var kept: [(track: Subtitles.Track, webVTT: [UInt8])] = []
                    for entry in extracted where store.bytes + entry.webVTT.count <= Settings.Subtitles.embeddedBytesMax
                    {
                        store.bytes += entry.webVTT.count
                        kept.append(entry)
                    }
                    store.films[path] = .extracted(kept)
                }
            }
        }
        return store.withLock { store in
            switch store.films[path] {
            case .extracting: ([], true)
            case .extracted(let tracks): (tracks.map(\.track), false)
            case nil: ([], false)
            }
        }
    }

    func webVTT(of path: String, stream: Int) -> [UInt8]? {
        store.withLock { store in
            guard case .extracted(let tracks) = store.films[path] else { return nil }
            return tracks.first { $0.track.stream == stream }?.webVTT
        }
    }

    /// The film's text streams (ffprobe), each extracted to WebVTT (ffmpeg); at most
    /// `tracksMax`, one per language.
    static func extract(_ path: String) -> [(track: Subtitles.Track, webVTT: [UInt8])] {
        guard path.utf8.count < 4096,
            let listed = MediaDuration.answer(
                of: [
                    "ffprobe", "-v", "quiet", "-select_streams", "s", "-show_entries",
                    "stream=index,codec_name:stream_tags=language", "-of", "csv=p=0", "-o",
                    "/dev/fd/\(ChildProcess.connectionDescriptor)", "file:" + path,
                ], bytesMax: Settings.Subtitles.probeAnswerMax, timeout: Settings.OwnCopies.probeTimeout)
        else { return [] }
        var seen = Set<String>()
        var tracks: [(track: Subtitles.Track, webVTT: [UInt8])] = []
        for line in String(decoding: listed, as: UTF8.self).split(separator: "\n")
        where tracks.count < Settings.Subtitles.tracksMax {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 2, let index = Int(fields[0]), (0...9999).contains(index),
                textCodecs.contains(fields[1])
            else { continue }
            let language = Self.language(fields.count > 2 ? fields[2] : "")
            guard seen.insert(language).inserted,
                let answer = MediaDuration.answer(
                    of: [
                        "ffmpeg", "-nostdin", "-v", "quiet", "-i", "file:" + path, "-map", "0:\(index)", "-f", "webvtt",
                        "-y", "/dev/fd/\(ChildProcess.connectionDescriptor)",
                    ], bytesMax: Settings.Subtitles.fileBytesMax + 1, timeout: Settings.Subtitles.extractionTimeout),
                answer.count <= Settings.Subtitles.fileBytesMax, answer.starts(with: Array("WEBVTT".utf8))
            else { continue }
            tracks.append((Subtitles.Track(language: language, path: path, isSRT: false, stream: index), answer))
        }
        return tracks
    }

    /// A stream's language tag as a sidecar's would name it: ISO 639-2's common codes as their
    /// two letters (`fre` and `fra` are `fr`, as a `film.fr.srt` beside it), others as they
    /// are if they are a tag at all; `und` and nothing are no language.
    static func language(_ tag: String) -> String {
        let lowered = tag.lowercased()
        let twoLetters = [
            "eng": "en", "fre": "fr", "fra": "fr", "ger": "de", "deu": "de", "spa": "es", "ita": "it", "por": "pt",
            "dut": "nl", "nld": "nl", "rus": "ru", "jpn": "ja", "chi": "zh", "zho": "zh", "kor": "ko", "ara": "ar",
            "swe": "sv", "nor": "no", "dan": "da", "fin": "fi", "pol": "pl", "tur": "tr", "gre": "el", "ell": "el",
            "heb": "he", "hin": "hi", "cze": "cs", "ces": "cs", "hun": "hu", "ukr": "uk", "rum": "ro", "ron": "ro",
        ]
        if let short = twoLetters[lowered] { return short }
        guard lowered != "und", !lowered.isEmpty, lowered.utf8.count <= Settings.Subtitles.languageBytesMax,
            lowered.utf8.allSatisfy({ (0x61...0x7A).contains($0) || $0 == 0x2D }), lowered.first != "-"
        else { return "" }
        return lowered
    }
}

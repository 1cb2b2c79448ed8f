/// An HLS playlist (RFC 8216), read as far as coplay needs it to put a live stream on the
/// program date: a media playlist's segments, their durations and dates, its target duration and
/// whether it has ended; a master playlist's variant streams. Hostile text is refused with a
/// reason, never trusted: the size, the number of lines and segments, every number and every date
/// are range-checked (`Limits`).
public enum HLSPlaylist: Hashable, Sendable {
    case media(MediaPlaylist)
    /// A master playlist: the URIs of its variant streams, in order.
    case master(variants: [String])

    public struct MediaPlaylist: Hashable, Sendable {
        /// `EXT-X-TARGETDURATION`: no segment is longer (seconds).
        public var targetDuration: Double
        /// `EXT-X-MEDIA-SEQUENCE`: the first segment's sequence number.
        public var mediaSequence: UInt64
        public var segments: [Segment]
        /// `EXT-X-ENDLIST`: no segment will be added (an on-demand item, or a live one that ended).
        public var ended: Bool

        /// The program date at which the window of segments begins and ends (its last segment's
        /// end): nil unless every segment has a date.
        public var window: ClosedRange<Double>? {
            guard let first = segments.first?.date, let last = segments.last, let lastDate = last.date else {
                return nil
            }
            return first...(lastDate + last.duration)
        }
    }

    public struct Segment: Hashable, Sendable {
        public var uri: String
        /// `EXTINF` (seconds).
        public var duration: Double
        /// The program date of its first sample (seconds since 1970 UTC): its own
        /// `EXT-X-PROGRAM-DATE-TIME`, or the date of the segment before it plus that one's
        /// duration (RFC 8216 §4.3.2.6); nil before the first date tag.
        public var date: Double?
    }

    public struct Limits: Hashable, Sendable {
        /// The playlist's size in bytes.
        public var bytesMax = 1 << 20
        /// Segments in a media playlist; variants in a master one.
        public var entriesMax = 10_000
        /// A line's length in bytes (a URI, a tag).
        public var lineBytesMax = 4_096
        public init() {}
    }

    public struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The latest date a playlist may carry: 2100-01-01 (a date beyond it is malformed, not the
    /// future); the earliest is 1970.
    static let dateMax = 4_102_444_800.0
    /// Durations above this (seconds) are malformed: no segment lasts a day.
    static let durationMax = 86_400.0

    /// Parses `bytes` (UTF-8 text, lines ending in LF or CRLF).
    public static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws(Refusal) -> HLSPlaylist {
        guard bytes.count <= limits.bytesMax else {
            throw Refusal("the playlist is \(bytes.count) bytes, more than \(limits.bytesMax)")
        }
        var lines: [Substring] = []
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Refusal("the playlist is not UTF-8 text")
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let trimmed = line.hasSuffix("\r") ? line.dropLast() : line
            guard trimmed.utf8.count <= limits.lineBytesMax else {
                throw Refusal("a line of \(trimmed.utf8.count) bytes, more than \(limits.lineBytesMax)")
            }
            if !trimmed.isEmpty { lines.append(trimmed) }
        }
        guard lines.first == "#EXTM3U" else { throw Refusal("not an HLS playlist (no #EXTM3U first)") }
        var targetDuration: Double?
        var mediaSequence: UInt64 = 0
        var segments: [Segment] = []
        var variants: [String] = []
        var ended = false
        var pendingDuration: Double?
        var pendingDate: Double?
        var variantPending = false
        for line in lines.dropFirst() {
            if line.hasPrefix("#") {
                let (tag, value) = split(line)
                switch tag {
                case "#EXT-X-TARGETDURATION":
                    guard let seconds = Double(value), seconds > 0, seconds <= durationMax else {
                        throw Refusal("EXT-X-TARGETDURATION '\(value)' is not a duration")
                    }
                    targetDuration = seconds
                case "#EXT-X-MEDIA-SEQUENCE":
                    guard let number = UInt64(value), number < 1 << 53 else {
                        throw Refusal("EXT-X-MEDIA-SEQUENCE '\(value)' is not a sequence number")
                    }
                    mediaSequence = number
                case "#EXTINF":
                    let seconds = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first
                    guard let seconds, let duration = Double(seconds), duration >= 0, duration <= durationMax else {
                        throw Refusal("EXTINF '\(value)' is not a duration")
                    }
                    pendingDuration = duration
                case "#EXT-X-PROGRAM-DATE-TIME":
                    guard let date = ProgramDate.parse(value), date >= 0, date <= dateMax else {
                        throw Refusal("EXT-X-PROGRAM-DATE-TIME '\(value)' is not a date")
                    }
                    pendingDate = date
                case "#EXT-X-ENDLIST":
                    ended = true
                case "#EXT-X-STREAM-INF":
                    variantPending = true
                default:
                    break  // tags coplay does not need, and comments
                }
                continue
            }
            // A URI line: a variant's (after EXT-X-STREAM-INF) or a segment's (after EXTINF).
            if variantPending {
                guard variants.count < limits.entriesMax else {
                    throw Refusal("more than \(limits.entriesMax) variants")
                }
                variants.append(String(line))
                variantPending = false
                continue
            }
            guard let duration = pendingDuration else { throw Refusal("a segment '\(line)' without EXTINF") }
            guard segments.count < limits.entriesMax else { throw Refusal("more than \(limits.entriesMax) segments") }
            let inferred = segments.last.flatMap { last in last.date.map { $0 + last.duration } }
            if let pendingDate, let inferred, abs(pendingDate - inferred) > Self.durationMax {
                throw Refusal("the program dates jump by more than a day between two segments")
            }
            segments.append(Segment(uri: String(line), duration: duration, date: pendingDate ?? inferred))
            pendingDuration = nil
            pendingDate = nil
        }
        if !variants.isEmpty {
            guard segments.isEmpty else { throw Refusal("both variants and segments: neither master nor media") }
            return .master(variants: variants)
        }
        guard let targetDuration else { throw Refusal("no EXT-X-TARGETDURATION: not a media playlist") }
        guard !segments.isEmpty || ended else { throw Refusal("a live playlist without a segment") }
        return .media(
            MediaPlaylist(
                targetDuration: targetDuration, mediaSequence: mediaSequence, segments: segments, ended: ended))
    }

    private static func split(_ line: Substring) -> (tag: Substring, value: Substring) {
        guard let colon = line.firstIndex(of: ":") else { return (line, "") }
        return (line[..<colon], line[line.index(after: colon)...])
    }
}

/// `EXT-X-PROGRAM-DATE-TIME`'s ISO 8601 date with a time zone (RFC 3339), as seconds since 1970
/// UTC: `2026-11-26T05:26:17.692+0000`, `…Z`, `…+01:00`; fractions to the nanosecond.
public enum ProgramDate {
    public static func parse(_ text: Substring) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40 else { return nil }
        var index = 0
        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + count)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ character: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == character else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2),
            index < bytes.count, bytes[index] == 0x54 || bytes[index] == 0x74
        else { return nil }
        index += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60,
            second < 61
        else { return nil }
        var fraction = 0.0
        if expect(0x2E) {
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if index - start < 9 { fraction += Double(bytes[index] - 0x30) * scale }
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var zone = 0
        if expect(0x5A) || expect(0x7A) {
            zone = 0
        } else if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D {
            let sign = bytes[index] == 0x2D ? -1 : 1
            index += 1
            guard let hours = digits(2), hours < 24 else { return nil }
            _ = expect(0x3A)
            guard let minutes = digits(2), minutes < 60 else { return nil }
            zone = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Double(days * 86_400 + hour * 3600 + minute * 60 + second - zone) + fraction
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

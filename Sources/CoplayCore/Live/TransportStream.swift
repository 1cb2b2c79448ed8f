/// The first presentation time of an MPEG transport stream segment (ISO/IEC 13818-1), the one
/// fact of a segment coplay needs: with the segment's program date it ties the stream's media
/// time to the date. Reads 188-byte packets until the first PES header with a PTS on a video
/// stream (ids 0xE0–0xEF), the stream whose frames a player's position follows; without video,
/// the first on an audio stream (0xC0–0xDF). Never reads past `bytes`; anything malformed is
/// skipped, and a segment without a PTS gives nil.
public enum TransportStream {
    static let packetBytes = 188

    /// Seconds (the 90 kHz PTS, 33 bits).
    public static func firstPresentationTime(in bytes: [UInt8]) -> Double? {
        let times = firstPresentationTimes(in: bytes)
        return times.video ?? times.audio
    }

    /// The first video and the first audio presentation time in `bytes` (seconds), each if any:
    /// a reader of a segment's head stops once it has the video's.
    public static func firstPresentationTimes(in bytes: [UInt8]) -> (video: Double?, audio: Double?) {
        var audio: Double?
        var offset = 0
        while offset + packetBytes <= bytes.count {
            defer { offset += packetBytes }
            guard bytes[offset] == 0x47 else { continue }
            let payloadStart = bytes[offset + 1] & 0x40 != 0
            let adaptation = (bytes[offset + 3] >> 4) & 0x3
            guard payloadStart, adaptation & 0x1 != 0 else { continue }
            var start = offset + 4
            if adaptation & 0x2 != 0 { start += 1 + Int(bytes[offset + 4]) }
            let end = offset + packetBytes
            // The PES header: 00 00 01, the stream id, a length, two flag bytes, a header length, the PTS.
            guard start + 14 <= end, bytes[start] == 0, bytes[start + 1] == 0, bytes[start + 2] == 1 else { continue }
            let streamID = bytes[start + 3]
            let isVideo = (0xE0...0xEF).contains(streamID)
            guard isVideo || (0xC0...0xDF).contains(streamID), bytes[start + 7] & 0x80 != 0 else { continue }
            let p = start + 9
            let pts =
                UInt64(bytes[p] >> 1 & 0x07) << 30 | UInt64(bytes[p + 1]) << 22 | UInt64(bytes[p + 2] >> 1) << 15
                | UInt64(bytes[p + 3]) << 7 | UInt64(bytes[p + 4] >> 1)
            let seconds = Double(pts) / 90_000
            if isVideo { return (seconds, audio) }
            if audio == nil { audio = seconds }
        }
        return (nil, audio)
    }
}

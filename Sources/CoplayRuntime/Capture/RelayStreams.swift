import CoplayCore

/// The relay's traffic in a capture: each direction of each TCP connection put back in order by
/// sequence number, and the PUB (client to server) and MSG (server to client) operations of
/// NATS read out of it, with their subjects. Other TCP traffic yields nothing: a stream whose
/// bytes are not NATS lines is given up at its first over-long line.
///
/// Bounded, as a capture is anyone's file: at most `streamsMax` directions followed, each
/// holding at most `segmentsAheadMax` segments that arrived before a missing one (past that the
/// gap is taken as lost and the stream is given up), lines of at most `lineBytesMax` and
/// payloads of at most `payloadBytesMax`.
struct RelayStreams {
    struct Frame {
        var timestampNanos: Int64
        var source: Endpoint
        var destination: Endpoint
        var subject: String
        var payload: [UInt8]
    }

    static let streamsMax = 1024
    static let segmentsAheadMax = 256
    static let lineBytesMax = 16_384
    /// A coplay frame is at most 1,229 bytes: a stream with a PUB or MSG of more than this is
    /// not a relay's, and is given up rather than buffered.
    static let payloadBytesMax = 1 << 16

    private struct Key: Hashable {
        var source: Endpoint
        var destination: Endpoint
    }

    private struct Direction {
        /// The sequence number of the next byte expected; nil until the first segment.
        var next: UInt32?
        var ahead: [UInt32: ArraySlice<UInt8>] = [:]
        var buffer: [UInt8] = []
        /// A PUB or MSG line read, its payload not yet complete.
        var pending: (subject: String, size: Int)?
        var givenUp = false
    }

    private var directions: [Key: Direction] = [:]

    /// The frames that `segment` completes.
    mutating func add(_ segment: CapturedSegment) -> [Frame] {
        let key = Key(source: segment.source, destination: segment.destination)
        guard directions[key] != nil || directions.count < Self.streamsMax else { return [] }
        var direction = directions[key] ?? Direction()
        defer { directions[key] = direction }
        guard !direction.givenUp else { return [] }
        if segment.isSyn {
            direction = Direction(next: segment.sequence &+ 1)
            return []
        }
        guard !segment.payload.isEmpty else { return [] }
        let next = direction.next ?? segment.sequence
        let lead = Int32(bitPattern: segment.sequence &- next)
        if lead > 0 {
            guard direction.ahead.count < Self.segmentsAheadMax else {
                direction.givenUp = true
                return []
            }
            direction.ahead[segment.sequence] = segment.payload
            return []
        }
        // In order, or overlapping what was had (a retransmission): only the new bytes count.
        let overlap = -Int(lead)  // Int first: -Int32.min does not fit an Int32
        guard overlap < segment.payload.count else { return [] }
        var bytes = Array(segment.payload.dropFirst(overlap))
        var expected = next &+ UInt32(bytes.count)
        while let following = direction.ahead.removeValue(forKey: expected) {
            bytes += following
            expected = expected &+ UInt32(following.count)
        }
        direction.next = expected
        return Self.read(bytes, into: &direction).map {
            Frame(
                timestampNanos: segment.timestampNanos, source: segment.source, destination: segment.destination,
                subject: $0.subject, payload: $0.payload)
        }
    }

    /// The PUBs and MSGs that `bytes` completes on one direction.
    private static func read(_ bytes: [UInt8], into direction: inout Direction) -> [(subject: String, payload: [UInt8])]
    {
        direction.buffer += bytes
        var out: [(String, [UInt8])] = []
        var start = 0
        defer { direction.buffer.removeFirst(min(start, direction.buffer.count)) }
        while !direction.givenUp {
            let buffer = direction.buffer
            if let pending = direction.pending {
                guard buffer.count - start >= pending.size + 2 else { return out }
                out.append((pending.subject, Array(buffer[start..<(start + pending.size)])))
                start += pending.size + 2
                direction.pending = nil
                continue
            }
            guard let newline = buffer[start...].firstIndex(of: 0x0A) else {
                if buffer.count - start > lineBytesMax { direction.givenUp = true }
                return out
            }
            guard newline - start <= lineBytesMax else {
                direction.givenUp = true
                return out
            }
            let line = String(decoding: buffer[start..<newline], as: UTF8.self)
            start = newline + 1
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let operation = fields.first?.uppercased() else { continue }
            // PUB <subject> [reply-to] <size>; MSG <subject> <sid> [reply-to] <size>.
            let counts = operation == "PUB" ? 3...4 : operation == "MSG" ? 4...5 : nil
            guard let counts, counts.contains(fields.count), let size = Int(fields[fields.count - 1]), size >= 0
            else { continue }
            guard size <= payloadBytesMax else {
                direction.givenUp = true
                return out
            }
            direction.pending = (String(fields[1]), size)
        }
        return out
    }
}

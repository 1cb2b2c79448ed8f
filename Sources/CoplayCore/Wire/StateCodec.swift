/// The snapshot datagram's payload (`state`). PROTOCOL.md, "State transfer", is its
/// specification.
extension WireFormat {
    /// Most parts to one snapshot (a part's index is one byte; a request names 32 of them at a
    /// time, from a base): some 290 KB of group state — a queue of 1,000 entries with URLs of
    /// 100 bytes is 170 KB.
    public static let statePartsMax = 255
    /// Bytes a state part's payload adds around its content: snapshot id, index, count, Lamport
    /// clock, and the two entry counts.
    public static let statePartOverheadBytes = 8 + 1 + 1 + 8 + 1 + 1
    /// Room a command leaves in a datagram so that, as an item's winner or a reliable message
    /// part, it also fits a state part with an authentication tag: the part's overhead, less the command's own flag byte, plus the
    /// largest tag.
    public static let commandRoomForStateBytes = statePartOverheadBytes - 1 + authTagBytesMax

    static func writeStatePart(_ part: StatePart, into writer: inout ByteWriter) {
        precondition(part.winners.count <= 255, "state part of \(part.winners.count) winners")
        writer.write(part.snapshot)
        writer.write(part.index)
        writer.write(part.count)
        writer.write(part.lamport)
        writeVectorClock(part.frontier, into: &writer)
        writer.write(UInt8(part.winners.count))
        for winner in part.winners { writeCommand(winner, into: &writer) }
    }

    /// The encoded size of one winner in a state part.
    public static func stateWinnerBytes(_ winner: CommandEnvelope) -> Int {
        var writer = ByteWriter(capacity: 128)
        writeCommand(winner, into: &writer)
        return writer.bytes.count
    }

    static func readStatePart(from reader: inout ByteReader) throws(DecodeError) -> StatePart {
        let snapshot = try reader.readUInt64()
        let index = try reader.readUInt8()
        let count = try reader.readUInt8()
        guard count >= 1, Int(count) <= statePartsMax, index < count else {
            throw DecodeError(.malformedPayload, "state part \(index) of \(count)")
        }
        let lamport = try reader.readUInt64()
        guard lamport <= lamportMax else {
            throw DecodeError(.malformedPayload, "state lamport clock \(lamport) above 2^53")
        }
        let frontier = try readVectorClock(from: &reader, field: "state frontier")
        let winnerCount = Int(try reader.readUInt8())
        var winners: [CommandEnvelope] = []
        for _ in 0..<winnerCount {
            let winner = try readCommand(from: &reader)
            guard winner.dependencies.isEmpty else {
                throw DecodeError(.malformedPayload, "a state winner with dependencies")
            }
            guard winner.lamport <= lamport else {
                throw DecodeError(.malformedPayload, "a state winner above the snapshot's lamport clock")
            }
            winners.append(winner)
        }
        return StatePart(
            snapshot: snapshot, index: index, count: count, lamport: lamport, frontier: frontier, winners: winners)
    }
}

/// Which film a file is, by its content, so that each participant's own copy of it is known for
/// the same item wherever it lies and whatever it is called (PROTOCOL.md, "Fingerprints").
///
/// A file's fingerprint is its size and a SHA-256 over `windowCount` windows of `windowLength`
/// bytes spread evenly over it, the first at its start and the last at its end: 1 MiB read,
/// however large the file, so that a 50 GB film is known in milliseconds. A file no longer than
/// the windows together is hashed whole. The digest covers a label, the size and the windows'
/// geometry, so that no two sizes or versions share one.
///
/// The core reads no files: a shell reads the windows `windows(size:)` names (the agent with
/// `pread`, a page's Worker from the `File` a person picked) and hands them to `init(size:windows:)`.
public struct Fingerprint: Hashable, Sendable {
    public static let windowLength = 65_536
    public static let windowCount = 16
    /// The largest size a fingerprint names: 2^50 bytes (1 PiB), far beyond any film, and exact in
    /// a Double, so a page's JavaScript reads it as it is.
    public static let sizeMax: UInt64 = 1 << 50
    static let label = Array("coplay-fingerprint-v1".utf8)

    public let size: UInt64
    /// SHA-256, 32 bytes.
    public let digest: [UInt8]

    /// The windows to read of a file of `size` bytes, in order: offsets and lengths.
    public static func windows(size: UInt64) -> [(offset: UInt64, length: Int)] {
        let whole = UInt64(windowLength * windowCount)
        guard size <= sizeMax else { return [] }
        guard size > 0 else { return [] }
        guard size > whole else { return [(offset: UInt64(0), length: Int(truncatingIfNeeded: size))] }
        let span = size - UInt64(windowLength)
        // span × 15 stays below 2^54 for any size up to `sizeMax`.
        return (0..<windowCount).map { (span * UInt64($0) / UInt64(windowCount - 1), windowLength) }
    }

    public enum Refusal: Error, Hashable, Sendable {
        case tooLarge(UInt64)
        /// The windows read are not those `windows(size:)` names (a short read: the file shrank).
        case windowsDiffer
    }

    /// The fingerprint of a file of `size` bytes whose windows (`windows(size:)`, in order) are these.
    public init(size: UInt64, windows: [[UInt8]]) throws(Refusal) {
        guard size <= Self.sizeMax else { throw .tooLarge(size) }
        let expected = Self.windows(size: size)
        guard windows.count == expected.count, zip(windows, expected).allSatisfy({ $0.count == $1.length }) else {
            throw .windowsDiffer
        }
        var hash = SHA256()
        hash.update(Self.label)
        hash.update(Self.bigEndian(size, bytes: 8))
        hash.update(Self.bigEndian(UInt64(Self.windowLength), bytes: 4))
        hash.update(Self.bigEndian(UInt64(Self.windowCount), bytes: 4))
        for window in windows { hash.update(window) }
        self.size = size
        self.digest = hash.finalize()
    }

    /// As written in events and on the wire: `v1-SIZE-HEX` (64 hex digits).
    public var text: String { "v1-\(size)-" + Hex.encode(digest) }

    /// A fingerprint as `text` writes it; nil for anything else (it comes from the network).
    public init?(text: String) {
        let parts = text.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].elementsEqual("v1".utf8), (1...16).contains(parts[1].count),
            parts[1].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), parts[2].count == 64,
            let digest = Hex.decode(String(decoding: parts[2], as: UTF8.self)), digest.count == 32
        else { return nil }
        var size: UInt64 = 0
        for digit in parts[1] {
            guard size <= (Self.sizeMax - UInt64(digit - UInt8(ascii: "0"))) / 10 else { return nil }
            size = size * 10 + UInt64(digit - UInt8(ascii: "0"))
        }
        self.size = size
        self.digest = digest
    }

    private static func bigEndian(_ value: UInt64, bytes: Int) -> [UInt8] {
        (0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }
}

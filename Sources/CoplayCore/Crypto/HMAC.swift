/// HMAC-SHA256 (RFC 2104), tested against RFC 4231's vectors (HKDF, built on it, is in
/// `HKDF.swift`). The key's inner and outer pads are hashed once, when the `HMAC` is made, so each
/// tag costs two compressions fewer.
public struct HMAC: Sendable {
    private let inner: SHA256
    private let outer: SHA256

    public init(key: [UInt8]) {
        var block = key.count > SHA256.blockBytes ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: SHA256.blockBytes - block.count)
        var inner = SHA256()
        inner.update(block.map { $0 ^ 0x36 })
        var outer = SHA256()
        outer.update(block.map { $0 ^ 0x5C })
        self.inner = inner
        self.outer = outer
    }

    /// The full 32-byte tag of `message`.
    public func authenticate(_ message: [UInt8]) -> [UInt8] {
        var inner = self.inner
        inner.update(message)
        var outer = self.outer
        outer.update(inner.finalize())
        return outer.finalize()
    }

    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        HMAC(key: key).authenticate(message)
    }
}

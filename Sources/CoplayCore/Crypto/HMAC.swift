/// HMAC-SHA256 (RFC 2104) and HKDF-SHA256 (RFC 5869), tested against RFC 4231 and RFC 5869's
/// vectors. The key's inner and outer pads are hashed once, when the `HMAC` is made, so each tag
/// costs two compressions fewer.
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

/// HKDF-SHA256 (RFC 5869): extract a pseudorandom key from `ikm` with `salt`, then expand it
/// with `info` to `length` bytes (at most 255 × 32).
public enum HKDF {
    public static func extract(salt: [UInt8], ikm: [UInt8]) -> [UInt8] {
        HMAC.sha256(key: salt.isEmpty ? [UInt8](repeating: 0, count: SHA256.digestBytes) : salt, message: ikm)
    }

    public static func expand(prk: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length >= 0 && length <= 255 * SHA256.digestBytes, "HKDF length \(length)")
        let hmac = HMAC(key: prk)
        var output: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            block = hmac.authenticate(block + info + [counter])
            output += block
            counter &+= 1
        }
        return Array(output.prefix(length))
    }

    public static func derive(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        expand(prk: extract(salt: salt, ikm: ikm), info: info, length: length)
    }
}

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

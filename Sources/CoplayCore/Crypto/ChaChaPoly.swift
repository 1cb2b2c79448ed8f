/// ChaCha20-Poly1305 (RFC 8439): the AEAD that seals datagrams on a relay. Written here, like
/// SHA-256 and HMAC, and tested against the RFC's vectors (sections 2.3.2, 2.4.2, 2.5.2, 2.6.2
/// and 2.8.2). Straightforward rather than fast: a relay carries a few datagrams a second per
/// agent, each under 1.3 KB.
public enum ChaChaPoly {
    public static let keyBytes = 32
    public static let nonceBytes = 12
    public static let tagBytes = 16

    /// `plaintext` encrypted under `key` and `nonce`, followed by the 16-byte tag over `aad`
    /// and the ciphertext.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8]) -> [UInt8] {
        precondition(key.count == keyBytes && nonce.count == nonceBytes, "ChaChaPoly key or nonce size")
        var sealed = ChaCha20.xor(plaintext, key: key, nonce: nonce, counter: 1)
        sealed += tag(aad: aad, ciphertext: sealed, key: key, nonce: nonce)
        return sealed
    }

    /// The plaintext of `sealed` (ciphertext then tag), or nil when the tag does not verify
    /// (a wrong key, a wrong nonce or aad, or bytes changed on the way). Compared in constant time.
    public static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8]) -> [UInt8]? {
        precondition(key.count == keyBytes && nonce.count == nonceBytes, "ChaChaPoly key or nonce size")
        guard sealed.count >= tagBytes else { return nil }
        let ciphertext = Array(sealed[..<(sealed.count - tagBytes)])
        let expected = tag(aad: aad, ciphertext: ciphertext, key: key, nonce: nonce)
        let difference = zip(expected, sealed[(sealed.count - tagBytes)...]).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) }
        guard difference == 0 else { return nil }
        return ChaCha20.xor(ciphertext, key: key, nonce: nonce, counter: 1)
    }

    /// RFC 8439 §2.8: Poly1305 keyed by the first block's first 32 bytes, over aad, padding,
    /// ciphertext, padding and both lengths.
    static func tag(aad: [UInt8], ciphertext: [UInt8], key: [UInt8], nonce: [UInt8]) -> [UInt8] {
        let oneTimeKey = Array(ChaCha20.block(key: key, nonce: nonce, counter: 0).prefix(32))
        var message = aad
        message += [UInt8](repeating: 0, count: (16 - aad.count % 16) % 16)
        message += ciphertext
        message += [UInt8](repeating: 0, count: (16 - ciphertext.count % 16) % 16)
        message += littleEndian(UInt64(aad.count))
        message += littleEndian(UInt64(ciphertext.count))
        return Poly1305.authenticate(message, key: oneTimeKey)
    }

    private static func littleEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64($0 * 8)) }
    }
}

/// The ChaCha20 stream cipher (RFC 8439 §2.3–2.4): 32-byte key, 12-byte nonce, 32-bit counter.
/// The state lives in sixteen locals, not an array: a relay's every frame is opened and sealed
/// here, and an array's checked accesses (24 in each of a block's 80 quarter rounds) were most of
/// a block's cost.
public enum ChaCha20 {
    /// One 64-byte block of key stream.
    public static func block(key: [UInt8], nonce: [UInt8], counter: UInt32) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 64)
        output.withUnsafeMutableBufferPointer { write($0, key: key, nonce: nonce, counter: counter) }
        return output
    }

    /// `data` XORed with the key stream from block `counter` on (encryption and decryption alike).
    public static func xor(_ data: [UInt8], key: [UInt8], nonce: [UInt8], counter: UInt32) -> [UInt8] {
        var output = data
        var stream = [UInt8](repeating: 0, count: 64)
        output.withUnsafeMutableBufferPointer { out in
            stream.withUnsafeMutableBufferPointer { stream in
                var blockCounter = counter
                var offset = 0
                while offset < out.count {
                    write(stream, key: key, nonce: nonce, counter: blockCounter)
                    for index in 0..<min(64, out.count - offset) { out[offset + index] ^= stream[index] }
                    offset += 64
                    blockCounter &+= 1
                }
            }
        }
        return output
    }

    /// Block `counter`'s key stream into `out`'s first 64 bytes.
    @inline(never) private static func write(
        _ out: UnsafeMutableBufferPointer<UInt8>, key: [UInt8], nonce: [UInt8], counter: UInt32
    ) {
        let (s4, s5, s6, s7) = (word(key, at: 0), word(key, at: 4), word(key, at: 8), word(key, at: 12))
        let (s8, s9, s10, s11) = (word(key, at: 16), word(key, at: 20), word(key, at: 24), word(key, at: 28))
        let (s13, s14, s15) = (word(nonce, at: 0), word(nonce, at: 4), word(nonce, at: 8))
        var (x0, x1, x2, x3): (UInt32, UInt32, UInt32, UInt32) = (0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574)
        var (x4, x5, x6, x7, x8, x9, x10, x11) = (s4, s5, s6, s7, s8, s9, s10, s11)
        var (x12, x13, x14, x15) = (counter, s13, s14, s15)
        for _ in 0..<10 {
            quarterRound(&x0, &x4, &x8, &x12)
            quarterRound(&x1, &x5, &x9, &x13)
            quarterRound(&x2, &x6, &x10, &x14)
            quarterRound(&x3, &x7, &x11, &x15)
            quarterRound(&x0, &x5, &x10, &x15)
            quarterRound(&x1, &x6, &x11, &x12)
            quarterRound(&x2, &x7, &x8, &x13)
            quarterRound(&x3, &x4, &x9, &x14)
        }
        // The sixteen words, each little-endian, are the block's bytes in order.
        var words = (
            (x0 &+ 0x6170_7865).littleEndian, (x1 &+ 0x3320_646e).littleEndian, (x2 &+ 0x7962_2d32).littleEndian,
            (x3 &+ 0x6b20_6574).littleEndian, (x4 &+ s4).littleEndian, (x5 &+ s5).littleEndian,
            (x6 &+ s6).littleEndian, (x7 &+ s7).littleEndian, (x8 &+ s8).littleEndian, (x9 &+ s9).littleEndian,
            (x10 &+ s10).littleEndian, (x11 &+ s11).littleEndian, (x12 &+ counter).littleEndian,
            (x13 &+ s13).littleEndian, (x14 &+ s14).littleEndian, (x15 &+ s15).littleEndian
        )
        withUnsafeBytes(of: &words) { UnsafeMutableRawBufferPointer(out).copyMemory(from: $0) }
    }

    @inline(__always) private static func word(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }

    @inline(__always) private static func rotl(_ value: UInt32, _ count: UInt32) -> UInt32 {
        value << count | value >> (32 - count)
    }

    @inline(__always) private static func quarterRound(
        _ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32
    ) {
        a &+= b
        d = rotl(d ^ a, 16)
        c &+= d
        b = rotl(b ^ c, 12)
        a &+= b
        d = rotl(d ^ a, 8)
        c &+= d
        b = rotl(b ^ c, 7)
    }
}

/// The Poly1305 one-time authenticator (RFC 8439 §2.5), in five 26-bit limbs (the
/// poly1305-donna layout): products fit in 64 bits without a 128-bit type.
public enum Poly1305 {
    public static func authenticate(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(key.count == 32, "Poly1305 key size")
        @inline(__always) func le32(_ offset: Int) -> UInt32 {
            UInt32(key[offset]) | UInt32(key[offset + 1]) << 8 | UInt32(key[offset + 2]) << 16
                | UInt32(key[offset + 3]) << 24
        }
        // r, clamped, in 26-bit limbs.
        let r0 = UInt64(le32(0) & 0x3ff_ffff)
        let r1 = UInt64((le32(3) >> 2) & 0x3ff_ff03)
        let r2 = UInt64((le32(6) >> 4) & 0x3ff_c0ff)
        let r3 = UInt64((le32(9) >> 6) & 0x3f0_3fff)
        let r4 = UInt64((le32(12) >> 8) & 0x00f_ffff)
        let (s1, s2, s3, s4) = (r1 * 5, r2 * 5, r3 * 5, r4 * 5)
        var (h0, h1, h2, h3, h4): (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)

        var offset = 0
        while offset < message.count {
            // The block's bytes, read in place: a short last block is padded with a 1 byte and then
            // zeros (the 2^(8·count) bit); a full one has that bit as its 129th (byte 16).
            let count = min(16, message.count - offset)
            @inline(__always) func byte(_ at: Int) -> UInt64 {
                at < count ? UInt64(message[offset + at]) : at == count ? 1 : 0
            }
            @inline(__always) func b32(_ at: Int) -> UInt64 {
                byte(at) | byte(at + 1) << 8 | byte(at + 2) << 16 | byte(at + 3) << 24
            }
            h0 += b32(0) & 0x3ff_ffff
            h1 += (b32(3) >> 2) & 0x3ff_ffff
            h2 += (b32(6) >> 4) & 0x3ff_ffff
            h3 += (b32(9) >> 6) & 0x3ff_ffff
            h4 += (b32(12) >> 8) | byte(16) << 24
            let d0 = h0 * r0 + h1 * s4 + h2 * s3 + h3 * s2 + h4 * s1
            var d1 = h0 * r1 + h1 * r0 + h2 * s4 + h3 * s3 + h4 * s2
            var d2 = h0 * r2 + h1 * r1 + h2 * r0 + h3 * s4 + h4 * s3
            var d3 = h0 * r3 + h1 * r2 + h2 * r1 + h3 * r0 + h4 * s4
            var d4 = h0 * r4 + h1 * r3 + h2 * r2 + h3 * r1 + h4 * r0
            var carry = d0 >> 26
            h0 = d0 & 0x3ff_ffff
            d1 += carry
            carry = d1 >> 26
            h1 = d1 & 0x3ff_ffff
            d2 += carry
            carry = d2 >> 26
            h2 = d2 & 0x3ff_ffff
            d3 += carry
            carry = d3 >> 26
            h3 = d3 & 0x3ff_ffff
            d4 += carry
            carry = d4 >> 26
            h4 = d4 & 0x3ff_ffff
            h0 += carry * 5
            carry = h0 >> 26
            h0 &= 0x3ff_ffff
            h1 += carry
            offset += 16
        }

        // Full carry, then h mod 2^130 - 5: subtract p when h ≥ p.
        var carry = h1 >> 26
        h1 &= 0x3ff_ffff
        h2 += carry
        carry = h2 >> 26
        h2 &= 0x3ff_ffff
        h3 += carry
        carry = h3 >> 26
        h3 &= 0x3ff_ffff
        h4 += carry
        carry = h4 >> 26
        h4 &= 0x3ff_ffff
        h0 += carry * 5
        carry = h0 >> 26
        h0 &= 0x3ff_ffff
        h1 += carry

        var g0 = h0 &+ 5
        carry = g0 >> 26
        g0 &= 0x3ff_ffff
        var g1 = h1 &+ carry
        carry = g1 >> 26
        g1 &= 0x3ff_ffff
        var g2 = h2 &+ carry
        carry = g2 >> 26
        g2 &= 0x3ff_ffff
        var g3 = h3 &+ carry
        carry = g3 >> 26
        g3 &= 0x3ff_ffff
        let g4 = h4 &+ carry &- (1 << 26)
        // g4's top bit is clear exactly when h ≥ p: then take g. Chosen by a mask, not a
        // branch, so that the time taken says nothing about the tag.
        let takeG = (g4 >> 63) &- 1
        h0 = (h0 & ~takeG) | (g0 & takeG)
        h1 = (h1 & ~takeG) | (g1 & takeG)
        h2 = (h2 & ~takeG) | (g2 & takeG)
        h3 = (h3 & ~takeG) | (g3 & takeG)
        h4 = (h4 & ~takeG) | (g4 & 0x3ff_ffff & takeG)

        // h as 128 bits, plus s.
        let w0 = (h0 | h1 << 26) & 0xffff_ffff
        let w1 = (h1 >> 6 | h2 << 20) & 0xffff_ffff
        let w2 = (h2 >> 12 | h3 << 14) & 0xffff_ffff
        let w3 = (h3 >> 18 | h4 << 8) & 0xffff_ffff
        var tag: [UInt8] = []
        var sum: UInt64 = 0
        for (index, word) in [w0, w1, w2, w3].enumerated() {
            sum = word + UInt64(le32(16 + index * 4)) + (sum >> 32)
            for shift in stride(from: 0, to: 32, by: 8) { tag.append(UInt8(truncatingIfNeeded: sum >> UInt64(shift))) }
        }
        return tag
    }
}

/// SHA-256 (FIPS 180-4), written here because coplay takes no package dependencies. Tested
/// against the NIST examples (Tests/CoplayCoreTests/CryptoTests.swift). Streaming: `update` any
/// number of times, then `finalize`.
public struct SHA256: Sendable {
    public static let digestBytes = 32
    public static let blockBytes = 64

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// Bytes of an unfinished block.
    private var buffer: [UInt8] = []
    private var lengthBytes: UInt64 = 0

    public init() { buffer.reserveCapacity(Self.blockBytes) }

    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            lengthBytes &+= 1
            buffer.append(byte)
            if buffer.count == Self.blockBytes {
                compress(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Fast path for arrays: whole blocks are compressed in place.
    public mutating func update(_ bytes: [UInt8]) {
        lengthBytes &+= UInt64(bytes.count)
        var index = 0
        if !buffer.isEmpty {
            while index < bytes.count, buffer.count < Self.blockBytes {
                buffer.append(bytes[index])
                index += 1
            }
            guard buffer.count == Self.blockBytes else { return }
            compress(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
        while bytes.count - index >= Self.blockBytes {
            compress(bytes[index..<index + Self.blockBytes])
            index += Self.blockBytes
        }
        buffer.append(contentsOf: bytes[index...])
    }

    public consuming func finalize() -> [UInt8] {
        let bits = lengthBytes &* 8
        var tail = buffer
        tail.append(0x80)
        while tail.count % Self.blockBytes != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        var offset = 0
        while offset < tail.count {
            compress(tail[offset..<offset + Self.blockBytes])
            offset += Self.blockBytes
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(Self.digestBytes)
        for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
            digest += [UInt8(word >> 24), UInt8(word >> 16 & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word & 0xFF)]
        }
        return digest
    }

    private mutating func compress(_ block: [UInt8]) { block.withUnsafeBytes { compress($0) } }
    private mutating func compress(_ block: ArraySlice<UInt8>) { block.withUnsafeBytes { compress($0) } }

    /// One 64-byte block; the message schedule lives on the stack (no allocation per block).
    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        var (a, b, c, d, e, f, g, h) = state
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for t in 0..<16 {
                w[t] =
                    UInt32(block[4 * t]) << 24 | UInt32(block[4 * t + 1]) << 16 | UInt32(block[4 * t + 2]) << 8
                    | UInt32(block[4 * t + 3])
            }
            for t in 16..<64 {
                let s0 = w[t - 15].rotatedRight(7) ^ w[t - 15].rotatedRight(18) ^ (w[t - 15] >> 3)
                let s1 = w[t - 2].rotatedRight(17) ^ w[t - 2].rotatedRight(19) ^ (w[t - 2] >> 10)
                w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
            }
            Self.k.withUnsafeBufferPointer { k in
                for t in 0..<64 {
                    let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                    let choice = (e & f) ^ (~e & g)
                    let temp1 = h &+ s1 &+ choice &+ k[t] &+ w[t]
                    let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let temp2 = s0 &+ majority
                    h = g
                    g = f
                    f = e
                    e = d &+ temp1
                    d = c
                    c = b
                    b = a
                    a = temp1 &+ temp2
                }
            }
        }
        state = (
            state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g,
            state.7 &+ h
        )
    }
}

extension UInt32 {
    @inline(__always) fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { self >> count | self << (32 - count) }
}

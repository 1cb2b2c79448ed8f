import CoplayCore
import Testing

/// SHA-256, HMAC-SHA256 and HKDF-SHA256 against their published test vectors: FIPS 180-2's
/// examples, RFC 4231 (test cases 1, 2 and 6) and RFC 5869 (test cases 1 and 3).
@Suite struct CryptoTests {
    private func hex(_ text: String) -> [UInt8] { Hex.decode(text)! }

    @Test func sha256_matchesTheFIPSExamples() {
        #expect(
            Hex.encode(SHA256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Hex.encode(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            Hex.encode(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // One million 'a', fed in uneven pieces through both update paths.
        var hasher = SHA256()
        var fed = 0
        var piece = 1
        while fed < 1_000_000 {
            let count = min(piece, 1_000_000 - fed)
            if piece % 2 == 0 {
                hasher.update([UInt8](repeating: 0x61, count: count))
            } else {
                hasher.update(repeatElement(UInt8(0x61), count: count))
            }
            fed += count
            piece = piece * 3 % 997 + 1
        }
        #expect(Hex.encode(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func hmacSHA256_matchesRFC4231() {
        #expect(
            Hex.encode(HMAC.sha256(key: [UInt8](repeating: 0x0B, count: 20), message: Array("Hi There".utf8)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(
            Hex.encode(HMAC.sha256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(
            Hex.encode(
                HMAC.sha256(
                    key: [UInt8](repeating: 0xAA, count: 131),
                    message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func hkdfSHA256_matchesRFC5869() {
        let ikm = [UInt8](repeating: 0x0B, count: 22)
        let prk = HKDF.extract(salt: hex("000102030405060708090a0b0c"), ikm: ikm)
        #expect(Hex.encode(prk) == "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
        #expect(
            Hex.encode(HKDF.expand(prk: prk, info: hex("f0f1f2f3f4f5f6f7f8f9"), length: 42))
                == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        // Test case 3: no salt, no info.
        #expect(
            Hex.encode(HKDF.derive(ikm: ikm, salt: [], info: [], length: 42))
                == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }
}

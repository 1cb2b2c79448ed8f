import CoplayCore
import Testing

/// ChaCha20, Poly1305 and the AEAD against RFC 8439's vectors (sections 2.3.2, 2.4.2, 2.5.2,
/// 2.8.2, and appendix A.3's edge cases of the final reduction), and the AEAD at the lengths
/// where blocks and padding turn, checked against OpenSSL's (through Python's `cryptography`,
/// when the test was written: the SHA-256 of each sealed output is below).
@Suite struct ChaChaPolyTests {
    private func hex(_ text: String) -> [UInt8] { Hex.decode(text.filter { !$0.isWhitespace && $0 != ":" })! }
    private let sunscreen = Array(
        "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
            .utf8)

    @Test func chacha20Block_matchesRFC8439Section232() {
        let key = (0..<32).map { UInt8($0) }
        let block = ChaCha20.block(key: key, nonce: hex("000000090000004a00000000"), counter: 1)
        #expect(
            Hex.encode(block)
                == "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
                + "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    }

    @Test func chacha20Encryption_matchesRFC8439Section242() {
        let key = (0..<32).map { UInt8($0) }
        let ciphertext = ChaCha20.xor(sunscreen, key: key, nonce: hex("000000000000004a00000000"), counter: 1)
        #expect(
            ciphertext
                == hex(
                    """
                    6e 2e 35 9a 25 68 f9 80 41 ba 07 28 dd 0d 69 81 e9 7e 7a ec 1d 43 60 c2 0a 27 af cc fd 9f ae 0b
                    f9 1b 65 c5 52 47 33 ab 8f 59 3d ab cd 62 b3 57 16 39 d6 24 e6 51 52 ab 8f 53 0c 35 9f 08 61 d8
                    07 ca 0d bf 50 0d 6a 61 56 a3 8e 08 8a 22 b6 5e 52 bc 51 4d 16 cc f8 06 81 8c e9 1a b7 79 37 36
                    5a f9 0b bf 74 a3 5b e6 b4 0b 8e ed f2 78 5e 42 87 4d
                    """))
        #expect(ChaCha20.xor(ciphertext, key: key, nonce: hex("000000000000004a00000000"), counter: 1) == sunscreen)
    }

    @Test func poly1305_matchesRFC8439Section252AndTheReductionEdges() {
        #expect(
            Poly1305.authenticate(
                Array("Cryptographic Forum Research Group".utf8),
                key: hex(
                    "85:d6:be:78:57:55:6d:33:7f:44:52:fe:42:d5:06:a8:01:03:80:8a:fb:0d:b2:fd:4a:bf:f6:af:41:49:f5:1b"))
                == hex("a8:06:1d:c1:30:51:36:c6:c2:2b:8b:af:0c:01:27:a9"))
        // Appendix A.3: accumulators that land at or just above 2^130 - 5.
        let r2 = hex("02") + [UInt8](repeating: 0, count: 31)
        let r1 = hex("01") + [UInt8](repeating: 0, count: 31)
        #expect(
            Poly1305.authenticate([UInt8](repeating: 0xFF, count: 16), key: r2) == hex("03")
                + [UInt8](repeating: 0, count: 15))
        #expect(
            Poly1305.authenticate(
                hex("02") + [UInt8](repeating: 0, count: 15),
                key: hex("02") + [UInt8](repeating: 0, count: 15) + [UInt8](repeating: 0xFF, count: 16))
                == hex("03") + [UInt8](repeating: 0, count: 15))
        #expect(
            Poly1305.authenticate(
                [UInt8](repeating: 0xFF, count: 16) + hex("f0") + [UInt8](repeating: 0xFF, count: 15) + hex("11")
                    + [UInt8](repeating: 0, count: 15), key: r1) == hex("05") + [UInt8](repeating: 0, count: 15))
        #expect(
            Poly1305.authenticate(
                [UInt8](repeating: 0xFF, count: 16) + hex("fb") + [UInt8](repeating: 0xFE, count: 15)
                    + [UInt8](repeating: 0x01, count: 16), key: r1) == [UInt8](repeating: 0, count: 16))
    }

    @Test func aead_matchesRFC8439Section282() {
        let key = (0x80..<0xA0).map { UInt8($0) }
        let nonce = hex("07000000 4041424344454647")
        let aad = hex("50515253c0c1c2c3c4c5c6c7")
        let sealed = ChaChaPoly.seal(sunscreen, key: key, nonce: nonce, aad: aad)
        let expected = hex(
            """
            d3 1a 8d 34 64 8e 60 db 7b 86 af bc 53 ef 7e c2 a4 ad ed 51 29 6e 08 fe a9 e2 b5 a7 36 ee 62 d6
            3d be a4 5e 8c a9 67 12 82 fa fb 69 da 92 72 8b 1a 71 de 0a 9e 06 0b 29 05 d6 a5 b6 7e cd 3b 36
            92 dd bd 7f 2d 77 8b 8c 98 03 ae e3 28 09 1b 58 fa b3 24 e4 fa d6 75 94 55 85 80 8b 48 31 d7 bc
            3f f4 de f0 8e 4b 7a 9d e5 76 d2 65 86 ce c6 4b 61 16
            1a:e1:0b:59:4f:09:e2:6a:7e:90:2e:cb:d0:60:06:91
            """)
        #expect(sealed == expected)
        #expect(ChaChaPoly.open(sealed, key: key, nonce: nonce, aad: aad) == sunscreen)
    }

    @Test func aead_refusesAnyChangedByteAWrongKeyAWrongNonceOrWrongAAD() {
        let key = (0x80..<0xA0).map { UInt8($0) }
        let nonce = hex("070000004041424344454647")
        let aad = hex("50515253")
        let sealed = ChaChaPoly.seal(sunscreen, key: key, nonce: nonce, aad: aad)
        for index in sealed.indices {
            var changed = sealed
            changed[index] ^= 0x01
            #expect(ChaChaPoly.open(changed, key: key, nonce: nonce, aad: aad) == nil)
        }
        var otherKey = key
        otherKey[31] ^= 0x80
        #expect(ChaChaPoly.open(sealed, key: otherKey, nonce: nonce, aad: aad) == nil)
        #expect(ChaChaPoly.open(sealed, key: key, nonce: hex("070000004041424344454648"), aad: aad) == nil)
        #expect(ChaChaPoly.open(sealed, key: key, nonce: nonce, aad: hex("50515254")) == nil)
        #expect(ChaChaPoly.open(Array(sealed.prefix(15)), key: key, nonce: nonce, aad: aad) == nil)
        #expect(ChaChaPoly.open(Array(sealed.dropLast()), key: key, nonce: nonce, aad: aad) == nil)
    }

    /// Lengths where a block, a Poly1305 block or the padding turns; inputs made by a fixed rule.
    @Test(arguments: [
        (0, 0, "cf9682c606b13651902f4fea0d720912567b633abda48b8a0e4a5f1bb0af4f25"),
        (1, 3, "18c48ba8d634b861542f53c3a859150f0ccf890ad2de8a95ab2806b99cf6002f"),
        (15, 16, "8a9096a37d9a88ea2bef25dd9e1fbdcffd3b8593ecc0e62db7585e3f4ae8dad6"),
        (16, 17, "93f262528bdc5e03352d3cdde3c2089f6ad9cd1f6df7a440cae445eca455ef3b"),
        (17, 0, "d35494e84262cb911c80924cb7123e13bfec69054db45effdd7557b19eab190e"),
        (63, 1, "3ffb2626dc786e198e7a500aa3fdf5f12ce299e9a3a212c0e43d8b792a35fc63"),
        (64, 64, "1b2f72859942ee48ef8ed330dc34cf510671ac4cfa37639eae58ef00d0579e23"),
        (65, 5, "5b25d8fc469a02c4ee005e073b21168cf35d9e4e29f61a2b222efd1710396c82"),
        (129, 12, "854b801e47341cf0da46bb00907007285aea2cbf638549230be657551cb97902"),
        (1229, 40, "b618dbd943b38b34fe67d5402dae75d85f9aa87cca5a88cd1f5861be6268b85e"),
    ])
    func aead_agreesWithOpenSSLAtTheTurningLengths(length: Int, aadLength: Int, sealedSHA256: String) {
        let key = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 7 + length) }
        let nonce = (0..<12).map { UInt8(truncatingIfNeeded: $0 * 13 + length + 1) }
        let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 31 + length) }
        let aad = (0..<aadLength).map { UInt8(truncatingIfNeeded: $0 * 5 + 3) }
        let sealed = ChaChaPoly.seal(plaintext, key: key, nonce: nonce, aad: aad)
        #expect(sealed.count == length + ChaChaPoly.tagBytes)
        #expect(Hex.encode(SHA256.hash(sealed)) == sealedSHA256)
        #expect(ChaChaPoly.open(sealed, key: key, nonce: nonce, aad: aad) == plaintext)
    }
}

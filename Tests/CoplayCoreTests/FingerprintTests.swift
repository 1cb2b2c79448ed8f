import Foundation
import Testing

@testable import CoplayCore

/// The fingerprint (PROTOCOL.md, "Fingerprints") against vectors Python's hashlib computed
/// (Tests/Vectors/fingerprints.json), and its text form as a hostile peer may send it.
@Suite struct FingerprintTests {
    struct Case {
        var name: String
        var size: UInt64
        var marks: [(offset: UInt64, text: String)]?
        var fingerprint: String
    }

    static let cases: [Case] = {
        let data = try! Data(contentsOf: vectorsDirectory.appendingPathComponent("fingerprints.json"))
        let object = try! JSONSerialization.jsonObject(with: data) as! [String: Any]
        return (object["cases"] as! [[String: Any]]).map { entry in
            Case(
                name: entry["name"] as! String, size: (entry["size"] as! NSNumber).uint64Value,
                marks: (entry["marks"] as? [[Any]])?.map { ((($0[0] as! NSNumber).uint64Value), $0[1] as! String) },
                fingerprint: entry["fingerprint"] as! String)
        }
    }()

    /// The byte at `offset` of a vector's content.
    static func byte(_ vector: Case, at offset: UInt64) -> UInt8 {
        guard let marks = vector.marks else { return UInt8(truncatingIfNeeded: (offset >> 3) ^ offset) }
        for mark in marks where offset >= mark.offset && offset < mark.offset + UInt64(mark.text.utf8.count) {
            return Array(mark.text.utf8)[Int(offset - mark.offset)]
        }
        return 0
    }

    @Test func theVectors_matchAnIndependentImplementation() throws {
        #expect(Self.cases.count >= 7)
        for vector in Self.cases {
            let windows = Fingerprint.windows(size: vector.size).map { window in
                (0..<UInt64(window.length)).map { Self.byte(vector, at: window.offset + $0) }
            }
            let fingerprint = try Fingerprint(size: vector.size, windows: windows)
            #expect(fingerprint.text == vector.fingerprint, "\(vector.name)")
            #expect(Fingerprint(text: vector.fingerprint) == fingerprint, "\(vector.name): read back")
        }
    }

    /// The windows: none for an empty file, the whole of a small one, and for a large one sixteen
    /// of 64 KiB from its first byte to its last, none overlapping; 1 MiB read whatever its size.
    @Test func theWindows_spanTheFileAndReadOneMebibyte() {
        #expect(Fingerprint.windows(size: 0).isEmpty)
        #expect(Fingerprint.windows(size: 1_048_576).map(\.length) == [1_048_576])
        for size: UInt64 in [1_048_577, 4 << 30, 50 << 30, Fingerprint.sizeMax] {
            let windows = Fingerprint.windows(size: size)
            #expect(windows.count == 16 && windows.allSatisfy { $0.length == 65_536 })
            #expect(windows.first?.offset == 0 && windows.last.map { $0.offset + 65_536 } == size)
            #expect(zip(windows, windows.dropFirst()).allSatisfy { $0.offset + 65_536 <= $1.offset })
        }
        #expect(Fingerprint.windows(size: Fingerprint.sizeMax + 1).isEmpty)
    }

    /// Windows that are not the ones named (a short read), or a size past the bound: refused.
    @Test func windowsThatDiffer_orASizePastTheBound_areRefused() {
        #expect(throws: Fingerprint.Refusal.windowsDiffer) { try Fingerprint(size: 10, windows: [[1, 2, 3]]) }
        #expect(throws: Fingerprint.Refusal.windowsDiffer) { try Fingerprint(size: 0, windows: [[]]) }
        #expect(throws: Fingerprint.Refusal.tooLarge(Fingerprint.sizeMax + 1)) {
            try Fingerprint(size: Fingerprint.sizeMax + 1, windows: [])
        }
    }

    /// A fingerprint's text from the network: only `v1-SIZE-HEX` with a size within the bound and
    /// 64 hex digits is read; nothing traps.
    @Test func hostileTexts_areRefusedWithoutATrap() {
        let hex = String(repeating: "ab", count: 32)
        #expect(Fingerprint(text: "v1-123-\(hex)")?.size == 123)
        #expect(Fingerprint(text: "v1-\(Fingerprint.sizeMax)-\(hex)")?.size == Fingerprint.sizeMax)
        for text in [
            "", "v1", "v1--\(hex)", "v2-1-\(hex)", "v1-1-\(hex)00", "v1-1-\(hex.dropLast())", "v1-1-\(hex)-",
            "v1-+1-\(hex)", "v1--1-\(hex)", "v1-\(Fingerprint.sizeMax + 1)-\(hex)", "v1-18446744073709551616-\(hex)",
            "v1-99999999999999999-\(hex)", "v1-1-" + String(repeating: "zz", count: 32), "v1-1-\(hex)\u{0}",
            "v1-١-\(hex)",
        ] {
            #expect(Fingerprint(text: text) == nil, "\(text)")
        }
    }
}

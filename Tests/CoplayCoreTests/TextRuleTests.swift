import Testing

@testable import CoplayCore

/// The core's own text rules (`Text.swift`) against the standard library's, every scalar.
@Suite struct TextRuleTests {
    @Test func whiteSpaceIsTheStandardLibrarysForEveryScalar() {
        var differing: [UInt32] = []
        for value in UInt32(0)...0x10_FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let character = Character(scalar)
            if character.isWhiteSpace != character.isWhitespace { differing.append(value) }
        }
        #expect(differing.isEmpty, "differ at \(differing.prefix(10).map { String($0, radix: 16) })")
        // A character is white space by its first scalar, as the standard library has it.
        #expect(Character(" \u{301}").isWhiteSpace == Character(" \u{301}").isWhitespace)
    }

    @Test func asciiLowercasingLowersOnlyASCII() {
        #expect("PaUsE".asciiLowercased == "pause")
        #expect("SEE\u{212A}".asciiLowercased == "see\u{212A}")  // the Kelvin sign stays: no 'seek'
        #expect("ÉCLAIR".asciiLowercased == "Éclair")
        if case .success(let command) = ConsoleCommand.parse("PAUSE") {
            #expect(command == .pause)
        } else {
            Issue.record("PAUSE did not parse")
        }
    }
}

/// Two text rules the core applies to what people type, written here rather than taken from the
/// standard library's Unicode tables: in the browser's module (Embedded Swift) those tables are
/// linked as data, and these two alone brought 40 KB of scalar properties and case mappings.
extension Character {
    /// `isWhitespace` exactly: whether the first scalar has Unicode's White_Space property. The
    /// property's 25 code points (PropList.txt; unchanged since Unicode 6.3).
    var isWhiteSpace: Bool {
        switch unicodeScalars.first?.value ?? 0 {
        case 0x09...0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000: true
        default: false
        }
    }
}

extension StringProtocol {
    /// A-Z as a-z, every other byte as it is: command names, verbs and hexadecimal ids are ASCII,
    /// and a word that is not cannot become one of them (full case mapping would make the Kelvin
    /// sign a 'k').
    var asciiLowercased: String {
        String(decoding: utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}

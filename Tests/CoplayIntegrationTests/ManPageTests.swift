import CoplayHarness
import Foundation
import Testing

/// coplay(1) (`Tools/coplay.1`) against the binary: every option `coplay --help` prints is in the
/// man page and the other way round, and man renders it without a warning.
@Suite struct ManPageTests {
    static let page =
        (try? String(contentsOf: packageRoot.appendingPathComponent("Tools/coplay.1"), encoding: .utf8)) ?? ""

    /// The `--flags` a text names (roff's `\-` read as `-`), less mpv's and systemctl's own.
    static func flags(in text: String) -> Set<String> {
        let plain = text.replacingOccurrences(of: "\\-", with: "-")
        let pattern = try! NSRegularExpression(pattern: "--[a-z][a-z-]*[a-z]")
        let range = NSRange(plain.startIndex..., in: plain)
        let found = pattern.matches(in: plain, range: range).compactMap {
            Range($0.range, in: plain).map { String(plain[$0]) }
        }
        return Set(found).subtracting(["--input-ipc-server", "--user", "--now"])
    }

    @Test func everyOptionOfHelpIsInTheManPage_andNothingElse() throws {
        let (status, help) = try Locations.run(coplay, ["--help"])
        #expect(status == 0)
        let (inHelp, inPage) = (Self.flags(in: help), Self.flags(in: Self.page))
        #expect(inHelp.count > 20, "\(inHelp.sorted())")
        #expect(
            inHelp.subtracting(inPage).isEmpty, "in --help, not in coplay(1): \(inHelp.subtracting(inPage).sorted())")
        #expect(
            inPage.subtracting(inHelp).isEmpty, "in coplay(1), not in --help: \(inPage.subtracting(inHelp).sorted())")
        // The version the page names is the one coplay prints.
        let (_, version) = try Locations.run(coplay, ["--version"])
        let number = try #require(version.split(separator: " ").dropFirst().first)
        #expect(Self.page.contains("\"coplay \(number)\""), "coplay(1) is for \(number)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/man"), "needs man"))
    func manRendersThePage_withoutAWarning() throws {
        let path = packageRoot.appendingPathComponent("Tools/coplay.1").path
        let (status, output) = try Locations.run(
            "/usr/bin/man", ["--warnings", "-l", path], environment: ["MANWIDTH": "80"])
        #expect(status == 0)
        #expect(output.contains("SYNOPSIS") && output.contains("EXIT STATUS"))
        #expect(!output.contains("warning"), "\(output.split(separator: "\n").filter { $0.contains("warning") })")
    }
}

import CoplayCore
import CoplayHarness
import CoplayRuntime
import Foundation
import Testing

/// Tools/coplay.bash-completion reads its words from the coplay it completes (`coplay --help`),
/// so it offers exactly the subcommands and standard-input commands `help` knows, and the
/// options `--help` lists: checked here against the tables `help` prints from.
@Suite struct CompletionTests {
    /// What bash completes for the words `typed`, the last one being completed.
    static func completions(_ typed: [String]) throws -> Set<String> {
        let script = packageRoot.appendingPathComponent("Tools/coplay.bash-completion").path
        let words = typed.map { "'\($0)'" }.joined(separator: " ")
        let folder = URL(fileURLWithPath: coplay).deletingLastPathComponent().path
        let (status, output) = try Locations.run(
            "/bin/bash",
            [
                "-c",
                "source '\(script)'; PATH='\(folder)':$PATH; COMP_WORDS=(\(words)); COMP_CWORD=\(typed.count - 1); _coplay; printf '%s\\n' \"${COMPREPLY[@]}\"",
            ])
        try #require(status == 0, "\(output)")
        return Set(output.split(separator: "\n").map(String.init))
    }

    @Test func subcommandsAndHelpTopics_areTheOnesHelpKnows() throws {
        let subcommands = Set(CommandLineOptions.subcommandUsages.map(\.name)).union(["help"])
        let commands = Set(ConsoleCommand.usages.map(\.name))
        #expect(try Self.completions(["coplay", ""]) == subcommands)
        #expect(try Self.completions(["coplay", "help", ""]) == subcommands.union(commands))
        #expect(
            try Self.completions(["coplay", "ctl", "/run/coplay.sock", ""]) == commands.union(["--follow", "--watch"]))
    }

    @Test func optionsAreTheOnesHelpLists() throws {
        let (_, help) = try Locations.run(coplay, ["--help"])
        let listed = Set(
            help.split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("  --") else { return nil }
                return String(line.dropFirst(2).prefix { $0 != " " })
            })
        #expect(listed.count >= 19, "\(listed)")
        #expect(try Self.completions(["coplay", "--"]) == listed.union(["--help", "--version"]))
    }
}

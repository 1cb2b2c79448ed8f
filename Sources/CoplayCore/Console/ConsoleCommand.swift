/// A command typed on an agent's standard input, one per line.
public enum ConsoleCommand: Hashable, Sendable {
    /// Print this agent's status event.
    case status
    /// Print the participant table.
    case peers
    /// Print the command list.
    case help
    /// Leave gracefully and exit.
    case quit
    /// Leave the session; the agent keeps running and may `join` again.
    case leave
    /// Join the session again, as a new incarnation.
    case join

    /// How a command is typed and what it does, for `help` and for error messages.
    public struct Usage: Hashable, Sendable {
        public var name: String
        public var synopsis: String
        public var summary: String
    }

    public static let usages: [Usage] = [
        Usage(name: "status", synopsis: "status", summary: "this agent's id, session, state, item, rate and position"),
        Usage(
            name: "peers", synopsis: "peers", summary: "the participants, their state, clock offset and last-seen age"),
        Usage(name: "leave", synopsis: "leave", summary: "leave the session (the agent keeps running)"),
        Usage(name: "join", synopsis: "join", summary: "join the session again as a new incarnation"),
        Usage(name: "help", synopsis: "help", summary: "this list"),
        Usage(name: "quit", synopsis: "quit", summary: "leave and exit (end of input does the same)"),
    ]

    private static let argumentless: [String: ConsoleCommand] = [
        "status": .status, "peers": .peers, "help": .help, "quit": .quit, "leave": .leave, "join": .join,
    ]

    /// A line that is not a valid command: what is wrong, and how the command is typed.
    public struct ParseError: Error, Hashable, Sendable {
        public var message: String
        public var usage: String
        public init(message: String, usage: String) {
            self.message = message
            self.usage = usage
        }
    }

    /// Parses one line. Blank lines and lines starting with `#` are no command (nil).
    public static func parse(_ line: String, lineBytesMax: Int = 4096) -> Result<ConsoleCommand?, ParseError> {
        let allUsages = usages.map(\.synopsis).joined(separator: " | ")
        guard line.utf8.count <= lineBytesMax else {
            return .failure(
                ParseError(message: "line of \(line.utf8.count) bytes exceeds \(lineBytesMax)", usage: allUsages))
        }
        let words = line.split(whereSeparator: \.isWhitespace)
        guard let first = words.first, !first.hasPrefix("#") else { return .success(nil) }
        let name = first.lowercased()
        guard let usage = usages.first(where: { $0.name == name }) else {
            let shown = first.count > 40 ? first.prefix(40) + "…" : first
            return .failure(
                ParseError(message: "unknown command '\(shown)' (type 'help' for the list)", usage: allUsages))
        }
        guard words.count == 1 else {
            return .failure(ParseError(message: "'\(name)' takes no arguments", usage: usage.synopsis))
        }
        guard let command = argumentless[name] else {
            preconditionFailure("'\(name)' has a usage but no parser")
        }
        return .success(command)
    }
}

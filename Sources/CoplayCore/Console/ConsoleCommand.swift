/// A command typed on an agent's standard input, one per line.
public enum ConsoleCommand: Hashable, Sendable {
    /// Print this agent's status event.
    case status
    /// Print the participant table.
    case peers
    /// Print the command list.
    /// The list of commands, or one command's usage, rules and example.
    case help(topic: String?)
    /// Leave gracefully and exit.
    case quit
    /// Leave the session; the agent keeps running and may `join` again.
    case leave
    /// Join the session again, as a new incarnation.
    case join
    /// End the session for everyone.
    case end(reason: String)
    /// Make an item current on this agent only.
    case load(LoadedItem)
    /// Propose an activity to the group (and load it here with these local settings).
    case share(Activity, durationSeconds: Double?, bufferSeconds: Double)
    /// Coordinated start at `rate`.
    case play(rate: Double)
    /// Start at once at `rate`, without waiting for the others.
    case playNow(rate: Double)
    case pause
    /// Coordinated seek to a position in seconds.
    case seek(seconds: Double)
    /// Change the playback rate (0 pauses).
    case rate(Double)
    /// Make the simulated player stall for a number of seconds.
    case stall(seconds: Double)
    /// Begin a suspension for a reason (built-in or custom).
    case suspend(reason: String)
    /// End a suspension; optionally propose a time to the group.
    case resume(id: UInt32, at: Double?)
    /// Rewind, play at 2x until caught up with the group, rejoin.
    case whatHappened(seconds: Double)
    /// Send an app message to everyone (nil) or to the named participants.
    case message(to: [String]?, unreliable: Bool, text: String)
    /// Show or change the group's queue.
    case queue(QueueRequest)
    /// Move the whole group to the next entry of the queue (or the previous one).
    case next
    case previous
    /// Play an interstitial at a main-item time (`at`, nil: now), for the whole group or for this
    /// participant only.
    case interstitial(url: String, durationSeconds: Double, at: Double?, forAll: Bool)

    /// What `queue …` asks.
    public enum QueueRequest: Hashable, Sendable {
        /// `queue`: print the queue.
        case show
        /// `queue add URL [id=ID] [title=T] [duration=S] [after=ID|first|last]`.
        case add(url: String, id: String?, title: String, durationSeconds: Double?, after: QueueAnchor)
        case remove(id: String)
        case move(id: String, after: QueueAnchor)
        case clear
    }

    /// A line that is not a valid command: what is wrong, and how the command is typed.
    public struct ParseError: Error, Hashable, Sendable {
        public var message: String
        public var usage: String
        public init(message: String, usage: String) {
            self.message = message
            self.usage = usage
        }
    }

    /// Parses one line. Blank lines and lines starting with `#` are no command (nil). Words are
    /// separated by spaces; double quotes keep spaces inside a word (`title="Big Buck Bunny"`).
    public static func parse(_ line: String, lineBytesMax: Int = 4096) -> Result<ConsoleCommand?, ParseError> {
        let allUsages = usages.map({ $0.name }).joined(separator: " | ")
        guard line.utf8.count <= lineBytesMax else {
            return .failure(
                ParseError(message: "line of \(line.utf8.count) bytes exceeds \(lineBytesMax)", usage: allUsages))
        }
        let tokens: [Token]
        switch tokenize(line) {
        case .success(let result): tokens = result
        case .failure(let error): return .failure(ParseError(message: error.message, usage: allUsages))
        }
        let words = tokens.map({ $0.word })
        guard let first = words.first, !first.hasPrefix("#") else { return .success(nil) }
        let name = first.asciiLowercased
        guard let usage = usages.first(where: { $0.name == name }) else {
            let shown = first.count > 40 ? first.prefix(40) + "…" : Substring(first)
            return .failure(
                ParseError(message: "unknown command '\(shown)' (type 'help' for the list)", usage: allUsages))
        }
        do throws(ParseError) {
            return .success(
                try command(name, arguments: Array(tokens.dropFirst()), line: line, usage: usage.synopsis))
        } catch {
            return .failure(error)
        }
    }

    /// `tokens` are the words after the command's name; `line` is the whole line, for the
    /// arguments taken byte for byte as typed (a URL, a message's text).
    private static func command(_ name: String, arguments tokens: [Token], line: String, usage: String)
        throws(ParseError) -> ConsoleCommand
    {
        let arguments = tokens.map({ $0.word })
        func fail(_ message: String) -> ParseError { ParseError(message: message, usage: usage) }
        func noArguments(_ command: ConsoleCommand) throws(ParseError) -> ConsoleCommand {
            guard arguments.isEmpty else { throw fail("'\(name)' takes no arguments") }
            return command
        }
        func number(_ text: String, _ what: String, in range: ClosedRange<Double>) throws(ParseError) -> Double {
            guard let value = Double(text), value.isFinite, range.contains(value) else {
                throw fail(
                    "\(what) must be a number from \(format(range.lowerBound)) to \(format(range.upperBound)), not '\(text)'"
                )
            }
            return value
        }
        func optionalRate() throws(ParseError) -> Double {
            guard arguments.count <= 1 else { throw fail("'\(name)' takes at most one argument, the rate") }
            guard let text = arguments.first else { return 1 }
            let rate = try number(text, "the rate", in: 0...WireFormat.rateMax)
            guard rate > 0 else { throw fail("the rate must be above 0 (use pause to stop)") }
            guard rate >= WireFormat.rateMin else {
                throw fail("the rate must be at least \(format(WireFormat.rateMin)) (use pause to stop)")
            }
            return rate
        }
        func oneNumber(_ what: String, in range: ClosedRange<Double>) throws(ParseError) -> Double {
            guard arguments.count == 1 else { throw fail("'\(name)' takes exactly one argument, \(what)") }
            return try number(arguments[0], what, in: range)
        }
        switch name {
        case "status": return try noArguments(.status)
        case "peers": return try noArguments(.peers)
        case "help":
            guard arguments.count <= 1 else { throw fail("'help' takes at most one command name") }
            guard let topic = arguments.first?.asciiLowercased else { return .help(topic: nil) }
            guard usages.contains(where: { $0.name == topic }) else {
                throw fail("no command '\(topic.prefix(40))' (type 'help' for the list)")
            }
            return .help(topic: topic)
        case "quit": return try noArguments(.quit)
        case "leave": return try noArguments(.leave)
        case "join": return try noArguments(.join)
        case "pause": return try noArguments(.pause)
        case "next": return try noArguments(.next)
        case "previous": return try noArguments(.previous)
        case "queue": return .queue(try queueRequest(tokens, line: line, fail: fail))
        case "interstitial":
            let keys = ["duration", "at", "for"]
            let url = try firstURL(tokens, line: line, options: keys, command: name, fail: fail)
            let options = try keyValues(arguments.dropFirst(), allowed: keys, fail: fail)
            guard let durationText = options["duration"] else {
                throw fail("'interstitial' needs duration=<seconds> (how long the main item waits)")
            }
            let duration = try number(durationText, "duration", in: 0.001...Interstitial.durationMax)
            let at = try options["at"].map { text throws(ParseError) in
                try number(text, "at", in: 0...WireFormat.positionMax)
            }
            let forAll: Bool
            switch options["for"] ?? "all" {
            case "all": forAll = true
            case "me": forAll = false
            case let other: throw fail("for= takes all or me, not '\(other)'")
            }
            return .interstitial(url: url, durationSeconds: duration, at: at, forAll: forAll)
        case "end":
            let reason = arguments.joined(separator: " ")
            guard reason.utf8.count <= WireFormat.endReasonBytesMax else {
                throw fail("the reason is longer than \(WireFormat.endReasonBytesMax) bytes")
            }
            return .end(reason: reason)
        case "play": return .play(rate: try optionalRate())
        case "play-now": return .playNow(rate: try optionalRate())
        case "seek": return .seek(seconds: try oneNumber("the position in seconds", in: 0...WireFormat.positionMax))
        case "rate":
            let rate = try oneNumber("the rate", in: 0...WireFormat.rateMax)
            guard rate == 0 || rate >= WireFormat.rateMin else {
                throw fail("the rate must be 0 (pause) or at least \(format(WireFormat.rateMin))")
            }
            return .rate(rate)
        case "stall": return .stall(seconds: try oneNumber("the stall in seconds", in: 0...3600))
        case "suspend":
            let reason = arguments.joined(separator: " ")
            guard !reason.isEmpty, reason.utf8.count <= Announcement.suspensionReasonBytesMax else {
                throw fail(
                    "'suspend' needs a reason of 1 to \(Announcement.suspensionReasonBytesMax) bytes (e.g. \(Suspension.builtInReasons[4]))"
                )
            }
            return .suspend(reason: reason)
        case "resume":
            guard (1...2).contains(arguments.count), let id = UInt32(arguments[0]) else {
                throw fail("'resume' needs the suspension's id (printed by suspend)")
            }
            var at: Double?
            if arguments.count == 2 {
                guard arguments[1].hasPrefix("at=") else { throw fail("'\(arguments[1])' is not at=<seconds>") }
                at = try number(String(arguments[1].dropFirst(3)), "the proposed time", in: 0...WireFormat.positionMax)
            }
            return .resume(id: id, at: at)
        case "msg":
            var words = tokens[...]
            var to: [String]?
            var unreliable = false
            while let word = words.first?.word, word.hasPrefix("to=") || word == "unreliable" {
                words.removeFirst()
                if word == "unreliable" {
                    unreliable = true
                } else {
                    guard to == nil else { throw fail("to= given twice") }
                    let names = word.dropFirst(3).split(separator: ",").map(String.init)
                    guard !names.isEmpty else { throw fail("to= needs names or ids, separated by commas") }
                    to = names
                }
            }
            // The text is the rest of the line exactly as typed: quotes, spaces and all.
            guard let first = words.first else { throw fail("'msg' needs the text to send") }
            let text = String(line[first.raw.lowerBound...])
            return .message(to: to, unreliable: unreliable, text: text)
        case "what-happened":
            guard arguments.count <= 1 else {
                throw fail("'what-happened' takes at most one argument, the seconds to rewind")
            }
            return .whatHappened(
                seconds: try arguments.first.map { text throws(ParseError) in
                    try number(text, "the seconds to rewind", in: 0.1...3600)
                } ?? 10)
        case "load", "share":
            let allowed =
                name == "load"
                ? ["id", "duration", "buffer"] : ["id", "title", "subtitle", "type", "fallback", "duration", "buffer"]
            var url = try firstURL(tokens, line: line, options: allowed, command: name, fail: fail)
            // `live` (share only) is a word of its own, not key=value.
            let options = try keyValues(
                arguments.dropFirst(), allowed: allowed, flag: name == "share" ? "live" : nil, fail: fail)
            let live = options["live"] != nil
            var id = options["id"]
            if id == nil, let named = contentNamed(url) { (url, id) = (named.url, named.fingerprint.text) }
            if let id, id.isEmpty || id.utf8.count > WireFormat.itemIDBytesMax {
                throw fail("the item id must be 1 to \(WireFormat.itemIDBytesMax) bytes")
            }
            if id == nil { try urlServesAsID(url, fail: fail) }
            for key in ["title", "subtitle", "type"] where (options[key]?.utf8.count ?? 0) > WireFormat.metadataBytesMax
            {
                throw fail("\(key) is longer than \(WireFormat.metadataBytesMax) bytes")
            }
            if (options["fallback"]?.utf8.count ?? 0) > WireFormat.urlBytesMax {
                throw fail("the fallback URL is longer than \(WireFormat.urlBytesMax) bytes")
            }
            let duration = try options["duration"].map { text throws(ParseError) in
                try number(text, "duration", in: 0.001...WireFormat.positionMax)
            }
            if live, duration != nil { throw fail("a live item has no duration") }
            let buffer =
                try options["buffer"].map { text throws(ParseError) in try number(text, "buffer", in: 0...60) } ?? 0
            if name == "load" {
                return .load(LoadedItem(id: id, url: url, durationSeconds: duration, bufferSeconds: buffer))
            }
            let activity = Activity(
                url: url, itemID: id, title: options["title"] ?? "", subtitle: options["subtitle"] ?? "",
                type: options["type"] ?? "", fallbackURL: options["fallback"] ?? "", durationSeconds: duration,
                live: live)
            return .share(activity, durationSeconds: duration, bufferSeconds: buffer)
        default:
            preconditionFailure("'\(name)' has a usage but no parser")
        }
    }

    /// The words after `queue`.
    private static func queueRequest(
        _ tokens: [Token], line: String, fail: (String) -> ParseError
    ) throws(ParseError) -> QueueRequest {
        let arguments = tokens.map({ $0.word })
        guard let verb = arguments.first?.asciiLowercased else { return .show }
        func entryID(_ text: String) throws(ParseError) -> String {
            guard !text.isEmpty, text.utf8.count <= WireFormat.itemIDBytesMax, !text.contains("=") else {
                throw fail("an entry id is 1 to \(WireFormat.itemIDBytesMax) bytes without '=', not '\(text)'")
            }
            return text
        }
        func anchor(_ text: String) throws(ParseError) -> QueueAnchor {
            switch text {
            case "first": return .first
            case "last": return .last
            default: return .after(try entryID(text))
            }
        }
        switch verb {
        case "add":
            let keys = ["id", "title", "duration", "after"]
            var url = try firstURL(
                Array(tokens.dropFirst()), line: line, options: keys, command: "queue add", fail: fail)
            let options = try keyValues(arguments.dropFirst(2), allowed: keys, fail: fail)
            var id = try options["id"].map { text throws(ParseError) in try entryID(text) }
            if id == nil, let named = contentNamed(url) { (url, id) = (named.url, named.fingerprint.text) }
            let title = options["title"] ?? ""
            guard title.utf8.count <= WireFormat.metadataBytesMax else {
                throw fail("title is longer than \(WireFormat.metadataBytesMax) bytes")
            }
            var duration: Double?
            if let text = options["duration"] {
                guard let value = Double(text), value.isFinite, value >= 0.001, value <= WireFormat.positionMax else {
                    throw fail("duration must be a number of seconds from 0.001, not '\(text)'")
                }
                duration = value
            }
            let after = try options["after"].map { text throws(ParseError) in try anchor(text) } ?? .last
            return .add(url: url, id: id, title: title, durationSeconds: duration, after: after)
        case "remove":
            guard arguments.count == 2 else { throw fail("'queue remove' takes the entry's id") }
            return .remove(id: try entryID(arguments[1]))
        case "move":
            guard arguments.count == 3, arguments[2].hasPrefix("after=") else {
                throw fail("'queue move' takes the entry's id and after=<id>|first|last")
            }
            return .move(id: try entryID(arguments[1]), after: try anchor(String(arguments[2].dropFirst(6))))
        case "clear":
            guard arguments.count == 1 else { throw fail("'queue clear' takes no arguments") }
            return .clear
        default:
            throw fail("'queue \(verb)': the queue takes add, remove, move or clear (or nothing, to show it)")
        }
    }

    /// The URL that is the first of `tokens`, every byte as typed (signed CDN URLs are full of
    /// '='); only a word wholly in double quotes (a URL with spaces) loses its quotes.
    private static func firstURL(
        _ tokens: [Token], line: String, options: [String], command: String, fail: (String) -> ParseError
    ) throws(ParseError) -> String {
        guard let first = tokens.first, !options.contains(where: { first.word.hasPrefix($0 + "=") }) else {
            throw fail("'\(command)' needs the item's URL first")
        }
        let raw = line[first.raw]
        let url =
            raw.count >= 2 && raw.hasPrefix("\"") && raw.hasSuffix("\"")
                && !raw.dropFirst().dropLast().contains("\"")
            ? first.word : String(raw)
        try urlFits(url, fail: fail)
        return url
    }

    private static func urlFits(_ url: String, fail: (String) -> ParseError) throws(ParseError) {
        guard url.utf8.count <= WireFormat.urlBytesMax else {
            throw fail("the URL is longer than \(WireFormat.urlBytesMax) bytes")
        }
    }

    /// A URL that names its film's fingerprint in its fragment (`https://…/film.mkv#v1-SIZE-HEX`,
    /// as `coplay hub --media` lists its films): the URL without the fragment, and the
    /// fingerprint, which is then the item's id. Whoever serves a film can read its windows; a
    /// participant given only its URL cannot always (an agent speaks no TLS), and a fragment never
    /// reaches the server. Nil for any other URL, or a fragment that is not a fingerprint.
    public static func contentNamed(_ url: String) -> (url: String, fingerprint: Fingerprint)? {
        guard url.hasPrefix("https://") || url.hasPrefix("http://"), let hash = url.lastIndex(of: "#"),
            let fingerprint = Fingerprint(text: String(url[url.index(after: hash)...]))
        else { return nil }
        return (String(url[..<hash]), fingerprint)
    }

    /// An item shared without an id is named by its URL, which must then fit an id.
    private static func urlServesAsID(_ url: String, fail: (String) -> ParseError) throws(ParseError) {
        guard url.utf8.count <= WireFormat.itemIDBytesMax else {
            throw fail("a URL longer than \(WireFormat.itemIDBytesMax) bytes needs a short id=…")
        }
    }

    // MARK: Commands a shell builds itself

    /// `share URL`, built by a shell that offers no console (the page's form, an app's button),
    /// with the checks the parser makes: the URL as the person gave it, spaces and `=` its own.
    public static func sharing(url: String) throws(ParseError) -> ConsoleCommand {
        let usage = usages.first { $0.name == "share" }?.synopsis ?? "share"
        func fail(_ message: String) -> ParseError { ParseError(message: message, usage: usage) }
        guard !url.isEmpty else { throw fail("'share' needs the item's URL first") }
        try urlFits(url, fail: fail)
        try urlServesAsID(url, fail: fail)
        let activity = Activity(
            url: url, itemID: nil, title: "", subtitle: "", type: "", fallbackURL: "", durationSeconds: nil, live: false
        )
        return .share(activity, durationSeconds: nil, bufferSeconds: 0)
    }

    /// `queue add URL` (at the end), built by a shell that offers no console, as `sharing(url:)`.
    public static func queueAdding(url: String) throws(ParseError) -> ConsoleCommand {
        let usage = usages.first { $0.name == "queue" }?.synopsis ?? "queue"
        func fail(_ message: String) -> ParseError { ParseError(message: message, usage: usage) }
        guard !url.isEmpty else { throw fail("'queue add' needs the item's URL first") }
        try urlFits(url, fail: fail)
        return .queue(.add(url: url, id: nil, title: "", durationSeconds: nil, after: .last))
    }

    /// `key=value` words, each key `allowed` and given once; `flag`, a word allowed on its own
    /// (its key, with an empty value).
    private static func keyValues(
        _ words: ArraySlice<String>, allowed: [String], flag: String? = nil, fail: (String) -> ParseError
    ) throws(ParseError) -> [String: String] {
        var options: [String: String] = [:]
        for argument in words {
            if argument == flag {
                options[argument] = ""
                continue
            }
            guard let equals = argument.firstIndex(of: "=") else { throw fail("'\(argument)' is not key=value") }
            let key = String(argument[..<equals])
            guard allowed.contains(key) else {
                throw fail("unknown option '\(key)' (\(allowed.joined(separator: ", ")))")
            }
            guard options[key] == nil else { throw fail("'\(key)' given twice") }
            options[key] = String(argument[argument.index(after: equals)...])
        }
        return options
    }

    private struct TokenError: Error {
        var message: String
    }

    /// One word of a line: as read (quotes removed) and where it stands in the line, as typed.
    private struct Token {
        var word: String
        var raw: Range<String.Index>
    }

    /// Splits on white space; a double-quoted stretch (anywhere in a word) keeps its spaces.
    private static func tokenize(_ line: String) -> Result<[Token], TokenError> {
        var tokens: [Token] = []
        var current = ""
        var inQuotes = false
        var start: String.Index?
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if character == "\"" {
                inQuotes.toggle()
                start = start ?? index
            } else if character.isWhiteSpace && !inQuotes {
                if let begun = start { tokens.append(Token(word: current, raw: begun..<index)) }
                current = ""
                start = nil
            } else {
                current.append(character)
                start = start ?? index
            }
            index = line.index(after: index)
        }
        guard !inQuotes else { return .failure(TokenError(message: "unclosed double quote")) }
        if let begun = start { tokens.append(Token(word: current, raw: begun..<line.endIndex)) }
        return .success(tokens)
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

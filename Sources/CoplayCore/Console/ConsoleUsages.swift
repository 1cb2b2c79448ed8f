/// How each console command is typed and what it does: `help`, `help COMMAND`, and the usage
/// in a command's error.
extension ConsoleCommand {
    /// How a command is typed and what it does, for `help` and for error messages.
    public struct Usage: Hashable, Sendable {
        public var name: String
        public var synopsis: String
        public var summary: String
        /// A valid line, for help and for the parser's tests.
        public var example: String
        /// The rules a person needs beyond the summary (`help COMMAND` prints them).
        public var details: String = ""
    }

    public static let usages: [Usage] = [
        Usage(
            name: "share",
            synopsis:
                "share <url> [id=<item-id>] [title=…] [subtitle=…] [type=…] [fallback=<url>] [duration=<s>] [buffer=<s>] [live]",
            summary: "propose an item to the group; every agent loads it",
            example: "share https://example.com/bbb.mp4 id=bbb title=\"Big Buck Bunny\" duration=596",
            details: """
                A live HLS stream's time is its program date: a late joiner starts where the \
                group is. `live` marks one a player cannot tell is live.
                """),
        Usage(
            name: "load", synopsis: "load <url> [id=<item-id>] [duration=<s>] [buffer=<s>]",
            summary: "make an item current on this agent only", example: "load file:///movies/bbb.mp4 id=bbb buffer=0.5"
        ),
        Usage(
            name: "queue",
            synopsis:
                "queue [add <url> [id=<id>] [title=…] [duration=<s>] [after=<id>|first|last] | remove <id> | move <id> after=<id>|first|last | clear]",
            summary: "show the group's queue, or add, remove, move or clear its entries",
            example: "queue add https://example.com/ep2.mp4 id=ep2 title=\"Episode 2\" after=ep1",
            details: """
                Everyone sees the same entries in the same order; edits made at once on several \
                agents all stay. The first entry added to an empty queue, while the group watches \
                nothing, becomes the group's item (paused at 0:00); added while an item is shared, \
                entries wait for next. When an entry ends, the group moves to the one after it, \
                playing if it was.
                """),
        Usage(
            name: "next", synopsis: "next",
            summary: "move the whole group to the queue's next entry (playing on if it was)",
            example: "next",
            details: """
                From a shared item that is not in the queue, next moves the group to the queue's \
                first entry. The group plays the entry if it was playing, and stays paused at 0:00 \
                if it was paused.
                """),
        Usage(
            name: "previous", synopsis: "previous",
            summary: "move the whole group to the queue's previous entry (playing on if it was)", example: "previous"),
        Usage(
            name: "interstitial", synopsis: "interstitial <url> duration=<s> [at=<seconds>] [for=all|me]",
            summary:
                "play an ad or intro in a second player, now or when the item reaches at=; for=all (the default) holds the group until all have played it",
            example: "interstitial https://example.com/intro.mp4 duration=12 at=0 for=all"),
        Usage(
            name: "play", synopsis: "play [rate]", summary: "coordinated start: everyone waits until all are ready",
            example: "play 1.5"),
        Usage(
            name: "play-now", synopsis: "play-now [rate]", summary: "start at once, without waiting",
            example: "play-now"),
        Usage(name: "pause", synopsis: "pause", summary: "pause everyone at this agent's position", example: "pause"),
        Usage(name: "seek", synopsis: "seek <seconds>", summary: "coordinated seek", example: "seek 90"),
        Usage(name: "rate", synopsis: "rate <r>", summary: "change the playback rate (0 pauses)", example: "rate 2"),
        Usage(
            name: "stall", synopsis: "stall <seconds>", summary: "make the simulated player stall", example: "stall 2.5"
        ),
        Usage(
            name: "msg", synopsis: "msg [to=<name|id>,…] [unreliable] <text>",
            summary: "send a message to everyone (or to some); reliable unless unreliable",
            example: "msg to=bob,carol \"pizza is here\""),
        Usage(
            name: "suspend", synopsis: "suspend <reason>",
            summary: "leave the group's playback for a while (built-in or custom reason); prints the id",
            example: "suspend userActionRequired"),
        Usage(
            name: "resume", synopsis: "resume <id> [at=<seconds>]",
            summary: "end a suspension; after the last, snap to the group (or propose a time)",
            example: "resume 1 at=42"),
        Usage(
            name: "what-happened", synopsis: "what-happened [seconds]",
            summary: "rewind (default 10 s), play at 2x until caught up, rejoin", example: "what-happened 5"),
        Usage(
            name: "status", synopsis: "status", summary: "this agent's id, session, state, item, rate and position",
            example: "status"),
        Usage(
            name: "peers", synopsis: "peers",
            summary: "the participants, their state, item, clock offset and last-seen age", example: "peers"),
        Usage(
            name: "leave", synopsis: "leave", summary: "leave the session (the agent keeps running)", example: "leave"),
        Usage(name: "join", synopsis: "join", summary: "join the session again as a new incarnation", example: "join"),
        Usage(
            name: "end", synopsis: "end [reason]", summary: "end the session for everyone", example: "end movie over"),
        Usage(
            name: "help", synopsis: "help [command]", summary: "the commands, or one command's usage and rules",
            example: "help queue"),
        Usage(name: "quit", synopsis: "quit", summary: "leave and exit (end of input does the same)", example: "quit"),
    ]
}

import CoplayCore
import Testing

@Suite struct ConsoleCommandTests {
    @Test func everyListedCommand_parses() throws {
        for usage in ConsoleCommand.usages {
            let parsed = try ConsoleCommand.parse(usage.example).get()
            #expect(parsed != nil, "\(usage.name)")
        }
        #expect(try ConsoleCommand.parse("  STATUS  ").get() == .status)
    }

    /// `end` without a reason ends the session without inventing one: the event says who ended
    /// it (it said "ended by vm: ended").
    @Test func endWithoutAReason_saysOnlyWhoEndedIt() throws {
        #expect(try ConsoleCommand.parse("end").get() == .end(reason: ""))
        #expect(try ConsoleCommand.parse("end movie over").get() == .end(reason: "movie over"))
        #expect(InvalidationReason.ended(by: "vm", reason: "").description == "ended by vm")
        #expect(InvalidationReason.ended(by: "vm", reason: "movie over").description == "ended by vm: movie over")
    }

    @Test func blankAndCommentLines_areNoCommand() throws {
        #expect(try ConsoleCommand.parse("").get() == nil)
        #expect(try ConsoleCommand.parse("   \t ").get() == nil)
        #expect(try ConsoleCommand.parse("# a note").get() == nil)
    }

    @Test func unknownCommand_namesItAndListsTheUsage() {
        guard case .failure(let error) = ConsoleCommand.parse("frobnicate now") else {
            Issue.record("accepted an unknown command")
            return
        }
        #expect(error.message.contains("unknown command 'frobnicate'"))
        #expect(error.usage.contains("status") && error.usage.contains("quit"))
    }

    @Test func argumentsToAnArgumentlessCommand_areAnError() {
        guard case .failure(let error) = ConsoleCommand.parse("peers all") else {
            Issue.record("accepted arguments")
            return
        }
        #expect(error.message == "'peers' takes no arguments")
        #expect(error.usage == "peers")
    }

    @Test func overlongLine_isRejectedNotParsed() {
        let line = String(repeating: "x", count: 5000)
        guard case .failure(let error) = ConsoleCommand.parse(line, lineBytesMax: 4096) else {
            Issue.record("accepted an overlong line")
            return
        }
        #expect(error.message.contains("5000 bytes"))
    }

    @Test func msg_takesRecipientsAndReliabilityBeforeTheText() throws {
        #expect(
            try ConsoleCommand.parse("msg hello there").get()
                == .message(to: nil, unreliable: false, text: "hello there"))
        #expect(
            try ConsoleCommand.parse("msg to=bob,carol unreliable \"pizza  is here\"").get()
                == .message(to: ["bob", "carol"], unreliable: true, text: "\"pizza  is here\""))
        guard case .failure(let error) = ConsoleCommand.parse("msg to=bob") else {
            Issue.record("accepted a message without text")
            return
        }
        #expect(error.message == "'msg' needs the text to send")
    }

    @Test func msgText_arrivesByteForByteAsTyped() throws {
        for text in ["a  b   c", "say \"hi\" to=me", "tab\there, = and ünïcode  ", "the word unreliable later is text"]
        {
            #expect(
                try ConsoleCommand.parse("msg to=bob \(text)").get()
                    == .message(to: ["bob"], unreliable: false, text: text),
                "\(text)")
        }
    }

    @Test func shareAndLoad_keepEveryByteOfTheURL_andParseOnlyKnownOptions() throws {
        let signed = "https://cdn.example/v.m3u8?token=abc&sig=x="
        guard case .share(let activity, _, _)? = try ConsoleCommand.parse("share \(signed) id=v title=\"A B\"").get()
        else {
            Issue.record("share with a signed URL was refused")
            return
        }
        #expect(activity.url == signed && activity.itemID == "v" && activity.title == "A B")
        guard case .load(let item)? = try ConsoleCommand.parse("load \(signed) id=v").get() else {
            Issue.record("load with a signed URL was refused")
            return
        }
        #expect(item.url == signed)
        guard
            case .share(let withFallback, _, _)? = try ConsoleCommand.parse(
                "share https://a/x id=x fallback=https://b/y?k=v=w"
            ).get()
        else {
            Issue.record("fallback with '=' refused")
            return
        }
        #expect(withFallback.fallbackURL == "https://b/y?k=v=w")
        guard case .share(let spaced, _, _)? = try ConsoleCommand.parse("share \"file:///my movies/a.mp4\" id=a").get()
        else {
            Issue.record("a quoted URL was refused")
            return
        }
        #expect(spaced.url == "file:///my movies/a.mp4")
        guard case .failure(let error) = ConsoleCommand.parse("share id=x") else {
            Issue.record("accepted a share without a URL")
            return
        }
        #expect(error.message == "'share' needs the item's URL first")
        guard case .failure(let unknown) = ConsoleCommand.parse("share https://a/x colour=red") else {
            Issue.record("accepted an unknown option")
            return
        }
        #expect(unknown.message.contains("unknown option 'colour'"))
    }

    @Test func suspendAndResume_parseTheirArguments() throws {
        #expect(
            try ConsoleCommand.parse("suspend user action required").get() == .suspend(reason: "user action required"))
        #expect(try ConsoleCommand.parse("resume 3 at=42.5").get() == .resume(id: 3, at: 42.5))
        #expect(try ConsoleCommand.parse("what-happened").get() == .whatHappened(seconds: 10))
        guard case .failure = ConsoleCommand.parse("resume three") else {
            Issue.record("accepted a non-numeric id")
            return
        }
    }

    @Test func interstitial_takesItsURLDurationTimeAndAudience() throws {
        #expect(
            try ConsoleCommand.parse("interstitial https://a/ad.mp4?sig=a=b duration=15 at=300 for=me").get()
                == .interstitial(url: "https://a/ad.mp4?sig=a=b", durationSeconds: 15, at: 300, forAll: false))
        #expect(
            try ConsoleCommand.parse("interstitial https://a/intro.mp4 duration=8").get()
                == .interstitial(url: "https://a/intro.mp4", durationSeconds: 8, at: nil, forAll: true))
        for (line, problem) in [
            ("interstitial https://a/ad.mp4", "needs duration="),
            ("interstitial duration=5", "needs the item's URL first"),
            ("interstitial https://a/ad.mp4 duration=0", "duration must be a number"),
            ("interstitial https://a/ad.mp4 duration=4000", "duration must be a number"),
            ("interstitial https://a/ad.mp4 duration=5 for=them", "for= takes all or me"),
            ("interstitial https://a/ad.mp4 duration=5 at=-1", "at must be a number"),
            ("interstitial https://a/ad.mp4 duration=5 when=now", "unknown option 'when'"),
        ] {
            guard case .failure(let error) = ConsoleCommand.parse(line) else {
                Issue.record("accepted '\(line)'")
                continue
            }
            #expect(error.message.contains(problem), "\(line): \(error.message)")
            #expect(error.usage.hasPrefix("interstitial <url> duration="))
        }
    }

    /// The page's forms build their commands (no console there): the URL stays whole where a line
    /// would split it, and what the parser refuses, they refuse with its words.
    @Test func commandsAShellBuilds_keepTheURLWhole_andRefuseAsTheParserDoes() throws {
        let url = "http://192.168.1.10:8080/media/My Film.mp4?note=a b"
        guard case .share(let activity, nil, 0) = try ConsoleCommand.sharing(url: url) else {
            Issue.record("not a share")
            return
        }
        #expect(activity.url == url && activity.itemID == url)
        #expect(
            try ConsoleCommand.queueAdding(url: url)
                == .queue(.add(url: url, id: nil, title: "", durationSeconds: nil, after: .last)))
        // Typed, the same URL is split at its spaces: the words after it are no key=value.
        guard case .failure = ConsoleCommand.parse("share \(url)") else {
            Issue.record("a line kept the spaces of an unquoted URL")
            return
        }
        let long = "http://h/" + String(repeating: "a", count: WireFormat.itemIDBytesMax)
        let tooLong = "http://h/" + String(repeating: "a", count: WireFormat.urlBytesMax)
        for (built, line) in [(long, "share \(long)"), (tooLong, "queue add \(tooLong)")] {
            guard case .failure(let typed) = ConsoleCommand.parse(line) else {
                Issue.record("parsed: \(line.prefix(40))")
                continue
            }
            #expect(throws: typed) {
                try line.hasPrefix("share")
                    ? ConsoleCommand.sharing(url: built) : ConsoleCommand.queueAdding(url: built)
            }
        }
        #expect(throws: ConsoleCommand.ParseError.self) { try ConsoleCommand.sharing(url: "") }
        #expect(throws: ConsoleCommand.ParseError.self) { try ConsoleCommand.queueAdding(url: "") }
    }
}

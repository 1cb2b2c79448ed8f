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
}

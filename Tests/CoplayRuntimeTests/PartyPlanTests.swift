import CoplayCore
import Foundation
import Testing

@testable import CoplayRuntime

/// `coplay party`'s command line: its own options, the agent's options passed through, and
/// what a room cannot watch refused before anything starts.
@Suite struct PartyPlanTests {
    static func plan(_ arguments: [String]) -> Result<PartyPlan, UsageError> {
        switch CommandLineOptions.parse(["party"] + arguments) {
        case .success(.party(let plan)): .success(plan)
        case .success(let other): .failure(UsageError(message: "not a party: \(other)"))
        case .failure(let error): .failure(error)
        }
    }

    static func film() throws -> String {
        let path = NSTemporaryDirectory() + "coplay-party-plan-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).webm"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func filesAndURLs_inOrder_withTheHostWatchingInMpv_byDefault() throws {
        let film = try Self.film()
        defer { unlink(film) }
        let plan = try Self.plan([film, "https://example.org/b.mp4", "--listen", "10.1.2.3", "--name", "tv"]).get()
        #expect(plan.items == [film, "https://example.org/b.mp4"])
        #expect(plan.listen == "10.1.2.3" && plan.relay == nil && plan.qr && plan.webPort == 0)
        #expect(plan.agent.name == "tv")
        #expect(plan.agent.player == .mpv(MpvOptions()), "the host watches in mpv unless told otherwise")
    }

    @Test func theAgentsOptionsPassThrough_andNoneMeansNoWindow() throws {
        let film = try Self.film()
        defer { unlink(film) }
        let plan = try Self.plan([
            "--player", "none", film, "--interface", "lo", "--json", "--no-qr", "--web-port", "8080",
            "--relay", "ws://tok@127.0.0.1:8443",
        ]).get()
        #expect(plan.agent.player == .simulated && plan.agent.interface == "lo" && plan.agent.json)
        #expect(!plan.qr && plan.webPort == 8080 && plan.relay == "ws://tok@127.0.0.1:8443")
        #expect(plan.items == [film], "a flag's value is not taken for a film")
        let mpv = try Self.plan([film, "--mpv-option", "fullscreen=yes"]).get()
        #expect(
            mpv.agent.player
                == .mpv(
                    {
                        var options = MpvOptions()
                        options.options = ["fullscreen=yes"]
                        return options
                    }()))
    }

    @Test func aFilmGivenByItsURL_goesByItsFilesName() {
        #expect(
            Party.filmName(of: "https://example.org/films/Our%20Film%20(2026).mp4?token=1#t=3") == "Our Film (2026).mp4"
        )
        #expect(Party.filmName(of: "http://192.168.1.20:8080/media/film.webm") == "film.webm")
        #expect(Party.filmName(of: "https://example.org/") == "", "the host alone names no film")
        #expect(Party.filmName(of: "/srv/films/Our Film.mkv") == "Our Film.mkv")
        #expect(Party.filmName(of: "file:///srv/films/a%20b.mkv") == "a b.mkv")
        #expect(Party.filmName(of: "film.mkv") == "", "no scheme, no path: not a URL")
        #expect(Party.filmName(of: "https://example.org/a/%ZZ.mp4") == "%ZZ.mp4", "a mangled escape stays as it is")
        let long = Party.filmName(of: "https://example.org/" + String(repeating: "é", count: 400) + ".mp4")
        #expect(long.utf8.count <= WireFormat.metadataBytesMax && long.hasPrefix("éé"), "cut to a title's bound")
    }

    @Test func whatTheRoomCannotWatch_orAMistypedOption_isRefusedWithWhatIsWrong() throws {
        let film = try Self.film()
        defer { unlink(film) }
        let cases: [([String], String)] = [
            (["/nonexistent/film.mp4"], "no such file"),
            ([], "party needs a film to watch"),
            (["--listen", "127.0.0.1", "--root", "/nonexistent"], "party needs a film to watch"),
            (["ftp://host/film.mp4"], "http:// and https://"),
            ([NSTemporaryDirectory()], "is not a file"),
            ([film, "--player", "vlc"], "--player mpv"),
            ([film, "--relay", "nats://h:4222"], "WebSocket address"),
            ([film, "--listen", "0.0.0.0:8080"], "IPv4 address"),
            ([film, "--listen", "eth0"], "IPv4 address"),
            ([film, "--web-port", "70000"], "--web-port"),
            ([film, "--bogus", "x"], "unknown option"),
            ([film, "--listen"], "needs a value"),
        ]
        for (arguments, reason) in cases {
            switch Self.plan(arguments) {
            case .success: Issue.record("accepted \(arguments)")
            case .failure(let error): #expect(error.message.contains(reason), "\(arguments): \(error.message)")
            }
        }
        guard case .success(.help(topic: "party")) = CommandLineOptions.parse(["party", "--help"]) else {
            Issue.record("party --help is not the party's usage")
            return
        }
        #expect(CommandLineOptions.help("party").contains("--listen ADDRESS"))
    }
}

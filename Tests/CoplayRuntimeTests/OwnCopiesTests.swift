import CoplayCore
import CoplaySimulatedPlayer
import Foundation
import Testing

@testable import CoplayRuntime

/// Items known by their content: a local file shared is named by its fingerprint, and every
/// agent plays its own copy of it, found at the item's path or in its `--media` folders under any
/// name, or says in words that it has none.
@Suite struct OwnCopiesTests {
    let directory: URL = {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("own-copies-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// A file of `count` bytes of a pattern of `seed`, at `relative` under the test's directory.
    @discardableResult
    func file(_ relative: String, count: Int = 1_500_000, seed: UInt8 = 1) throws -> String {
        let url = directory.appendingPathComponent(relative)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed }).write(to: url)
        return url.path
    }

    func path(_ relative: String) -> String { directory.appendingPathComponent(relative).path }
    let now = MonotonicInstant(nanos: 1_000_000_000)
    let timestamp = Timestamp(monotonic: MonotonicInstant(nanos: 1_000_000_000), wall: WallInstant(unixNanos: 0))

    @Test func aShareOfALocalFile_isNamedByItsContent_withItsNameAndContainer() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let film = try file("Films/Our Film (2026).mkv")
        let fingerprint = try FileFingerprint.of(path: film)
        let shared = ContentIdentity.identify(try #require(try ConsoleCommand.parse("share \"\(film)\"").get()))
        guard case .share(let activity, _, _) = shared else {
            Issue.record("\(shared)")
            return
        }
        #expect(activity.itemID == fingerprint.text && activity.url == film)
        #expect(activity.title == "Our Film (2026).mkv" && activity.type == "video/x-matroska")

        // The person's own id, title and type stay; so does an item given by URL.
        let named = ContentIdentity.identify(
            try #require(try ConsoleCommand.parse("share \"\(film)\" id=film title=Ours type=video/webm").get()))
        guard case .share(let kept, _, _) = named else {
            Issue.record("\(named)")
            return
        }
        #expect(kept.itemID == "film" && kept.title == "Ours" && kept.type == "video/webm")
        let web = try #require(try ConsoleCommand.parse("share https://example.com/a.mp4").get())
        #expect(ContentIdentity.identify(web) == web)

        // Queued and loaded files too; a missing file stays known by its path (its player says why).
        let queued = ContentIdentity.identify(try #require(try ConsoleCommand.parse("queue add \"\(film)\"").get()))
        #expect(
            queued
                == .queue(
                    .add(
                        url: film, id: fingerprint.text, title: "Our Film (2026).mkv", durationSeconds: nil,
                        after: .last)
                ))
        let loaded = ContentIdentity.identify(try #require(try ConsoleCommand.parse("load \"\(film)\"").get()))
        #expect(loaded == .load(LoadedItem(id: fingerprint.text, url: film)))
        let missing = try #require(try ConsoleCommand.parse("share \(path("gone.mp4"))").get())
        #expect(ContentIdentity.identify(missing) == missing)
    }

    /// A film a hub serves, named with its fingerprint (`coplay hub --media` lists each so): the
    /// URL's fragment is its id, and the URL is shared without it; a fragment that is not a
    /// fingerprint, or one on a path, leaves the item as it was.
    @Test func aURLNamingItsFingerprint_isKnownByItsContent() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let film = try file("hub/Our Film (2026).mkv")
        let fingerprint = try FileFingerprint.of(path: film)
        try file("hub/.partial.mkv", count: 1000)  // hidden: not listed
        try file("hub/notes.txt", count: 1000)  // not a film
        try FileManager.default.createDirectory(atPath: path("hub/extras.mkv"), withIntermediateDirectories: true)
        let hubFilms = Hub.films(in: [path("hub"), path("nowhere")])
        #expect(hubFilms == [Hub.Film(folder: 0, name: "Our Film (2026).mkv", fingerprint: fingerprint.text)])
        let link = HubLink(host: "hub.example.org", port: 443, secret: "0123456789abcdef0123456789abcdef")
        let url = try #require(hubFilms.first).url(link)
        let bare =
            "https://hub.example.org" + Hub.mediaPath(secret: link.secret, index: 0) + "Our%20Film%20%282026%29.mkv"
        #expect(url == bare + "#" + fingerprint.text)

        // The hub lists it so, in words and in JSON; the folder's base stays for other files.
        var hub = HubPlan(
            tls: .internalCA, listen: "0.0.0.0", port: 443, name: nil, state: "/state", webRoot: "/web", qr: false,
            json: false)
        hub.media = [path("hub")]
        let text = Hub.announcement(link, plan: hub, films: hubFilms)
        #expect(text.contains("\n  \(url)\n") && text.contains("/media/") && text.contains("NAME\n"), "\(text)")
        hub.json = true
        #expect(
            Hub.announcement(link, plan: hub, films: hubFilms).contains(
                #""films":[{"name":"Our Film (2026).mkv","url":"\#(url)"}]"#))

        let shared = ContentIdentity.identify(try #require(try ConsoleCommand.parse("share \(url)").get()))
        guard case .share(let activity, _, _) = shared else {
            Issue.record("\(shared)")
            return
        }
        #expect(activity.itemID == fingerprint.text && activity.url == bare)
        #expect(activity.title == "Our Film (2026).mkv" && activity.type == "video/x-matroska")
        #expect(
            ContentIdentity.identify(try #require(try ConsoleCommand.parse("queue add \(url)").get()))
                == .queue(
                    .add(
                        url: bare, id: fingerprint.text, title: "Our Film (2026).mkv", durationSeconds: nil,
                        after: .last)))
        #expect(
            ContentIdentity.identify(try #require(try ConsoleCommand.parse("load \(url)").get()))
                == .load(LoadedItem(id: fingerprint.text, url: bare)))
        for other in [
            bare + "#chapter-2", bare + "#v1-12-" + String(repeating: "g", count: 64),
            bare + "#v1-99999999999999999-" + String(repeating: "a", count: 64),
            "/films/a.mkv#" + fingerprint.text,
        ] {
            let command = try #require(try ConsoleCommand.parse("share \"\(other)\" id=film").get())
            #expect(ContentIdentity.identify(command) == command, "\(other)")
            #expect(ConsoleCommand.contentNamed(other) == nil, "\(other)")
        }
    }

    /// The copy under another name, two folders down; a file of the same size that is another
    /// film, a hidden one and a link back to a parent folder are passed over.
    @Test func aCopyUnderAnotherName_isFoundInTheMediaFolders() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try file("home-a/film.mp4")
        let fingerprint = try FileFingerprint.of(path: original)
        try file("home-b/Other film.mp4", seed: 2)  // the same size, another film
        try file("home-b/.hidden/film.mp4")
        try FileManager.default.createSymbolicLink(atPath: path("home-b/loop"), withDestinationPath: path("home-b"))
        let copy = try file("home-b/Films/2026/Our Film (2026).mp4")
        var copies = OwnCopies(folders: [path("home-b")])
        let item = LoadedItem(id: fingerprint.text, url: path("elsewhere/film.mp4"), durationSeconds: 5400)
        #expect(copies.find(item, fingerprint: fingerprint, now: now) == .file(copy))
        #expect(copies.filesIndexed == 2, "the copy and the other film: not the hidden one, not through the link")

        // At its own path, the item's file is played where it is, whatever the folders hold.
        let atHome = LoadedItem(id: fingerprint.text, url: original)
        #expect(copies.find(atHome, fingerprint: fingerprint, now: now) == .file(original))
        // By URL, with no copy here: the URL is tried.
        var empty = OwnCopies(folders: [])
        let remote = LoadedItem(id: fingerprint.text, url: "http://192.0.2.1/media/x/film.mp4")
        #expect(empty.find(remote, fingerprint: fingerprint, now: now) == .url)
        #expect(copies.find(remote, fingerprint: fingerprint, now: now) == .file(copy), "a copy here before the URL")
        // A party's own film, known by its path: played from disk, not from the party's server;
        // a known file that is another film is not taken.
        var party = OwnCopies(folders: [], files: [path("home-b/Other film.mp4"), original])
        #expect(party.find(remote, fingerprint: fingerprint, now: now) == .file(original))
        #expect(party.filesIndexed == 0, "no folder walked")
    }

    /// No copy: the words name the film, its size and length, where it was looked for and what
    /// to do. A copy put in a folder afterwards is found once the index is `reindexAfter` old.
    @Test func noCopy_isSaidInWords_andACopyAddedLaterIsFound() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try file("home-a/film.mp4")
        let fingerprint = try FileFingerprint.of(path: original)
        try file("home-b/unrelated.mp4", count: 1000)
        let item = LoadedItem(id: fingerprint.text, url: path("home-a/gone/film.mp4"), durationSeconds: 5530)
        var copies = OwnCopies(folders: [path("home-b")])
        guard case .none(let words) = copies.find(item, fingerprint: fingerprint, now: now) else {
            Issue.record("a copy was found")
            return
        }
        for part in [
            "no copy of \"film.mp4\"", "1.5 MB", "1:32:10", "is not here", "none of the 1 file under --media",
            "load PATH",
        ] {
            #expect(words.contains(part), "\(part) in: \(words)")
        }
        var none = OwnCopies(folders: [])
        guard case .none(let alone) = none.find(item, fingerprint: fingerprint, now: now) else {
            Issue.record("a copy was found")
            return
        }
        #expect(alone.contains("no --media folder was given"), "\(alone)")

        let copy = try file("home-b/new/film (copy).mp4")
        #expect(copies.find(item, fingerprint: fingerprint, now: now + .seconds(1)) != .file(copy), "not walked yet")
        #expect(
            copies.find(item, fingerprint: fingerprint, now: now + Settings.OwnCopies.reindexAfter) == .file(copy))
    }

    /// Folders deeper than `depthMax` are not walked, so a deep tree costs a bounded walk.
    @Test func foldersDeeperThanTheBound_areNotWalked() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let deep = Array(repeating: "d", count: Settings.OwnCopies.depthMax + 1).joined(separator: "/")
        try file("library/\(deep)/film.mp4")
        try file("library/\(deep.dropLast(2))film.mp4")
        var copies = OwnCopies(folders: [path("library")])
        copies.index(now: now)
        #expect(copies.filesIndexed == 1)
    }

    /// The player behind sees the copy's path; with none, it is told to let go of what it held,
    /// and the core gets `cannotPlay:noCopy` with the words. An item known by URL passes as it is.
    @Test func thePlayer_loadsTheOwnCopy_orReportsNoCopy() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try file("home-a/film.mp4")
        let fingerprint = try FileFingerprint.of(path: original)
        let copy = try file("home-b/Our Film.mp4")
        var player = OwnCopyPlayer(SimulatedPlayer(), folders: [path("home-b")])
        let shared = LoadedItem(id: fingerprint.text, url: path("home-a/moved/film.mp4"))
        _ = player.perform(.load(shared, position: 0), now: timestamp)
        #expect(player.inner.item?.url == copy && player.inner.item?.id == fingerprint.text)
        #expect(player.takeNotes() == ["playing your own copy of the group's item: \(copy)"])
        #expect(player.takeNotes().isEmpty)

        let other = try FileFingerprint.of(path: try file("home-a/another.mp4", seed: 9))
        let reports = player.perform(
            .load(LoadedItem(id: other.text, url: path("x/another.mp4")), position: 0), now: timestamp)
        #expect(player.inner.item == nil, "what it held is let go")
        guard case .loadFailed(let words, .noCopy)? = reports.last else {
            Issue.record("\(reports)")
            return
        }
        #expect(words.contains("no copy of \"another.mp4\""))

        let byURL = LoadedItem(id: "bbb", url: "https://example.com/bbb.mp4")
        _ = player.perform(.load(byURL, position: 0), now: timestamp)
        #expect(player.inner.item == byURL)
    }

    /// While it has no copy, the player looks again every `lookAgainEvery`; a copy put in a
    /// folder meanwhile is found and the core told (`copyFound`, which loads the item again). A
    /// new item stops the looking.
    @Test func aCopyPutInAFolderWhileStandingAside_isFound_andTheCoreTold() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let fingerprint = try FileFingerprint.of(path: try file("home-a/film.mp4"))
        try FileManager.default.createDirectory(atPath: path("home-b"), withIntermediateDirectories: true)
        var player = OwnCopyPlayer(SimulatedPlayer(), folders: [path("home-b")])
        let item = LoadedItem(id: fingerprint.text, url: path("home-a/gone/film.mp4"))
        let reports = player.perform(.load(item, position: 0), now: timestamp)
        guard case .loadFailed(_, .noCopy)? = reports.last else {
            Issue.record("\(reports)")
            return
        }
        let every = Settings.OwnCopies.lookAgainEvery
        #expect(player.nextEvent(now: timestamp) == now + every)
        func later(_ duration: Duration) -> Timestamp {
            Timestamp(monotonic: now + duration, wall: WallInstant(unixNanos: 0))
        }
        #expect(!player.advance(now: later(every)).contains(.copyFound), "nothing there yet")
        #expect(player.nextEvent(now: later(every)) == now + every * 2)
        let copy = try file("home-b/Films/film (copy).mp4")
        #expect(player.advance(now: later(every * 2)).contains(.copyFound))
        #expect(player.takeNotes() == ["found your own copy of the group's item: \(copy)"])
        #expect(player.nextEvent(now: later(every * 2)) == nil, "found: it looks no more")
        // The core loads the item again: the copy plays.
        _ = player.perform(.load(item, position: 42), now: later(every * 2))
        #expect(player.inner.item?.url == copy)

        // A new item, with no copy either, then another: the first is no longer looked for.
        let other = try FileFingerprint.of(path: try file("home-a/other.mp4", seed: 7))
        _ = player.perform(.load(LoadedItem(id: other.text, url: path("x/other.mp4")), position: 0), now: timestamp)
        #expect(player.nextEvent(now: timestamp) != nil)
        _ = player.perform(.load(LoadedItem(id: "bbb", url: "https://example.com/b.mp4"), position: 0), now: timestamp)
        #expect(player.nextEvent(now: timestamp) == nil)
    }

    /// Two names of one film, as Syncplay compares them: case, the characters it strips and the
    /// extension aside; anything else tells two films apart. The vectors the page checks too
    /// (Tools/web/fingerprints.mjs).
    @Test func names_areComparedAsSyncplayDoes_withoutTheirExtension() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/names.json")
        let vectors = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let same = try #require(vectors["same"] as? [[String]])
        let different = try #require(vectors["different"] as? [[String]])
        let normalised = try #require(vectors["normalised"] as? [[String]])
        #expect(same.count >= 5 && different.count >= 3 && normalised.count >= 3)
        for pair in same {
            #expect(OwnCopies.normalisedName(pair[0]) == OwnCopies.normalisedName(pair[1]), "\(pair)")
        }
        for pair in different {
            #expect(OwnCopies.normalisedName(pair[0]) != OwnCopies.normalisedName(pair[1]), "\(pair)")
        }
        for pair in normalised { #expect(OwnCopies.normalisedName(pair[0]) == pair[1], "\(pair)") }
        #expect(vectors["durationSlack"] as? Double == Settings.OwnCopies.otherEncodeDurationSlack)
    }

    /// A film's length, read by ffprobe; nothing for what is not a film, or not there.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe"), "ffmpeg is not installed"))
    func aFilmsLength_isReadByFFprobe_andNothingElseIsTakenForOne() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let film = path("Our Film (2026).mkv")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = [
            "-y", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-t", "3.5", "-c:v",
            "libx264", "-preset", "ultrafast", film,
        ]
        try process.run()
        for _ in 0..<1000 where process.isRunning { usleep(10_000) }
        let length = try #require(MediaDuration.probe(film))
        #expect(abs(length - 3.5) < 0.15, "\(length)")
        #expect(MediaDuration.probe(try file("not-a-film.mkv", count: 5000)) == nil)
        #expect(MediaDuration.probe(path("missing.mkv")) == nil)
        #expect(MediaDuration.probe("") == nil)
    }

    /// A person's own mpv, attached: its word of the file it has open comes with its next line.
    struct Attached: PlayerDriver {
        var kind: String { "attached" }
        var commands: [PlayerCommand] = []
        var told: String?
        var openFile: String?
        mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
            commands.append(command)
            return []
        }
        func nextEvent(now: Timestamp) -> MonotonicInstant? { nil }
        func advance(now: Timestamp) -> [PlayerReport] { [] }
        mutating func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] {
            openFile = told
            return []
        }
        func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) { ([], false) }
        func close() {}
    }

    /// The group's item heard before the attached mpv's word of its file (CI's fast tier, once):
    /// the person's file is not let go for want of a copy, so that the word, when it comes, finds
    /// it; an item of the group's the player held is let go as before.
    @Test func thePersonsOwnFile_isNotLetGo_beforeItsPlayerSaysWhatItIs() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = try file("e/Downloads/film (1).mkv")
        let fingerprint = try FileFingerprint.of(path: copy)
        var player = OwnCopyPlayer(Attached(told: copy), folders: [])
        let item = LoadedItem(id: fingerprint.text, url: path("a/film.mkv"))
        let reports = player.perform(.load(item, position: 0), now: timestamp)
        guard case .loadFailed(_, .noCopy)? = reports.last else {
            Issue.record("\(reports)")
            return
        }
        // (The core, hearing of no copy, lets the item go: nothing of the group's is held.)
        #expect(player.perform(.unload, now: timestamp).isEmpty)
        #expect(player.inner.commands.isEmpty, "the person's file stays: \(player.inner.commands)")
        #expect(player.receive(line: [], at: timestamp) == [.copyFound])
        _ = player.perform(.load(item, position: 0), now: timestamp)
        #expect(player.inner.commands == [.load(LoadedItem(id: fingerprint.text, url: copy), position: 0)])
        // Holding the group's item now, a next item with no copy lets it go.
        let other = try FileFingerprint.of(path: try file("x/other.mkv", seed: 7))
        try FileManager.default.removeItem(atPath: path("x/other.mkv"))
        _ = player.perform(.load(LoadedItem(id: other.text, url: path("x/other.mkv")), position: 0), now: timestamp)
        #expect(player.inner.commands.last == .unload)
    }

    /// A player that cannot fetch what it is given: the party's film at a URL of its LAN, seen
    /// from another home.
    struct Unreachable: PlayerDriver {
        var kind: String { "unreachable" }
        func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] { [] }
        func nextEvent(now: Timestamp) -> MonotonicInstant? { nil }
        func advance(now: Timestamp) -> [PlayerReport] { [] }
        func receive(line: [UInt8], at: Timestamp) -> [PlayerReport] {
            [.loadFailed("mpv could not play it: loading failed", problem: .unreachable)]
        }
        func disconnected(now: Timestamp) -> (reports: [PlayerReport], leave: Bool) { ([], false) }
        func close() {}
    }

    /// An item known by its content, with no copy here and a URL that cannot be reached: no
    /// copy, in words (the film, and why its URL did not do); an item known by its URL keeps
    /// the player's own kind of failure.
    @Test func anUnreachableURL_ofAnItemKnownByItsContent_isNoCopy() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let fingerprint = try FileFingerprint.of(path: try file("home-a/film.mkv"))
        var player = OwnCopyPlayer(Unreachable(), folders: [])
        let item = LoadedItem(
            id: fingerprint.text, url: "http://192.0.2.7:4000/media/1f2e/Our%20Film.mkv", durationSeconds: 5400)
        _ = player.perform(.load(item, position: 0), now: timestamp)
        let reports = player.receive(line: [], at: timestamp)
        guard case .loadFailed(let words, .noCopy)? = reports.first else {
            Issue.record("\(reports)")
            return
        }
        #expect(
            words.contains("no copy of \"Our Film.mkv\" (1.5 MB, 1:30:00)") && words.contains("loading failed"),
            "\(words)")
        _ = player.perform(.load(LoadedItem(id: "film", url: item.url), position: 0), now: timestamp)
        #expect(
            player.receive(line: [], at: timestamp) == [
                .loadFailed("mpv could not play it: loading failed", problem: .unreachable)
            ])
    }

    @Test func sizesAndDurations_readAsAPersonReadsThem() {
        #expect(OwnCopies.size(4_294_967_296) == "4.3 GB")
        #expect(OwnCopies.size(700_000_000) == "700 MB")
        #expect(OwnCopies.size(1_500_000) == "1.5 MB")
        #expect(OwnCopies.size(999) == "999 bytes")
        #expect(OwnCopies.clock(5530) == "1:32:10" && OwnCopies.clock(245) == "4:05")
        #expect(ContentIdentity.container(of: "a.MP4") == "video/mp4" && ContentIdentity.container(of: ".mkv") == nil)
    }
}

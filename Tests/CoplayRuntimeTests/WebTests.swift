import CoplayCore
import Foundation
import Testing

@testable import CoplayRuntime

/// The browser participant's native side: the invitation link, its QR code, and `coplay web`'s
/// answers to good and hostile requests.
@Suite struct WebTests {
    static let key = [UInt8](0..<32)

    // MARK: Invitations

    @Test func anInvitationRoundTrips_andItsFragmentCarriesEverything() throws {
        let invitation = try Invitation.make(
            page: "http://192.168.1.20:8080/#old", relay: "ws://tok en@192.168.1.20:8443", session: "film night",
            key: Self.key
        ).get()
        let link = invitation.link
        #expect(
            link.hasPrefix(
                "http://192.168.1.20:8080/#relay=ws%3A%2F%2Ftok%20en%40192.168.1.20%3A8443&session=film%20night&key=000102"
            ))
        #expect(!link.contains("#old"), "a fragment already on the page's address is replaced")
        #expect(try Invitation.parse(link).get() == invitation)
    }

    /// The servers of a cluster in one link: each a `relay=` field, in order; `coplay join` takes
    /// them all as seeds; more than eight are refused.
    @Test func anInvitationMayNameSeveralRelays() throws {
        let relays = ["ws://t@127.0.0.1:8443", "ws://t@127.0.0.2:8443"]
        let invitation = try Invitation.make(page: "http://h/", relays: relays, session: "s", key: Self.key).get()
        #expect(
            invitation.link.hasPrefix(
                "http://h/#relay=ws%3A%2F%2Ft%40127.0.0.1%3A8443&relay=ws%3A%2F%2Ft%40127.0.0.2%3A8443&session=s&key="))
        #expect(try Invitation.parse(invitation.link).get().relays == relays)
        guard
            case .success(.runAgent(let configuration)) = CommandLineOptions.parse([
                "join", invitation.link, "--interface", "lo",
            ])
        else {
            Issue.record("join refused a link with two relays")
            return
        }
        #expect(configuration.relays.map(\.name) == ["ws://127.0.0.1:8443", "ws://127.0.0.2:8443"])
        let nine = (1...9).map { "ws://127.0.0.\($0):8443" }
        #expect((try? Invitation.make(page: "http://h/", relays: nine, session: "s", key: Self.key).get()) == nil)
        let tooMany =
            "http://h/#" + nine.map { "relay=" + $0 + "&" }.joined() + "session=s&key="
            + String(repeating: "00", count: 32)
        #expect((try? Invitation.parse(tooMany).get()) == nil)
    }

    @Test func aLinkWithoutAKey_orAMangledOne_isRefusedWithWhatIsWrong() {
        let good =
            (try? Invitation.make(page: "https://w.example/", relay: "wss://r.example:443", session: "s", key: Self.key)
            .get())!.link
        let cases: [(String, String)] = [
            ("https://w.example/", "carries no invitation"),
            (good.replacingOccurrences(of: #"&key=[0-9a-f]+"#, with: "", options: .regularExpression), "no group key"),
            (good + "zz", "key is damaged"),
            (String(good.dropLast(2)) + "g0", "key is damaged"),
            (String(good.prefix(good.count - 10)), "key is damaged"),
            (good.replacingOccurrences(of: "relay=wss", with: "relay=http"), "--relay must be"),
            (good.replacingOccurrences(of: "session=s", with: "session=%zz"), "damaged near"),
            (good.replacingOccurrences(of: "https://w.example/", with: "file:///etc/"), "--page must be"),
        ]
        for (link, reason) in cases {
            switch Invitation.parse(link) {
            case .success: Issue.record("accepted \(link)")
            case .failure(let error): #expect(error.message.contains(reason), "\(link): \(error.message)")
            }
        }
    }

    /// `coplay invite --audience`: the link says so (`audience=1`), and whoever joins by it, an
    /// agent (`coplay join`) or the page, is a viewer; a link without it makes a stage member.
    @Test func anAudienceInvitation_makesItsJoinersViewers() throws {
        let path = "/tmp/coplay-invite-\(getpid()).key"
        _ = FileManager.default.createFile(atPath: path, contents: Data(KeyFile.generate().utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let arguments = ["invite", "--page", "http://h/", "--relay", "ws://t@127.0.0.1:8443", "--key-file", path]
        guard case .success(.invite(let invitation, _)) = CommandLineOptions.parse(arguments + ["--audience"]),
            case .success(.invite(let stage, _)) = CommandLineOptions.parse(arguments)
        else {
            Issue.record("invite --audience refused")
            return
        }
        #expect(invitation.link.hasSuffix("&audience=1") && !stage.link.contains("audience"))
        #expect(try Invitation.parse(invitation.link).get().audience)
        #expect(try !Invitation.parse(stage.link).get().audience)
        for (link, role) in [(invitation.link, AudienceSettings.Role.viewer), (stage.link, .firstCome)] {
            guard case .success(.runAgent(let configuration)) = CommandLineOptions.parse(["join", link]) else {
                Issue.record("join refused \(link)")
                continue
            }
            #expect(configuration.settings.audience.role == role)
        }
    }

    @Test func inviteRefusesWhatABrowserCannotUse() {
        let refusals = [
            ["--relay", "ws://h:1", "--key-file", "/nonexistent"],
            ["--page", "http://h/", "--relay", "nats://h:4222", "--key-file", "/dev/null"],
            ["--page", "http://h/", "--key-file", "/dev/null"],
        ]
        for arguments in refusals {
            if case .success = CommandLineOptions.parse(["invite"] + arguments) {
                Issue.record("accepted \(arguments)")
            }
        }
    }

    // MARK: The QR code

    /// ISO/IEC 18004's worked example (Annex I): "01234567" at 1-M. Its data codewords and the
    /// ten error correction codewords the standard gives for them.
    @Test func reedSolomonMatchesTheStandardsExample() {
        let data: [UInt8] = [
            0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11,
        ]
        let ecc = QRCode.remainder(data, QRCode.divisor(degree: 10))
        #expect(ecc == [0xA5, 0x24, 0xD4, 0xC1, 0xED, 0x36, 0xC7, 0x87, 0x2C, 0x55])
    }

    @Test func theSmallestVersionThatHoldsTheBytesIsChosen() throws {
        // Level M's byte capacities: 14 bytes in version 1, 26 in 2, 213 in 10, 2,331 in 40.
        for (count, version) in [(14, 1), (15, 2), (26, 2), (213, 10), (214, 11), (2331, 40)] {
            let code = try QRCode(bytes: [UInt8](repeating: 0x61, count: count))
            #expect(code.version == version, "\(count) bytes")
            #expect(code.size == 4 * version + 17)
        }
        #expect(throws: QRCode.Failure.tooLong(bytes: 2332, max: 2331)) {
            try QRCode(bytes: [UInt8](repeating: 0, count: 2332))
        }
    }

    /// The terminal drawing, turned back into a picture, is read by a real decoder (zbarimg).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/zbarimg"), "needs zbar-tools"))
    func theTerminalCodeReadsBackAsTheLink() throws {
        let invitation = try Invitation.make(
            page: "http://10.0.0.2:8080/", relay: "ws://token@10.0.0.2:8443", session: "living-room", key: Self.key
        ).get()
        for ansi in [false, true] {
            let text = try QRCode(bytes: Array(invitation.link.utf8)).terminalText(ansi: ansi)
            let lines = text.split(separator: "\n").map {
                $0.replacingOccurrences(of: "\u{1B}[30;47m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "")
            }
            // Light is 1: the plain drawing draws light modules; the coloured one draws dark ones.
            var rows: [[UInt8]] = []
            for line in lines {
                var top: [UInt8] = []
                var bottom: [UInt8] = []
                for character in line {
                    let (t, b): (UInt8, UInt8) =
                        switch character {
                        case "█": (1, 1)
                        case "▀": (1, 0)
                        case "▄": (0, 1)
                        default: (0, 0)
                        }
                    top.append(ansi ? 1 - t : t)
                    bottom.append(ansi ? 1 - b : b)
                }
                rows += [top, bottom]
            }
            let scale = 4
            let width = rows[0].count * scale
            var pgm = Array("P5 \(width) \(rows.count * scale) 255\n".utf8)
            for row in rows {
                let line = row.flatMap { [UInt8](repeating: $0 == 1 ? 255 : 0, count: scale) }
                for _ in 0..<scale { pgm += line }
            }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "coplay-qr-\(getpid())-\(ansi).pgm")
            try Data(pgm).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/zbarimg")
            process.arguments = ["-q", "--raw", file.path]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            let read = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(read.trimmingCharacters(in: .whitespacesAndNewlines) == invitation.link, "ansi: \(ansi)")
        }
    }

    // MARK: coplay web

    static let files: [String: WebServer.File] = [
        "index.html": .init(bytes: Array("<!doctype html>".utf8), contentType: "text/html; charset=utf-8"),
        "coplay.wasm": .init(bytes: [UInt8](0..<100), contentType: "application/wasm"),
    ]

    func answer(_ request: String, media: MediaLibrary? = nil) -> (status: String, headers: String, body: [UInt8]) {
        var server = WebServer(files: Self.files, media: media)
        return Self.flattened(server.respond(to: Array(request.utf8)))
    }

    /// A response's status line, head and body (a file's range read back, at most 1 MiB of it).
    static func flattened(_ response: WebServer.Response) -> (status: String, headers: String, body: [UInt8]) {
        let head = String(decoding: response.head, as: UTF8.self)
        var body: [UInt8] = []
        switch response.body {
        case .none: break
        case .bytes(let bytes): body = Array(bytes)
        case .file(let descriptor, let range):
            body = [UInt8](repeating: 0, count: min(range.count, 1 << 20))
            let count = body.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress, $0.count, off_t(range.lowerBound))
            }
            body = Array(body.prefix(max(0, count)))
            close(descriptor)
        }
        return (head.components(separatedBy: "\r\n").first ?? "", head, body)
    }

    @Test func theServerAnswersItsFiles_rangesIncluded() {
        let page = answer("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(page.status == "HTTP/1.1 200 OK")
        #expect(page.headers.contains("Content-Type: text/html; charset=utf-8"))
        #expect(page.body == Array("<!doctype html>".utf8))
        // Cross-origin isolated (a fine clock in the page and its Worker), without refusing a film
        // from another server: `credentialless`.
        #expect(page.headers.contains("Cross-Origin-Opener-Policy: same-origin"))
        #expect(page.headers.contains("Cross-Origin-Embedder-Policy: credentialless"))
        let module = answer("GET /coplay.wasm?v=2 HTTP/1.1\r\nrange: bytes=10-19\r\n\r\n")
        #expect(module.status == "HTTP/1.1 206 Partial Content")
        #expect(module.headers.contains("Content-Range: bytes 10-19/100"))
        #expect(module.body == [UInt8](10..<20))
        #expect(answer("GET /coplay.wasm HTTP/1.1\r\nRange: bytes=90-\r\n\r\n").body == [UInt8](90..<100))
        #expect(answer("GET /coplay.wasm HTTP/1.1\r\nRange: bytes=-5\r\n\r\n").body == [UInt8](95..<100))
        #expect(answer("HEAD /coplay.wasm HTTP/1.1\r\n\r\n").body.isEmpty)
    }

    @Test func hostileRequestsGetA4xx_andAreCounted() {
        let cases: [(String, String)] = [
            ("POST / HTTP/1.1\r\n\r\n", "405"),
            ("GET /../etc/passwd HTTP/1.1\r\n\r\n", "404"),
            ("GET /%2e%2e/x HTTP/1.1\r\n\r\n", "404"),
            ("GET /.hidden HTTP/1.1\r\n\r\n", "404"),
            ("GET index.html HTTP/1.1\r\n\r\n", "400"),
            ("GET / HTTP/2.0\r\n\r\n", "400"),
            ("GARBAGE\r\n\r\n", "400"),
            ("\u{0}\u{1}\r\n\r\n", "400"),
            ("GET /coplay.wasm HTTP/1.1\r\nRange: bytes=100-\r\n\r\n", "416"),
            ("GET /coplay.wasm HTTP/1.1\r\nRange: bytes=9-3\r\n\r\n", "416"),
            ("GET /coplay.wasm HTTP/1.1\r\nRange: bytes=99999999999999999999-\r\n\r\n", "416"),
            ("GET /coplay.wasm HTTP/1.1\r\nRange: items=1-2\r\n\r\n", "416"),
        ]
        var server = WebServer(files: Self.files)
        for (request, status) in cases {
            let reply = String(decoding: server.respond(to: Array(request.utf8)).head.prefix(12), as: UTF8.self)
            #expect(reply == "HTTP/1.1 \(status)", "\(request.debugDescription)")
        }
        #expect(server.refused.values.reduce(0, +) == cases.count)
        #expect(server.served == 0)
    }

    // MARK: Media from disk

    /// A folder with a 4 GiB sparse film, a small one whose name has a space, a hidden file and
    /// a link to a file outside the folder.
    static func mediaFolder() throws -> (folder: String, outside: String) {
        let folder = NSTemporaryDirectory() + "coplay-media-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let large = open(folder + "/film.mp4", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(ftruncate(large, 4 << 30) == 0)
        var tail: [UInt8] = [1, 2, 3, 4]
        #expect(pwrite(large, &tail, 4, off_t((4 << 30) - 4)) == 4)
        close(large)
        try Data([UInt8](0..<200)).write(to: URL(fileURLWithPath: folder + "/my film.webm"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: folder + "/.hidden.mp4"))
        let outside = folder + "-outside.mp4"
        try Data("outside".utf8).write(to: URL(fileURLWithPath: outside))
        try FileManager.default.createSymbolicLink(atPath: folder + "/link.mp4", withDestinationPath: outside)
        return (folder, outside)
    }

    /// `body` with the media folder served under `/media/abc123/` (removed after).
    func withMediaFolder(_ body: (_ library: MediaLibrary, _ folder: String, _ outside: String) throws -> Void) throws {
        let (folder, outside) = try Self.mediaFolder()
        defer {
            try? FileManager.default.removeItem(atPath: folder)
            try? FileManager.default.removeItem(atPath: outside)
        }
        var library = MediaLibrary(prefix: "/media/abc123/")
        #expect(try library.add(folder).get() == nil)
        try body(library, folder, outside)
    }

    @Test func mediaFromDisk_areServedWithRanges_whateverTheirSize() throws {
        try withMediaFolder { library, _, _ throws in
            let end = answer("GET /media/abc123/film.mp4 HTTP/1.1\r\nRange: bytes=4294967292-\r\n\r\n", media: library)
            #expect(end.status == "HTTP/1.1 206 Partial Content")
            #expect(end.headers.contains("Content-Range: bytes 4294967292-4294967295/4294967296"))
            #expect(end.headers.contains("Content-Type: video/mp4"))
            #expect(end.body == [1, 2, 3, 4])
            let whole = answer("HEAD /media/abc123/film.mp4 HTTP/1.1\r\n\r\n", media: library)
            #expect(whole.status == "HTTP/1.1 200 OK" && whole.headers.contains("Content-Length: 4294967296"))
            #expect(whole.headers.contains("Accept-Ranges: bytes") && whole.body.isEmpty)
            let spaced = answer("GET /media/abc123/my%20film.webm HTTP/1.1\r\nRange: bytes=-10\r\n\r\n", media: library)
            #expect(spaced.status == "HTTP/1.1 206 Partial Content" && spaced.body == [UInt8](190..<200))
            #expect(spaced.headers.contains("Content-Type: video/webm"))
            let beyond = answer(
                "GET /media/abc123/film.mp4 HTTP/1.1\r\nRange: bytes=4294967296-\r\n\r\n", media: library)
            #expect(beyond.status == "HTTP/1.1 416 Range Not Satisfiable")
            #expect(beyond.headers.contains("Content-Range: bytes */4294967296"))
            let several = answer(
                "GET /media/abc123/my%20film.webm HTTP/1.1\r\nRange: bytes=0-1,5-6\r\n\r\n", media: library)
            #expect(several.status == "HTTP/1.1 200 OK" && several.body.count == 200, "several ranges: the whole")
            #expect(library.url(base: "http://h:1", name: "my film.webm") == "http://h:1/media/abc123/my%20film.webm")
        }
    }

    @Test func nothingOutsideWhatWasNamed_isServed() throws {
        try withMediaFolder { library, folder, outside throws in
            let refusals = [
                "/media/abc123/../film.mp4", "/media/abc123/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
                "/media/abc123/..%2F..%2Fetc",
                "/media/abc123//etc/passwd", "/media/abc123/.hidden.mp4", "/media/abc123/%2ehidden.mp4",
                "/media/abc123/link.mp4", "/media/abc123/nothing.mp4", "/media/wrong/film.mp4", "/media/film.mp4",
                "/media/abc123/", "/media/abc123/%00film.mp4", "/etc/passwd", "/media/abc123/film.mp4%2f",
            ]
            var server = WebServer(files: Self.files, media: library)
            for path in refusals {
                let reply = Self.flattened(server.respond(to: Array("GET \(path) HTTP/1.1\r\n\r\n".utf8)))
                #expect(reply.status == "HTTP/1.1 404 Not Found", "\(path): \(reply.status)")
            }
            #expect(server.refused[404] == refusals.count && server.served == 0)
            // A file named one by one is served by its name alone.
            var named = MediaLibrary(prefix: "/m/")
            #expect(try named.add(outside).get() == "\(URL(fileURLWithPath: outside).lastPathComponent)")
            #expect(try named.add(outside).get()?.hasPrefix("2-") == true, "a second file of one name gets a new name")
            #expect(named.add(folder + "/none").isFailure)
        }
    }
}

extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

/// `--relay ws://…` and `coplay join`: the NATS protocol inside a WebSocket, as browsers carry it.
@Suite struct WebSocketTests {
    @Test func sha1MatchesFIPS180sExamples() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String($0, radix: 16).leftPadded(2) }.joined() }
        #expect(hex(SHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(SHA1.hash([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(
            hex(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }

    /// RFC 6455 section 1.3's example key and accept value.
    @Test func theAcceptValueIsRFC6455s() {
        #expect(WebSocketFraming.accept(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(Base64.encode(Array("the sample nonce".utf8)) == "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(Base64.encode([0xFF]) == "/w==" && Base64.encode([0xFF, 0xEE]) == "/+4=")
    }

    static func opened() -> WebSocketFraming {
        var framing = WebSocketFraming(nonce: Array("the sample nonce".utf8))
        let answer =
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        #expect(framing.received(Array(answer.utf8)) == .init())
        #expect(framing.phase == .open)
        return framing
    }

    /// A server's unmasked frame.
    static func serverFrame(_ opcode: UInt8, _ payload: [UInt8], final: Bool = true) -> [UInt8] {
        var frame: [UInt8] = [(final ? 0x80 : 0) | opcode]
        if payload.count < 126 {
            frame.append(UInt8(payload.count))
        } else {
            frame += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        return frame + payload
    }

    @Test func messagesArrive_whole_fragmented_orSplitAcrossReads_andPingsAreAnswered() {
        var framing = Self.opened()
        let info = Array("INFO {}\r\n".utf8)
        var bytes = Self.serverFrame(2, info) + Self.serverFrame(1, Array("PI".utf8), final: false)
        bytes += Self.serverFrame(9, [7]) + Self.serverFrame(0, Array("NG\r\n".utf8))
        bytes += Self.serverFrame(2, [UInt8](repeating: 65, count: 300))
        var payload: [UInt8] = []
        var replies: [WebSocketFraming.Control] = []
        for byte in bytes {  // one byte at a time: every frame split across reads
            let arrival = framing.received([byte])
            #expect(arrival.failure == nil)
            payload += arrival.payload
            replies += arrival.replies
        }
        #expect(payload == info + Array("PING\r\n".utf8) + [UInt8](repeating: 65, count: 300))
        #expect(replies == [.init(opcode: 0xA, payload: [7])], "a pong carrying the ping's payload")
    }

    @Test func whatTheClientSendsIsMasked() {
        let mask: [UInt8] = [1, 2, 3, 4]
        let frame = WebSocketFraming.binary(Array("PUB a 1\r\nx\r\n".utf8), mask: mask)
        #expect(frame[0] == 0x82 && frame[1] == 0x80 | 12 && Array(frame[2..<6]) == mask)
        let unmasked = frame[6...].enumerated().map { $0.element ^ mask[$0.offset & 3] }
        #expect(unmasked == Array("PUB a 1\r\nx\r\n".utf8))
        let long = WebSocketFraming.binary([UInt8](repeating: 0, count: 70_000), mask: mask)
        #expect(long[1] == 0x80 | 127 && long.count == 2 + 8 + 4 + 70_000)
    }

    @Test func aServerThatBreaksTheProtocolEndsTheConnectionWithAReason() {
        let cases: [(String, [UInt8], Bool)] = [
            ("refused the WebSocket", Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8), false),
            ("does not answer the key", Array("HTTP/1.1 101 OK\r\nSec-WebSocket-Accept: xyz=\r\n\r\n".utf8), false),
            ("handshake is over 8 KiB", [UInt8](repeating: 65, count: 9000), false),
            ("masked frame", [0x82, 0x81, 0, 0, 0, 0, 1], true),
            ("reserved bits", [0xC2, 0x01, 1], true),
            ("frame of", [0x82, 127, 0, 0, 0, 1, 0, 0, 0, 0], true),
            ("continuation frame out of place", [0x80, 0x01, 1], true),
            ("control frame", [0x09, 0x01, 1], true),
            ("unknown opcode", [0x83, 0x00], true),
            ("closed the WebSocket", [0x88, 0x02, 0x03, 0xE8], true),
        ]
        for (reason, bytes, afterHandshake) in cases {
            var framing = afterHandshake ? Self.opened() : WebSocketFraming(nonce: [UInt8](repeating: 0, count: 16))
            let arrival = framing.received(bytes)
            #expect(arrival.failure?.contains(reason) == true, "\(reason): \(arrival.failure ?? "accepted")")
            #expect(framing.phase == .closed)
        }
        // A message grown past the bound by continuation frames.
        var framing = Self.opened()
        var failure: String?
        let chunk = [UInt8](repeating: 1, count: 60_000)
        failure = framing.received([0x02, 126, 0xEA, 0x60] + chunk).failure
        for _ in 0..<20 where failure == nil { failure = framing.received([0x00, 126, 0xEA, 0x60] + chunk).failure }
        #expect(failure?.contains("a message over") == true)
    }

    @Test func joinTakesTheGroupFromTheLink_andRefusesWhatTheLinkDecides() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let link = try Invitation.make(page: "http://h/", relay: "ws://tok@127.0.0.1:8443", session: "film", key: key)
            .get().link
        guard
            case .success(.runAgent(let configuration)) = CommandLineOptions.parse([
                "join", link, "--name", "sofa", "--interface", "lo",
            ])
        else {
            Issue.record("join refused a good link")
            return
        }
        #expect(configuration.sessionName == "film" && configuration.keys == [key] && configuration.name == "sofa")
        #expect(configuration.relays.first?.webSocketHost == "127.0.0.1:8443")
        #expect(configuration.relays.first?.credentials.token == "tok")
        for arguments in [
            ["join"], ["join", "--name", "x"], ["join", link, "--relay", "nats://h"],
            ["join", link, "--key-file", "k"],
            ["join", "http://h/#relay=ws%3A%2F%2Fh%3A1&session=s"],
            ["join", link.replacingOccurrences(of: "ws%3A", with: "wss%3A")],
        ] {
            if case .success = CommandLineOptions.parse(arguments) { Issue.record("accepted \(arguments)") }
        }
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

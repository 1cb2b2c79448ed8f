import CoplayCore
import Foundation
import Testing

@testable import CoplayRuntime

/// Files fingerprinted as the agent reads them: against the vectors, and for the files a person's
/// folders hold that are no film: empty, sparse and huge, a folder, one that is gone.
@Suite struct FileFingerprintTests {
    let directory: URL = {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("fingerprints-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// Tests/Vectors/fingerprints.json's fingerprint named `name`.
    func vector(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/fingerprints.json")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        let entry = try #require((object["cases"] as! [[String: Any]]).first { $0["name"] as? String == name })
        return try #require(entry["fingerprint"] as? String)
    }

    @Test func aFileOfThePattern_andAnEmptyOne_matchTheVectors() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let pattern = directory.appendingPathComponent("film.mkv")
        try Data((0..<3_000_001).map { UInt8(truncatingIfNeeded: ($0 >> 3) ^ $0) }).write(to: pattern)
        #expect(try FileFingerprint.of(path: pattern.path).text == vector("pattern of 3000001 bytes"))
        let empty = directory.appendingPathComponent("empty.mkv")
        try Data().write(to: empty)
        #expect(try FileFingerprint.of(path: empty.path).text == vector("pattern of 0 bytes"))
    }

    /// A 4 GiB sparse file, as the vector describes it, and a 50 GiB one: each read in 1 MiB.
    @Test func sparseFilesOf4And50GiB_areFingerprintedWithoutReadingThem() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("sparse.mkv").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        for (offset, text) in [(UInt64(0), "coplay"), (1 << 31, "middle"), ((4 << 30) - 6, "ending")] {
            try handle.seek(toOffset: offset)
            handle.write(Data(text.utf8))
        }
        try handle.close()
        let name = "a 4 GiB sparse file: zeros, with 'coplay' at 0, 'middle' at 2^31 and 'ending' in its last 6 bytes"
        #expect(try FileFingerprint.of(path: path).text == vector(name))
        #expect(truncate(path, 50 << 30) == 0)
        let huge = try FileFingerprint.of(path: path)
        #expect(huge.size == 50 << 30 && huge.digest.count == 32)
    }

    @Test func aFolder_aNamedPipe_andAFileThatIsGone_areClearErrors() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(throws: FileFingerprint.Failure.self) { try FileFingerprint.of(path: directory.path) }
        let pipe = directory.appendingPathComponent("pipe.mkv").path
        #expect(mkfifo(pipe, 0o600) == 0)
        #expect(throws: FileFingerprint.Failure.self, "refused at once, not waited on") {
            try FileFingerprint.of(path: pipe)
        }
        let gone = directory.appendingPathComponent("gone.mkv").path
        do {
            _ = try FileFingerprint.of(path: gone)
            Issue.record("a file that is not there was fingerprinted")
        } catch {
            #expect(error.description.contains("cannot open \(gone)"))
        }
    }

    /// A download still being written: the file grows between two windows of every reading, so
    /// each of the three readings sees another size, and it is refused, in words. One that
    /// grows during the first reading only is fingerprinted as it is afterwards.
    @Test func aFileThatChangesWhileRead_isReadAgain_thenRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("download.mkv").path
        try Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 * 7) }).write(to: URL(fileURLWithPath: path))
        func grow() {
            let handle = FileHandle(forWritingAtPath: path)!
            handle.seekToEndOfFile()
            handle.write(Data(repeating: 0xab, count: 4096))
            handle.closeFile()
        }
        var readings = 0
        do {
            _ = try FileFingerprint.of(path: path) { window in
                if window == 5 {
                    readings += 1
                    grow()
                }
            }
            Issue.record("a file that grew during every reading was fingerprinted")
        } catch {
            #expect(error.description.contains("changed while it was read, 3 times"), "\(error)")
        }
        #expect(readings == FileFingerprint.attempts)

        readings = 0
        let settled = try FileFingerprint.of(path: path) { window in
            if window == 5, readings == 0 {
                readings += 1
                grow()
            }
        }
        #expect(settled == (try FileFingerprint.of(path: path)), "the file as it is once it stopped growing")
        #expect(settled.size == 2_000_000 + 4 * 4096)
    }
}

import CoplayCore
import Glibc
import Synchronization
import Testing

@testable import CoplayRuntime

/// A child's own output (mpv's audio libraries, at a party on a machine without a sound card)
/// is kept out of the person's terminal: its first line is said once, as text, and the rest is
/// read and dropped, so that the child never blocks on a full pipe.
@Suite struct ChildOutputTests {
    final class Said: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
    }

    private func run(_ script: String, name: String, said: Said) throws -> ChildOutput {
        let output = try ChildOutput(name: name, hint: "a hint") { said.append($0) }
        let child = try ChildProcess.spawn(["sh", "-c", script], output: output)
        for _ in 0..<500 where !output.lines.ended { usleep(10_000) }
        child.waitForExit(patience: .seconds(2))
        return output
    }

    @Test func theFirstLineIsSaidOnce_asText_andTheRestIsReadAndDropped() throws {
        let said = Said()
        let name = "child-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        // 2,000 lines of 100 bytes: 200 KB, three times a pipe's buffer, that a child writing
        // into an unread pipe would block on.
        let output = try run(
            #"printf '\033[31mALSA lib pcm.c: Unknown PCM default\r\n' >&2; i=0; while [ $i -lt 2000 ]; do printf '%099d\n' $i; i=$((i+1)); done"#,
            name: name, said: said)
        #expect(output.lines.ended && output.lines.count == 2001, "\(output.lines)")
        let lines = said.lines.withLock { $0 }
        #expect(
            lines == ["coplay: \(name) said (shown once; a hint): [31mALSA lib pcm.c: Unknown PCM default"], "\(lines)")
        // Another child of the same name (an interstitial's mpv) says nothing more.
        _ = try run("echo again >&2", name: name, said: said)
        #expect(said.lines.withLock { $0.count } == 1)
    }

    @Test func aLongLineIsCut_andALastLineWithoutItsNewlineIsSaid() throws {
        let said = Said()
        let name = "child-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        _ = try run("printf '%0500d' 7", name: name, said: said)
        let lines = said.lines.withLock { $0 }
        #expect(lines.count == 1)
        let shown = lines.first?.split(separator: ":").last.map { $0.dropFirst() } ?? ""
        #expect(shown.count == Settings.ChildOutput.lineMax, "\(shown.count)")
    }
}

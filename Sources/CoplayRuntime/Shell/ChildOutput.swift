import CoplayCore
import Glibc
import Synchronization

extension Settings {
    /// What the agent keeps of a child's own output (`ChildOutput`).
    public enum ChildOutput {
        /// The longest line of it said to the person: one line of a terminal, with room for
        /// the words around it (an ALSA or JACK complaint fits; a dump of a stack does not).
        public static let lineMax = 240
        /// Bytes read at a time from the child's pipe, then dropped but for the first line.
        public static let chunkBytes = 4096
    }
}

/// A child's standard output and error (mpv's), read by the agent rather than shared with its
/// terminal: the audio libraries under mpv write to them directly, past `--no-terminal` (ALSA,
/// JACK and PipeWire on a machine without a sound card, many lines a second at a party), and a
/// person reading the agent's terminal needs coplay's own lines. The first line is said once,
/// with where the rest can be kept; the rest is counted and dropped, so the pipe never fills and
/// the child never blocks on it.
final class ChildOutput: Sendable {
    let name: String
    private let say: @Sendable (String) -> Void
    /// The pipe's read end, the agent's.
    private let readEnd: Int32
    /// Its write end, the child's 1 and 2: closed here once the child is started (`started`),
    /// so that the child's exit is the end of the pipe.
    private let writeEnd: Atomic<Int32>
    private let seen = Mutex<(lines: Int, ended: Bool)>((0, false))
    /// The children whose output was said already, by name: once in the agent's life (the
    /// interstitials' mpv say nothing more than the main one did).
    private static let said = Mutex<Set<String>>([])

    /// `hint`: how to keep all of it (for mpv: its `log-file` option).
    init(name: String, hint: String, say: @escaping @Sendable (String) -> Void = StandardStreams.writeError)
        throws(SocketError)
    {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SocketError("pipe") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // the child gets its end by dup2 alone
        self.name = name
        readEnd = ends[0]
        writeEnd = Atomic(ends[1])
        self.say = { line in
            guard Self.said.withLock({ $0.insert(name).inserted }) else { return }
            say("coplay: \(name) said (shown once; \(hint)): \(line)")
        }
    }

    deinit {
        close(readEnd)
        closeWriteEnd()
    }

    /// The descriptor to give the child as its standard output and error.
    var childEnd: Int32 { writeEnd.load(ordering: .acquiring) }

    private func closeWriteEnd() {
        let end = writeEnd.exchange(-1, ordering: .acquiringAndReleasing)
        if end >= 0 { close(end) }
    }

    /// Lines the child wrote so far, and whether it closed its end (it exited).
    var lines: (count: Int, ended: Bool) { seen.withLock { ($0.lines, $0.ended) } }

    /// The child is started: the agent lets go of the write end and reads the child's output on
    /// a thread of its own until the child closes it.
    func started() {
        closeWriteEnd()
        BackgroundThread.start { [self] in
            var first: [UInt8] = []
            var said = false
            var buffer = [UInt8](repeating: 0, count: Settings.ChildOutput.chunkBytes)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                var newlines = 0
                for byte in buffer[..<count] {
                    if byte == UInt8(ascii: "\n") {
                        newlines += 1
                        if !said, !first.isEmpty {
                            said = true
                            say(Self.shown(first))
                        }
                    } else if !said, first.count < Settings.ChildOutput.lineMax {
                        first.append(byte)
                    }
                }
                seen.withLock { $0.lines += newlines }
            }
            if !said, !first.isEmpty { say(Self.shown(first)) }
            seen.withLock { $0.ended = true }
        }
    }

    /// The line as text for a terminal: its control characters (an ANSI colour, a carriage
    /// return) as spaces, so that a child cannot drive the person's terminal through the agent.
    static func shown(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
            .trimmingSpaces()
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var text = Substring(self)
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return String(text)
    }
}

import Dispatch
import Glibc
import Synchronization

/// The signals the `coplay` agent handles (SIGINT and SIGTERM: leave and exit; SIGHUP: reread
/// the key file), turned into inputs of the shell's loop; SIGPIPE is ignored (a closed control
/// client or player must not end the agent).
///
/// A handler of its own writes each signal's number into a pipe (the self-pipe: `write` is safe
/// in a handler), and the pipe's reader feeds the loop. libdispatch's signal sources lost a
/// SIGINT now and then on Linux under load (the agent ran on, `MpvAgentTests`); a byte in a pipe
/// stays there until it is read. The handlers are installed before `init` returns, so a signal
/// that comes after it is not lost; an exec'd child (mpv) gets the default actions back.
final class Signals {
    private let reader: DispatchSourceRead

    init(into feed: AsyncStream<ShellInput>.Continuation) {
        signal(SIGPIPE, SIG_IGN)
        var ends: [Int32] = [-1, -1]
        // Non-blocking: a burst of signals that fills the pipe drops bytes rather than blocking a
        // handler (one SIGINT is as good as many). Close-on-exec: mpv does not inherit it.
        guard pipe(&ends) == 0 else { preconditionFailure("pipe for the signals failed: errno \(errno)") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        signalPipeWriteEnd.store(ends[1], ordering: .releasing)
        let readEnd = ends[0]
        reader = DispatchSource.makeReadSource(
            fileDescriptor: readEnd, queue: DispatchQueue(label: "coplay-signals", qos: .userInteractive))
        reader.setEventHandler {
            var bytes = [UInt8](repeating: 0, count: 16)
            while true {
                let count = read(readEnd, &bytes, bytes.count)
                guard count > 0 else { break }
                for byte in bytes[0..<count] { feed.yield(.signal(Int32(byte))) }
            }
        }
        reader.resume()
        for number in [SIGINT, SIGTERM, SIGHUP] { signal(number, writeSignalToPipe) }
    }
}

/// The write end of the signals' pipe (-1 until `Signals` made it), read by the handler.
private let signalPipeWriteEnd = Atomic<Int32>(-1)

/// The handler: the signal's number, one byte, into the pipe. Only async-signal-safe calls; errno
/// is kept as the interrupted code left it.
private func writeSignalToPipe(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipeWriteEnd.load(ordering: .acquiring), &byte, 1)
    errno = saved
}

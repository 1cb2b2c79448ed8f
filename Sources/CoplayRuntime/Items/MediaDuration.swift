import CoplayCore
import Glibc

/// A local film's length, as ffprobe (Debian's ffmpeg) reads it from its container: what a share
/// of a file carries as its duration, and what tells another encode of the same film from a
/// different film of the same name (`OwnCopies`). Nil where ffprobe is not installed, fails, takes
/// longer than `Settings.OwnCopies.probeTimeout`, or prints anything but a length.
enum MediaDuration {
    static func probe(_ path: String) -> Double? {
        guard !path.isEmpty, path.utf8.count < 4096,
            let answer = answer(
                of: [
                    "ffprobe", "-v", "quiet", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1",
                    "-o", "/dev/fd/\(ChildProcess.connectionDescriptor)", "file:" + path,
                ], bytesMax: Settings.OwnCopies.probeAnswerMax, timeout: Settings.OwnCopies.probeTimeout)
        else { return nil }
        let text = String(decoding: answer, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first
        guard let text, let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= WireFormat.positionMax
        else { return nil }
        return seconds
    }

    /// What a program of ffmpeg's (`command`, told to write to `/dev/fd/3`) writes there: at most
    /// `bytesMax` bytes, within `timeout`; nil when it cannot start. Its complaints go to the
    /// agent's standard error (`-v quiet` or `-v error` keeps them few).
    static func answer(of command: [String], bytesMax: Int, timeout: Duration) -> [UInt8]? {
        // A pipe, not a socket pair: a socket cannot be opened again by its /dev/fd name.
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { close(ends[0]) }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(command, connection: ends[1])
        } catch {
            close(ends[1])
            return nil
        }
        close(ends[1])
        var answer: [UInt8] = []
        let deadline = AgentClock.read(CLOCK_MONOTONIC) + timeout.nanoseconds
        var buffer = [UInt8](repeating: 0, count: 65_536)
        reading: while answer.count < bytesMax {
            let left = deadline - AgentClock.read(CLOCK_MONOTONIC)
            guard left > 0 else { break }
            var poller = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(max(1, min(left / 1_000_000, 60_000)))) > 0 else { continue }
            let count = read(ends[0], &buffer, min(buffer.count, bytesMax - answer.count))
            switch count {
            case ..<0 where errno == EINTR: continue
            case 1...: answer += buffer[0..<count]
            default: break reading  // its end closed: it has answered
            }
        }
        // Its answer is in (or its time is up): it ends now. A child stuck in a read the kernel
        // does not interrupt (a hung network share) is left to end by itself, never waited for.
        if child.exitStatus() == nil { kill(child.pid, SIGKILL) }
        for _ in 0..<20 where child.exitStatus() == nil { usleep(10_000) }
        return answer
    }
}

import Glibc

/// Unbuffered writes of whole lines to standard output and error, one `write(2)` per line, so
/// lines from one agent never interleave mid-line and nothing waits in a buffer.
public enum StandardStreams {
    public static func writeOutput(_ line: String) { write(line, to: STDOUT_FILENO) }
    public static func writeError(_ line: String) { write(line, to: STDERR_FILENO) }

    private static func write(_ line: String, to fd: Int32) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return  // a closed pipe: the reader is gone, and the agent carries on
            }
            offset += written
        }
    }
}

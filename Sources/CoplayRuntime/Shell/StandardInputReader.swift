import Glibc

/// Reads standard input on its own thread and delivers complete lines. A line longer than
/// `lineBytesMax` is delivered cut to `lineBytesMax + 1` bytes (so the parser rejects it with
/// its length) and the rest of it is discarded: memory stays bounded whatever arrives.
enum StandardInputReader {
    static func start(lineBytesMax: Int, deliver: @escaping @Sendable (ShellInput) -> Void) {
        BackgroundThread.start {
            var pending: [UInt8] = []
            var overflowing = false
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 {
                    if !pending.isEmpty { deliver(.line(String(decoding: pending, as: UTF8.self))) }
                    deliver(.endOfInput)
                    return
                }
                for byte in chunk[0..<count] {
                    if byte == UInt8(ascii: "\n") {
                        deliver(.line(String(decoding: pending, as: UTF8.self)))
                        pending.removeAll(keepingCapacity: true)
                        overflowing = false
                    } else if !overflowing {
                        pending.append(byte)
                        if pending.count > lineBytesMax { overflowing = true }
                    }
                }
            }
        }
    }
}

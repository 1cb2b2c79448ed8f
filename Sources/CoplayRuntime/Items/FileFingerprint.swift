import CoplayCore
import Glibc

/// A local file's `Fingerprint`, read with `pread`: its size from `fstat`, then the windows the
/// core names. A file that changes while it is read (its size or modification time differ after
/// the windows) is read again, up to `attempts` times in all, and then refused: a download still
/// being written is not yet the film it will be.
public enum FileFingerprint {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public static let attempts = 3

    public static func of(path: String) throws(Failure) -> Fingerprint { try of(path: path, afterWindow: { _ in }) }

    /// The same, calling `afterWindow` with each window's number once it is read (a test
    /// changes the file there, deterministically, as a download being written would).
    static func of(path: String, afterWindow: (Int) -> Void) throws(Failure) -> Fingerprint {
        // Non-blocking: a named pipe among a person's films must not hold the agent until a writer comes.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        for _ in 0..<attempts {
            let before = try status(descriptor, path)
            guard (before.st_mode & S_IFMT) == S_IFREG else {
                throw Failure(description: "\(path) is not a regular file")
            }
            guard before.st_size >= 0, UInt64(before.st_size) <= Fingerprint.sizeMax else {
                throw Failure(description: "\(path) is larger than a fingerprint names (1 PiB)")
            }
            let size = UInt64(before.st_size)
            var windows: [[UInt8]] = []
            var whole = true
            for (number, window) in Fingerprint.windows(size: size).enumerated() {
                defer { afterWindow(number) }
                var bytes = [UInt8](repeating: 0, count: window.length)
                var done = 0
                while done < window.length {
                    let count = bytes.withUnsafeMutableBytes { buffer in
                        pread(
                            descriptor, buffer.baseAddress! + done, window.length - done,
                            off_t(window.offset) + off_t(done))
                    }
                    if count < 0, errno == EINTR { continue }
                    guard count >= 0 else {
                        throw Failure(description: "cannot read \(path): \(String(cString: strerror(errno)))")
                    }
                    if count == 0 { break }  // shorter than it was: changed
                    done += count
                }
                guard done == window.length else {
                    whole = false
                    break
                }
                windows.append(bytes)
            }
            let after = try status(descriptor, path)
            guard whole, after.st_size == before.st_size, after.st_mtim.tv_sec == before.st_mtim.tv_sec,
                after.st_mtim.tv_nsec == before.st_mtim.tv_nsec
            else { continue }
            do { return try Fingerprint(size: size, windows: windows) } catch { continue }
        }
        throw Failure(description: "\(path) changed while it was read, \(attempts) times: is it still being written?")
    }

    private static func status(_ descriptor: Int32, _ path: String) throws(Failure) -> stat {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw Failure(description: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        return info
    }
}

import CoplayCore
import Glibc

/// The group key file (`--key-file`): one key per line as hex, the current one first and at most
/// one older one still accepted; `coplay keygen` writes a fresh one from the kernel's random source.
public enum KeyFile {
    /// The keys of the file at `path`, or why it cannot be used.
    /// The largest key file read: keys in hex with comments are far smaller.
    static let bytesMax = 64 * 1024

    public static func load(_ path: String) -> Result<[[UInt8]], UsageError> {
        guard let bytes = Dump.readAll(path, bytesMax: Self.bytesMax) else {
            return .failure(
                UsageError(message: "cannot read the key file '\(path)': \(String(cString: strerror(errno)))"))
        }
        // A key file is a few lines of hex: anything far larger is some other file (the error it
        // got was the last system call's, "Inappropriate ioctl for device").
        guard bytes.count <= Self.bytesMax else {
            return .failure(
                UsageError(
                    message:
                        "'\(path)' is larger than a key file (at most \(Self.bytesMax / 1024) KiB of hex lines; coplay keygen writes one)"
                ))
        }
        return GroupKeys.parse(keyFile: String(decoding: bytes, as: UTF8.self)).mapError {
            UsageError(message: "key file '\(path)': \($0.message)")
        }
    }

    /// A new key file's text: a comment and one random 32-byte key.
    public static func generate() -> String {
        var random = SystemRandomNumberGenerator()  // getrandom(2) on Linux
        let key = (0..<GroupKeys.keyBytesMin).map { _ in UInt8.random(in: 0...255, using: &random) }
        return "# coplay group key: give every agent of the group this file (--key-file); keep it secret\n"
            + Hex.encode(key)
    }
}

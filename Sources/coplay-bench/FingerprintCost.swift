import CoplayCore
import CoplayRuntime
import Foundation
import Glibc

/// `coplay-bench fingerprint`: how long the agent takes to know a film by its content. A real
/// file of `gib` GiB (written here, every MiB of it different) is fingerprinted `runs` times with
/// its pages dropped from the page cache before each (`POSIX_FADV_DONTNEED` after `fsync`: the 16
/// windows come from the disk), then once from the cache; a 50 GiB sparse file beside it. Prints
/// the figures; removes what it wrote.
enum FingerprintCost {
    static func run(gib: Int, runs: Int, directory: String) throws {
        let path = directory + "/coplay-fingerprint-\(getpid()).bin"
        defer { unlink(path) }
        let size = UInt64(gib) << 30
        let written = ContinuousClock.now
        try write(path, size: size)
        print(
            "wrote a \(gib) GiB file in \(String(format: "%.1f", milliseconds(ContinuousClock.now - written) / 1000)) s at \(path) (removed at the end)"
        )
        var cold: [Double] = []
        var fingerprint: Fingerprint?
        for _ in 0..<runs {
            try dropFromCache(path)
            let started = ContinuousClock.now
            fingerprint = try FileFingerprint.of(path: path)
            cold.append(milliseconds(ContinuousClock.now - started))
        }
        let started = ContinuousClock.now
        let warm = try FileFingerprint.of(path: path)
        let warmTime = milliseconds(ContinuousClock.now - started)
        guard warm == fingerprint else { throw Failure("the file's fingerprint changed between readings") }
        cold.sort()
        print("fingerprint of the \(gib) GiB file: \(warm.text)")
        print(
            String(
                format: "  from disk (page cache dropped), %d runs: p50 %.2f ms, max %.2f ms; from the cache %.2f ms",
                runs, cold[cold.count / 2], cold.last!, warmTime))
        print("  target ≤ 100 ms: \(cold.last! <= 100 ? "met" : "MISSED") (the slowest run)")

        let sparse = directory + "/coplay-fingerprint-sparse-\(getpid()).bin"
        defer { unlink(sparse) }
        let descriptor = open(sparse, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0, ftruncate(descriptor, off_t(50) << 30) == 0 else {
            throw Failure("cannot make a sparse file at \(sparse)")
        }
        close(descriptor)
        let sparseStarted = ContinuousClock.now
        _ = try FileFingerprint.of(path: sparse)
        print(String(format: "  a 50 GiB sparse file: %.2f ms", milliseconds(ContinuousClock.now - sparseStarted)))
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// `size` bytes, 8 MiB at a time, each MiB starting with its own number (the rest random).
    private static func write(_ path: String, size: UInt64) throws {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failure("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let chunk = 8 << 20
        var buffer = (0..<chunk).map { _ in UInt8.random(in: 0...255) }
        var offset: UInt64 = 0
        while offset < size {
            for mebibyte in 0..<(chunk >> 20) {
                withUnsafeBytes(of: (offset >> 20) + UInt64(mebibyte)) { number in
                    buffer.replaceSubrange((mebibyte << 20)..<((mebibyte << 20) + 8), with: number)
                }
            }
            let count = Int(min(UInt64(chunk), size - offset))
            var done = 0
            while done < count {
                let wrote = buffer.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + done, count - done) }
                guard wrote > 0 else { throw Failure("cannot write \(path): \(String(cString: strerror(errno)))") }
                done += wrote
            }
            offset += UInt64(count)
        }
        guard fsync(descriptor) == 0 else { throw Failure("cannot sync \(path)") }
    }

    private static func dropFromCache(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure("cannot open \(path)") }
        defer { close(descriptor) }
        _ = fdatasync(descriptor)
        guard posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED) == 0 else {
            throw Failure("cannot drop \(path) from the page cache")
        }
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }
}

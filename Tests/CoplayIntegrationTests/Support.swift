import CoplayHarness
import Foundation
import Glibc
import Synchronization

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
let coplay = Locations.coplayExecutable(packageRoot: packageRoot)
let lanTool = packageRoot.appendingPathComponent("Tools/lan").path
let isRoot = getuid() == 0

/// A group port of this test process's own, so concurrent runs do not hear each other.
func privatePort(_ salt: Int) -> String { String(41_000 + Int(getpid() % 10_000) * 2 + salt) }

private let lansMade = Mutex(0)

/// A name for a new LAN, unique in this process (suites run in parallel): "ci" + pid + a letter.
func newLANPrefix() -> String {
    let number = lansMade.withLock { count in
        count += 1
        return count
    }
    return "ci\(getpid() % 10_000)\(Character(UnicodeScalar(UInt8(96 + number % 26))))"
}

/// A LAN of network namespaces that exists for the duration of `body` and is always removed.
func withLAN<T>(hosts: Int, _ body: (_ prefix: String) throws -> T) throws -> T {
    let prefix = newLANPrefix()
    let environment = ["LAN_PREFIX": prefix]
    defer { _ = try? Locations.run(lanTool, ["down"], environment: environment) }
    let (status, output) = try Locations.run(lanTool, ["up", String(hosts)], environment: environment)
    guard status == 0 else { throw LANError(description: "Tools/lan up failed: \(output)") }
    return try body(prefix)
}

struct LANError: Error, CustomStringConvertible { var description: String }

/// Sends raw datagrams to the default group address on loopback, as a hostile or broken sender would.
final class GroupSender {
    private let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    private var group = sockaddr_in()

    init(port: UInt16) {
        var loopback = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &loopback, socklen_t(MemoryLayout<in_addr>.size))
        group.sin_family = sa_family_t(AF_INET)
        group.sin_port = port.bigEndian
        group.sin_addr.s_addr = UInt32(0xEFFF_4D01).bigEndian
    }

    deinit { close(fd) }

    func send(_ payload: [UInt8]) {
        _ = payload.withUnsafeBytes { bytes in
            withUnsafePointer(to: &group) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }
}

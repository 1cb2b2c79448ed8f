import CoplayCore
import Foundation
import Glibc

/// `coplay-bench flood-sender PORT RATE SECONDS SESSION`, run by `coplay-bench flood` inside its own
/// network namespace: sends RATE datagrams a second for SECONDS to the multicast group on `lo`,
/// and stops by itself. Half are junk; half are well-formed hellos from invented peers (a
/// different one each time), the flood of fake peers that once made an honest pause get lost.
enum FloodSender {
    static func run(port: UInt16, rate: Int, seconds: Int, session: String) -> Never {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var loopback = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        setsockopt(descriptor, Int32(IPPROTO_IP), IP_MULTICAST_IF, &loopback, socklen_t(MemoryLayout<in_addr>.size))
        var group = sockaddr_in()
        group.sin_family = sa_family_t(AF_INET)
        group.sin_port = port.bigEndian
        group.sin_addr.s_addr = UInt32(0xEFFF_4D01).bigEndian
        let junk = Array("flood: not coplay at all, just noise on the port".utf8)
        var random = SystemRandomNumberGenerator()
        let start = ContinuousClock.now
        var sent = 0
        while ContinuousClock.now - start < .seconds(seconds) {
            let due = Int((ContinuousClock.now - start) / .seconds(1) * Double(rate))
            while sent < due {
                let bytes: [UInt8] =
                    sent % 2 == 0
                    ? junk
                    : WireFormat.encode(
                        Datagram(
                            session: SessionID(name: session),
                            sender: Member(id: PeerID(random.next()), incarnation: Incarnation(1)), sequence: 1,
                            payload: .hello(Announcement(unicastPort: 9, name: "fake"))))
                _ = bytes.withUnsafeBytes { raw in
                    withUnsafePointer(to: &group) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(
                                descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)
                            )
                        }
                    }
                }
                sent += 1
            }
            usleep(2_000)
        }
        print("flood-sender: \(sent) datagrams in \(seconds) s")
        exit(0)
    }
}

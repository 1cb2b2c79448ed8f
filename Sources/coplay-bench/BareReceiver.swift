import CoplayHarness
import Foundation
import Glibc

/// `coplay-bench bare-receiver GROUP PORT SECONDS`, run by `coplay-bench scale` inside its namespace
/// during the idle window: the floor under an agent's cost per received datagram. It joins the
/// group on `lo` as an agent does (the same port, kernel receive timestamps) and does nothing but
/// wait in `poll` and read each datagram with `recvmsg` until the socket is empty, for SECONDS;
/// then prints `bare-receiver DATAGRAMS CPU_NANOS` (its own CPU from after the setup, user and
/// system) and stops by itself.
enum BareReceiver {
    static func run(group: in_addr, port: UInt16, seconds: Int) -> Never {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var on: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        for option in [SO_REUSEADDR, SO_REUSEPORT, SO_TIMESTAMPNS] {
            setsockopt(descriptor, SOL_SOCKET, option, &on, size)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = group
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var membership = ip_mreqn()
        membership.imr_multiaddr = group
        membership.imr_ifindex = Int32(if_nametoindex("lo"))
        let joined = setsockopt(
            descriptor, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &membership, socklen_t(MemoryLayout<ip_mreqn>.size))
        guard descriptor >= 0, bound == 0, joined == 0 else {
            print("bare-receiver: cannot join the group on port \(port) of lo (errno \(errno))")
            exit(1)
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var control = [UInt8](repeating: 0, count: 256)
        var received = 0
        let cpuFrom = Benchmarks.ownCPUSeconds()
        let end = ContinuousClock.now + .seconds(seconds)
        while case let left = end - ContinuousClock.now, left > .zero {
            // Woken only by datagrams (and once at the end): every wake-up is one they cost.
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, Int32(left / .milliseconds(1)) + 1)
            while read(descriptor, into: &buffer, control: &control) { received += 1 }
        }
        print("bare-receiver \(received) \(Int64((Benchmarks.ownCPUSeconds() - cpuFrom) * 1e9))")
        exit(0)
    }

    /// One `recvmsg` without waiting; false when the socket is empty.
    private static func read(_ descriptor: Int32, into buffer: inout [UInt8], control: inout [UInt8]) -> Bool {
        buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { control in
                var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vector in
                    var header = msghdr()
                    header.msg_iov = vector
                    header.msg_iovlen = 1
                    header.msg_control = control.baseAddress
                    header.msg_controllen = control.count
                    return recvmsg(descriptor, &header, Int32(MSG_DONTWAIT)) >= 0
                }
            }
        }
    }
}

import CoplayCore
import Glibc
import Synchronization

/// An integer shared between a receive thread and the shell.
final class SharedCounter: Sendable {
    private let storage = Atomic<Int>(0)
    var value: Int {
        get { storage.load(ordering: .relaxed) }
        set { storage.store(newValue, ordering: .relaxed) }
    }
}

/// A socket call that failed, with what was being attempted and the system's reason.
public struct SocketError: Error, CustomStringConvertible {
    public var operation: String
    public var code: Int32
    public init(_ operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }
    public var description: String { "\(operation): \(String(cString: strerror(code)))" }
}

/// The two UDP sockets of an agent:
/// - the group socket, bound to the multicast group and port (shared with every agent on this
///   host through SO_REUSEADDR), joined to the group on the chosen interface; it only receives;
/// - the unicast socket, bound to the interface's address and an ephemeral port (or `--port`), which sends
///   everything (multicast with TTL 1 and loopback on, so agents on one host hear each other)
///   and receives the unicast traffic: hello replies and clock probes.
public final class UDPTransport: Sendable {
    public let group: Endpoint
    /// The unicast socket's address and port.
    public let local: Endpoint
    private let groupSocket: Int32
    private let unicastSocket: Int32
    /// The kernel's count of datagrams it dropped for each socket because its receive buffer
    /// was full (SO_RXQ_OVFL), as last reported with a received datagram.
    private let kernelDropsGroup = SharedCounter()
    private let kernelDropsUnicast = SharedCounter()

    /// Datagrams the kernel dropped before coplay could read them (a flood or a stall).
    public var kernelDrops: Int { kernelDropsGroup.value + kernelDropsUnicast.value }

    /// Receive buffer asked for on each socket (the kernel may grant less).
    public static let receiveBufferBytes: Int32 = 1 << 20

    /// Opens and configures both sockets. `interface` nil lets the kernel choose (the
    /// interface of the default route); `port` 0 gives the unicast socket an ephemeral port.
    public init(group: Endpoint, interface: NetworkInterface?, port: UInt16 = 0) throws(SocketError) {
        guard group.address >> 28 == 0xE else {
            throw SocketError("group \(group.addressText) is not a multicast address (224.0.0.0/4)", code: EINVAL)
        }
        self.group = group
        let interfaceAddress = interface?.address ?? 0
        let groupSocket = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard groupSocket >= 0 else { throw SocketError("socket") }
        let unicastSocket = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard unicastSocket >= 0 else {
            Glibc.close(groupSocket)
            throw SocketError("socket")
        }
        do throws(SocketError) {
            try Self.set(groupSocket, SOL_SOCKET, SO_REUSEADDR, Int32(1), "SO_REUSEADDR")
            try Self.bind(
                groupSocket, Endpoint(address: group.address, port: group.port), what: "bind to group \(group)")
            var membership = ip_mreqn()
            membership.imr_multiaddr.s_addr = group.address.bigEndian
            membership.imr_address.s_addr = interfaceAddress.bigEndian
            membership.imr_ifindex = interface?.index ?? 0
            try Self.set(
                groupSocket, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, membership,
                "join group \(group.addressText) on \(interface?.name ?? "the default interface")")
            // Receive only this group's datagrams, not those of other groups joined on this host.
            try Self.set(groupSocket, Int32(IPPROTO_IP), IP_MULTICAST_ALL, Int32(0), "IP_MULTICAST_ALL")

            try Self.bind(
                unicastSocket, Endpoint(address: interfaceAddress, port: port),
                what: port == 0 ? "bind unicast socket" : "bind unicast socket to port \(port) (--port)")
            var outgoing = ip_mreqn()
            outgoing.imr_address.s_addr = interfaceAddress.bigEndian
            outgoing.imr_ifindex = interface?.index ?? 0
            try Self.set(unicastSocket, Int32(IPPROTO_IP), IP_MULTICAST_IF, outgoing, "IP_MULTICAST_IF")
            try Self.set(unicastSocket, Int32(IPPROTO_IP), IP_MULTICAST_TTL, UInt8(1), "IP_MULTICAST_TTL")
            try Self.set(unicastSocket, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, UInt8(1), "IP_MULTICAST_LOOP")
            var bound = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let status = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(unicastSocket, $0, &length) }
            }
            guard status == 0 else { throw SocketError("getsockname") }
            local = Endpoint(address: UInt32(bigEndian: bound.sin_addr.s_addr), port: UInt16(bigEndian: bound.sin_port))
        } catch {
            Glibc.close(groupSocket)
            Glibc.close(unicastSocket)
            throw error
        }
        self.groupSocket = groupSocket
        self.unicastSocket = unicastSocket
    }

    private let closed = SharedCounter()

    /// Stops the receive threads (a blocked receive returns at once) and closes the sockets.
    public func close() {
        guard closed.value == 0 else { return }
        closed.value = 1
        shutdown(groupSocket, Int32(SHUT_RDWR))
        shutdown(unicastSocket, Int32(SHUT_RDWR))
    }

    deinit {
        close()
        Glibc.close(groupSocket)
        Glibc.close(unicastSocket)
    }

    /// Sends one datagram; returns the error instead of throwing so a lost send never stops the agent.
    @discardableResult
    public func send(_ bytes: [UInt8], to destination: Endpoint) -> SocketError? {
        var address = Self.socketAddress(destination)
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        unicastSocket, buffer.baseAddress, buffer.count, 0, $0,
                        socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return sent == bytes.count ? nil : SocketError("send to \(destination)")
    }

    /// Starts one thread per socket that receives datagrams until the process ends and hands
    /// each to `deliver` with its arrival time. The arrival time is the kernel's receive
    /// timestamp (SO_TIMESTAMPNS) where available, so a thread scheduled late does not make the
    /// datagram look late; the monotonic reading is the current one less the datagram's age.
    /// Datagrams longer than `bytesMax` are cut to `bytesMax + 1` bytes (and so rejected).
    public func startReceiving(
        clock: AgentClock, bytesMax: Int,
        deliver:
            @escaping @Sendable (_ bytes: [UInt8], _ source: Endpoint, _ stamp: Timestamp, _ viaGroup: Bool) -> Void
    ) {
        for fd in [groupSocket, unicastSocket] {
            _ = try? Self.set(fd, SOL_SOCKET, SO_TIMESTAMPNS, Int32(1), "SO_TIMESTAMPNS")
            _ = try? Self.set(fd, SOL_SOCKET, SO_RXQ_OVFL, Int32(1), "SO_RXQ_OVFL")
            _ = try? Self.set(fd, SOL_SOCKET, SO_RCVBUF, Self.receiveBufferBytes, "SO_RCVBUF")
            let drops = fd == groupSocket ? kernelDropsGroup : kernelDropsUnicast
            let viaGroup = fd == groupSocket
            BackgroundThread.start {
                var buffer = [UInt8](repeating: 0, count: bytesMax + 1)
                var control = [UInt8](repeating: 0, count: 64)
                while true {
                    var source = sockaddr_in()
                    var ancillary = Ancillary()
                    let count = buffer.withUnsafeMutableBytes { raw in
                        control.withUnsafeMutableBytes { controlRaw in
                            withUnsafeMutablePointer(to: &source) { sourcePointer in
                                var vector = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
                                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                                    var message = msghdr()
                                    message.msg_name = UnsafeMutableRawPointer(sourcePointer)
                                    message.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
                                    message.msg_iov = vectorPointer
                                    message.msg_iovlen = 1
                                    message.msg_control = controlRaw.baseAddress
                                    message.msg_controllen = controlRaw.count
                                    let received = recvmsg(fd, &message, 0)
                                    if received >= 0 {
                                        ancillary = Self.ancillary(controlRaw, length: Int(message.msg_controllen))
                                    }
                                    return received
                                }
                            }
                        }
                    }
                    if self.closed.value != 0 { return }
                    if count < 0 {
                        if errno == EINTR || errno == EAGAIN { continue }
                        return  // the socket was closed
                    }
                    if let overflow = ancillary.kernelDrops { drops.value = overflow }
                    var stamp = clock.now()
                    if let kernelNanos = ancillary.receivedAtNanos {
                        let ageNanos = max(0, AgentClock.trueUnixNanosNow() - kernelNanos)
                        stamp = Timestamp(
                            monotonic: MonotonicInstant(nanos: stamp.monotonic.nanos - ageNanos),
                            wall: WallInstant(unixNanos: stamp.wall.unixNanos - ageNanos))
                    }
                    let from = Endpoint(
                        address: UInt32(bigEndian: source.sin_addr.s_addr), port: UInt16(bigEndian: source.sin_port))
                    deliver(Array(buffer[0..<count]), from, stamp, viaGroup)
                }
            }
        }
    }

    /// What the kernel attached to a received datagram.
    struct Ancillary {
        /// SCM_TIMESTAMPNS: CLOCK_REALTIME nanoseconds at arrival.
        var receivedAtNanos: Int64?
        /// SO_RXQ_OVFL: datagrams dropped on this socket so far.
        var kernelDrops: Int?
    }

    /// Parses the control messages. Layout on Linux: cmsghdr { size_t len; int level; int type; }
    /// then the data, aligned to size_t.
    private static func ancillary(_ control: UnsafeMutableRawBufferPointer, length: Int) -> Ancillary {
        let word = MemoryLayout<Int>.size
        let dataOffset = (word + 2 * MemoryLayout<Int32>.size + word - 1) / word * word
        var found = Ancillary()
        var offset = 0
        while offset + dataOffset <= length {
            let messageLength = control.load(fromByteOffset: offset, as: Int.self)
            let level = control.load(fromByteOffset: offset + word, as: Int32.self)
            let type = control.load(fromByteOffset: offset + word + 4, as: Int32.self)
            guard messageLength >= dataOffset, offset + messageLength <= length else { break }
            if level == SOL_SOCKET, type == SO_TIMESTAMPNS, messageLength >= dataOffset + MemoryLayout<timespec>.size {
                let seconds = control.load(fromByteOffset: offset + dataOffset, as: Int.self)
                let nanoseconds = control.load(fromByteOffset: offset + dataOffset + word, as: Int.self)
                found.receivedAtNanos = Int64(seconds) * 1_000_000_000 + Int64(nanoseconds)
            } else if level == SOL_SOCKET, type == SO_RXQ_OVFL, messageLength >= dataOffset + 4 {
                found.kernelDrops = Int(control.loadUnaligned(fromByteOffset: offset + dataOffset, as: UInt32.self))
            }
            offset += (messageLength + word - 1) / word * word
        }
        return found
    }

    // MARK: Helpers

    private static func socketAddress(_ endpoint: Endpoint) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = endpoint.port.bigEndian
        address.sin_addr.s_addr = endpoint.address.bigEndian
        return address
    }

    private static func bind(_ fd: Int32, _ endpoint: Endpoint, what: String) throws(SocketError) {
        var address = socketAddress(endpoint)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else { throw SocketError(what) }
    }

    private static func set<Value: BitwiseCopyable>(
        _ fd: Int32, _ level: Int32, _ option: Int32, _ value: Value, _ what: String
    ) throws(SocketError) {
        let status = withUnsafeBytes(of: value) { setsockopt(fd, level, option, $0.baseAddress, socklen_t($0.count)) }
        guard status == 0 else { throw SocketError(what) }
    }
}

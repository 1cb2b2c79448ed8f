import CoplayCore
import Glibc
import Synchronization

/// An integer shared between threads (the event loop, and whoever closes the transport).
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
    /// `code` 0: the operation says it all.
    public var description: String { code == 0 ? operation : "\(operation): \(String(cString: strerror(code)))" }
}

/// The two UDP sockets of an agent, IPv4 or IPv6 as the group's address is:
/// - the group socket, bound to the multicast group and port (shared with every agent on this
///   host through SO_REUSEADDR), joined to the group on the chosen interface; it only receives;
/// - the unicast socket, bound to the interface's address (IPv4; the unspecified address for
///   IPv6) and an ephemeral port (or `--port`), which sends everything (multicast with TTL or
///   hop limit 1 and loopback on, so agents on one host hear each other) and receives the
///   unicast traffic: hello replies, clock probes, repairs, and `--peer` copies.
public final class UDPTransport: Sendable {
    public let group: Endpoint
    /// The unicast socket's address and port.
    public let local: Endpoint
    private let groupSocket: Int32
    private let unicastSocket: Int32
    /// The interface's index: IPv6 link-local destinations are reached through it.
    private let interfaceIndex: UInt32
    /// The kernel's count of datagrams it dropped for each socket because its receive buffer
    /// was full (SO_RXQ_OVFL), as last reported with a received datagram.
    private let kernelDropsGroup = SharedCounter()
    private let kernelDropsUnicast = SharedCounter()

    /// Datagrams and bytes sent, and sends that failed.
    private let sent = (datagrams: SharedCounter(), bytes: SharedCounter(), errors: SharedCounter())

    /// Datagrams the kernel dropped before coplay could read them (a flood or a stall).
    public var kernelDrops: Int { kernelDropsGroup.value + kernelDropsUnicast.value }

    /// What the sockets did, for `status` (the relay's figures are added by the shell).
    var statistics: EventFormatter.WireStatistics {
        var figures = EventFormatter.WireStatistics()
        (figures.datagramsSent, figures.bytesSent, figures.sendErrors) = (
            sent.datagrams.value, sent.bytes.value, sent.errors.value
        )
        figures.kernelDrops = kernelDrops
        return figures
    }

    /// Receive buffer asked for on each socket (the kernel may grant less).
    public static let receiveBufferBytes: Int32 = 1 << 20

    /// Opens and configures both sockets. `interface` nil lets the kernel choose (the
    /// interface of the default route; an IPv6 group needs one named); `port` 0 gives the
    /// unicast socket an ephemeral port.
    public init(group: Endpoint, interface: NetworkInterface?, port: UInt16 = 0) throws(SocketError) {
        guard group.address.isMulticast else {
            throw SocketError("group \(group.addressText) is not a multicast address", code: EINVAL)
        }
        self.group = group
        let isIPv6 = !group.address.isIPv4
        let interfaceAddress = interface?.address ?? 0
        interfaceIndex = UInt32(max(0, interface?.index ?? 0))
        if isIPv6, interface == nil {
            throw SocketError("an IPv6 group needs --interface (the link it is joined on)", code: EINVAL)
        }
        if !isIPv6, let interface, interface.address == 0 {
            throw SocketError("interface \(interface.name) has no IPv4 address for group \(group)", code: EINVAL)
        }
        let family = isIPv6 ? AF_INET6 : AF_INET
        let groupSocket = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        guard groupSocket >= 0 else { throw SocketError("socket") }
        let unicastSocket = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        guard unicastSocket >= 0 else {
            Glibc.close(groupSocket)
            throw SocketError("socket")
        }
        do throws(SocketError) {
            try Self.set(groupSocket, SOL_SOCKET, SO_REUSEADDR, Int32(1), "SO_REUSEADDR")
            let unicastAddress: Endpoint
            if isIPv6 {
                let index = Int32(interfaceIndex)
                for fd in [groupSocket, unicastSocket] {
                    try Self.set(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, Int32(1), "IPV6_V6ONLY")
                }
                try Self.bind(groupSocket, group, scope: interfaceIndex, what: "bind to group \(group)")
                var membership = ipv6_mreq()
                withUnsafeMutableBytes(of: &membership.ipv6mr_multiaddr) { raw in
                    for (offset, byte) in group.address.bytes.enumerated() { raw[offset] = byte }
                }
                membership.ipv6mr_interface = UInt32(index)
                let joined = withUnsafeBytes(of: &membership) {
                    setsockopt(
                        groupSocket, Int32(IPPROTO_IPV6), IPV6_ADD_MEMBERSHIP, $0.baseAddress, socklen_t($0.count))
                }
                guard joined == 0 else {
                    throw SocketError("join group \(group.addressText) on \(interface?.name ?? "?")")
                }
                // Receive only this group's datagrams (IPV6_MULTICAST_ALL, Linux 4.20 and later).
                _ = try? Self.set(groupSocket, Int32(IPPROTO_IPV6), 29, Int32(0), "IPV6_MULTICAST_ALL")
                unicastAddress = Endpoint(address: IPAddress(high: 0, low: 0), port: port)
                try Self.bind(
                    unicastSocket, unicastAddress, scope: 0,
                    what: port == 0 ? "bind unicast socket" : "bind unicast socket to port \(port) (--port)")
                try Self.set(unicastSocket, Int32(IPPROTO_IPV6), IPV6_MULTICAST_IF, index, "IPV6_MULTICAST_IF")
                try Self.set(unicastSocket, Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, Int32(1), "IPV6_MULTICAST_HOPS")
                try Self.set(unicastSocket, Int32(IPPROTO_IPV6), IPV6_MULTICAST_LOOP, UInt32(1), "IPV6_MULTICAST_LOOP")
            } else {
                try Self.bind(groupSocket, group, scope: 0, what: "bind to group \(group)")
                var membership = ip_mreqn()
                membership.imr_multiaddr.s_addr = (group.address.ipv4 ?? 0).bigEndian
                membership.imr_address.s_addr = interfaceAddress.bigEndian
                membership.imr_ifindex = interface?.index ?? 0
                try Self.set(
                    groupSocket, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, membership,
                    "join group \(group.addressText) on \(interface?.name ?? "the default interface")")
                // Receive only this group's datagrams, not those of other groups joined on this host.
                try Self.set(groupSocket, Int32(IPPROTO_IP), IP_MULTICAST_ALL, Int32(0), "IP_MULTICAST_ALL")
                unicastAddress = Endpoint(address: interfaceAddress, port: port)
                try Self.bind(
                    unicastSocket, unicastAddress, scope: 0,
                    what: port == 0 ? "bind unicast socket" : "bind unicast socket to port \(port) (--port)")
                var outgoing = ip_mreqn()
                outgoing.imr_address.s_addr = interfaceAddress.bigEndian
                outgoing.imr_ifindex = interface?.index ?? 0
                try Self.set(unicastSocket, Int32(IPPROTO_IP), IP_MULTICAST_IF, outgoing, "IP_MULTICAST_IF")
                try Self.set(unicastSocket, Int32(IPPROTO_IP), IP_MULTICAST_TTL, UInt8(1), "IP_MULTICAST_TTL")
                try Self.set(unicastSocket, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, UInt8(1), "IP_MULTICAST_LOOP")
            }
            var bound = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let status = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(unicastSocket, $0, &length) }
            }
            guard status == 0, let endpoint = Self.endpoint(of: bound) else { throw SocketError("getsockname") }
            local = endpoint
        } catch {
            Glibc.close(groupSocket)
            Glibc.close(unicastSocket)
            throw error
        }
        self.groupSocket = groupSocket
        self.unicastSocket = unicastSocket
    }

    private let closed = SharedCounter()

    /// Shuts both sockets down: a receive returns nothing from now on.
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

    /// Sends one datagram and counts it; returns the error (and how many sends failed so far)
    /// instead of throwing, so a lost send never stops the agent. `trafficClass` (the IP header's
    /// DSCP and ECN byte; 0 leaves it unmarked) marks this datagram only: the socket is marked
    /// for the send and unmarked after it (one thread sends, the event loop's).
    @discardableResult
    public func send(_ bytes: [UInt8], to destination: Endpoint, trafficClass: UInt8 = 0)
        -> (error: SocketError, errors: Int)?
    {
        if trafficClass != 0 { markTrafficClass(trafficClass) }
        defer { if trafficClass != 0 { markTrafficClass(0) } }
        guard let error = attempt(bytes, to: destination) else {
            sent.datagrams.value += 1
            sent.bytes.value += bytes.count
            return nil
        }
        sent.errors.value += 1
        return (error, sent.errors.value)
    }

    /// Marks what the unicast socket sends from now on with `value` (IP_TOS or IPV6_TCLASS). A
    /// failure leaves the datagram unmarked, which is how it would travel on most paths anyway.
    private func markTrafficClass(_ value: UInt8) {
        if group.address.isIPv4 {
            _ = try? Self.set(unicastSocket, Int32(IPPROTO_IP), IP_TOS, Int32(value), "IP_TOS")
        } else {
            _ = try? Self.set(unicastSocket, Int32(IPPROTO_IPV6), IPV6_TCLASS, Int32(value), "IPV6_TCLASS")
        }
    }

    private func attempt(_ bytes: [UInt8], to destination: Endpoint) -> SocketError? {
        guard destination.address.isIPv4 == group.address.isIPv4 else {
            return SocketError("send to \(destination) (another address family than the group's)", code: EAFNOSUPPORT)
        }
        var (address, length) = Self.socketAddress(
            destination, scope: destination.address.isLinkLocalIPv6 ? interfaceIndex : 0)
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(unicastSocket, buffer.baseAddress, buffer.count, 0, $0, length)
                }
            }
        }
        return sent == bytes.count ? nil : SocketError("send to \(destination)")
    }

    /// The two sockets, for the event loop to watch: the group socket first.
    var descriptors: (group: Int32, unicast: Int32) { (groupSocket, unicastSocket) }

    /// Readies both sockets for `receive`: non-blocking, the kernel's receive timestamp and drop
    /// count with every datagram, and the larger receive buffer.
    func prepareReceiving() {
        for fd in [groupSocket, unicastSocket] {
            _ = try? Self.set(fd, SOL_SOCKET, SO_TIMESTAMPNS, Int32(1), "SO_TIMESTAMPNS")
            _ = try? Self.set(fd, SOL_SOCKET, SO_RXQ_OVFL, Int32(1), "SO_RXQ_OVFL")
            _ = try? Self.set(fd, SOL_SOCKET, SO_RCVBUF, Self.receiveBufferBytes, "SO_RCVBUF")
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
    }

    /// One datagram as `receive` read it.
    struct Received {
        var count: Int
        var source: Endpoint
        var stamp: Timestamp
    }

    /// Reads the next datagram waiting on `fd` (one of `descriptors`) into `buffer`, without
    /// waiting; nil when none is waiting (or the socket was closed). A datagram longer than the
    /// buffer is cut to its length (size the buffer one byte past the longest accepted, and such
    /// a datagram is rejected). The arrival time is the kernel's receive timestamp
    /// (SO_TIMESTAMPNS) where available, so a loop that reads late does not make the datagram
    /// look late: the monotonic reading is the current one less the datagram's age.
    func receive(
        on fd: Int32, into buffer: inout [UInt8], control: inout [UInt8], clock: AgentClock
    ) -> Received? {
        while closed.value == 0 {
            var source = sockaddr_storage()
            var ancillary = Ancillary()
            let count = buffer.withUnsafeMutableBytes { raw in
                control.withUnsafeMutableBytes { controlRaw in
                    withUnsafeMutablePointer(to: &source) { sourcePointer in
                        var vector = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
                        return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                            var message = msghdr()
                            message.msg_name = UnsafeMutableRawPointer(sourcePointer)
                            message.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                            message.msg_iov = vectorPointer
                            message.msg_iovlen = 1
                            message.msg_control = controlRaw.baseAddress
                            message.msg_controllen = controlRaw.count
                            let received = recvmsg(fd, &message, Int32(MSG_DONTWAIT))
                            if received >= 0 {
                                ancillary = Self.ancillary(controlRaw, length: Int(message.msg_controllen))
                            }
                            return received
                        }
                    }
                }
            }
            if count < 0 {
                if errno == EINTR { continue }
                return nil  // nothing waiting (EAGAIN), or the socket was shut down
            }
            if let overflow = ancillary.kernelDrops {
                (fd == groupSocket ? kernelDropsGroup : kernelDropsUnicast).value = overflow
            }
            var stamp = clock.now()
            if let kernelNanos = ancillary.receivedAtNanos {
                let ageNanos = max(0, AgentClock.trueUnixNanosNow() - kernelNanos)
                stamp = Timestamp(
                    monotonic: MonotonicInstant(nanos: stamp.monotonic.nanos - ageNanos),
                    wall: WallInstant(unixNanos: stamp.wall.unixNanos - ageNanos))
            }
            guard let from = Self.endpoint(of: source) else { continue }
            return Received(count: count, source: from, stamp: stamp)
        }
        return nil
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

    /// The socket address of `endpoint` (IPv4, or IPv6 with `scope` as its interface) and its length.
    static func socketAddress(_ endpoint: Endpoint, scope: UInt32) -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        if let v4 = endpoint.address.ipv4 {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    pointer.pointee.sin_family = sa_family_t(AF_INET)
                    pointer.pointee.sin_port = endpoint.port.bigEndian
                    pointer.pointee.sin_addr.s_addr = v4.bigEndian
                }
            }
            return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                pointer.pointee.sin6_family = sa_family_t(AF_INET6)
                pointer.pointee.sin6_port = endpoint.port.bigEndian
                pointer.pointee.sin6_scope_id = scope
                withUnsafeMutableBytes(of: &pointer.pointee.sin6_addr) { raw in
                    for (offset, byte) in endpoint.address.bytes.enumerated() { raw[offset] = byte }
                }
            }
        }
        return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
    }

    /// The endpoint a socket address names; nil for a family other than IPv4 and IPv6.
    static func endpoint(of storage: sockaddr_storage) -> Endpoint? {
        var storage = storage
        return withUnsafePointer(to: &storage) { pointer -> Endpoint? in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    Endpoint(
                        address: UInt32(bigEndian: $0.pointee.sin_addr.s_addr),
                        port: UInt16(bigEndian: $0.pointee.sin_port)
                    )
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    let bytes = withUnsafeBytes(of: address.pointee.sin6_addr) { Array($0) }
                    return Endpoint(address: IPAddress(ipv6: bytes), port: UInt16(bigEndian: address.pointee.sin6_port))
                }
            default:
                return nil
            }
        }
    }

    private static func bind(_ fd: Int32, _ endpoint: Endpoint, scope: UInt32, what: String) throws(SocketError) {
        var (address, length) = socketAddress(endpoint, scope: scope)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
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

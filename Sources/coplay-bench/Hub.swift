// coplay-bench hub: the forwarding hub of a test LAN with a link model (Tools/lan up N --link …).
// It runs inside the LAN's hub namespace, reads every frame the hosts send from the hub's ends
// of their veth pairs (AF_PACKET), and sends each one on to the hosts it is for after the delay,
// or the loss, that the link's model (CoplaySimulation.LinkModel) draws for it. It learns which
// host has which MAC address as a switch does; group frames (multicast, broadcast) and frames
// for an address not learned yet go to every other host.
import CoplaySimulation
import Foundation

#if canImport(Glibc)
    import Glibc

    // Linux's packet sockets (<linux/if_packet.h>, <linux/if_ether.h>), which Glibc's module
    // does not bring: struct sockaddr_ll's layout and the constants this hub uses.
    private struct PacketAddress {
        var family: UInt16 = 0
        var protocolNumber: UInt16 = 0
        var interfaceIndex: Int32 = 0
        var hardwareType: UInt16 = 0
        var packetType: UInt8 = 0
        var addressLength: UInt8 = 0
        var address: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0)
    }
    private let ethernetProtocolAll: UInt16 = 0x0003  // ETH_P_ALL
    private let packetOutgoing: UInt8 = 4  // PACKET_OUTGOING

    /// Set by SIGTERM or SIGINT (the handler may do nothing else): the hub stops and reports.
    nonisolated(unsafe) private var stopRequested: sig_atomic_t = 0

    struct Hub {
        struct Port {
            var name: String
            var fd: Int32
            var framesIn = 0
            var framesOut = 0
        }

        /// Frames waiting for their instant: at most this many (a host flooding the hub cannot
        /// make it hold unbounded memory; past it a frame is dropped and counted).
        static let pendingMax = 65_536
        /// MAC addresses learned: at most this many (the oldest learned is forgotten first).
        static let macsMax = 4_096
        static let frameBytesMax = 65_536

        var ports: [Port]
        var model: LinkModel
        var macs: [UInt64: Int] = [:]
        var macOrder: [UInt64] = []
        /// Frames waiting for their instant, earliest first, each with the port it goes out of.
        var pending = EventQueue<(frame: [UInt8], port: Int)>()
        var (framesIn, groupFramesIn, delivered, lostByModel, droppedFull, malformed) = (0, 0, 0, 0, 0, 0)
        /// Frames marked for an access category above best effort (`LinkModel.isExpedited`).
        var expeditedIn = 0

        /// Opens a packet socket on each port (the hub's ends, by interface name).
        init(ports names: [String], model: LinkModel) throws(HubError) {
            self.model = model
            ports = []
            for name in names {
                let index = if_nametoindex(name)
                guard index != 0 else { throw HubError("no interface \(name) in this namespace") }
                let protocolAll = ethernetProtocolAll.bigEndian
                let fd = socket(AF_PACKET, Int32(SOCK_RAW.rawValue), Int32(protocolAll))
                guard fd >= 0 else { throw HubError("packet socket on \(name): \(String(cString: strerror(errno)))") }
                var address = PacketAddress()
                address.family = UInt16(AF_PACKET)
                address.protocolNumber = protocolAll
                address.interfaceIndex = Int32(index)
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<PacketAddress>.size))
                    }
                }
                guard bound == 0 else { throw HubError("bind to \(name): \(String(cString: strerror(errno)))") }
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                ports.append(Port(name: name, fd: fd))
            }
        }

        /// Forwards until `seconds` have passed or SIGTERM/SIGINT arrives; returns the counters.
        mutating func run(seconds: Double) -> String {
            signal(SIGTERM) { _ in stopRequested = 1 }
            signal(SIGINT) { _ in stopRequested = 1 }
            let start = Self.now()
            let end = start + Int64(seconds * 1e9)
            var buffer = [UInt8](repeating: 0, count: Self.frameBytesMax)
            // select(2), not poll(2): its timeout has microseconds, poll's milliseconds (a wired
            // hop is 100 µs).
            let highest = ports.map(\.fd).max() ?? 0
            while stopRequested == 0 {
                let now = Self.now()
                if now >= end { break }
                let wait = max(0, min(end, pending.nextTime ?? end) - now)
                var timeout = timeval(tv_sec: Int(wait / 1_000_000_000), tv_usec: Int(wait % 1_000_000_000 / 1_000))
                var readable = Self.descriptorSet(ports.map(\.fd))
                let ready = select(highest + 1, &readable, nil, nil, &timeout)
                if ready > 0 {
                    for index in ports.indices where Self.contains(readable, ports[index].fd) {
                        receiveAll(on: index, into: &buffer)
                    }
                }
                sendDue(now: Self.now())
            }
            let elapsed = Double(Self.now() - start) / 1e9
            let perPort = ports.map { "\($0.name) \($0.framesIn)/\($0.framesOut)" }.joined(separator: ", ")
            return "hub: \(model.kind.rawValue)"
                + (model.kind == .wifi ? " (DTIM period \(model.dtimPeriod))" : "")
                + ", \(ports.count) hosts, \(String(format: "%.1f", elapsed)) s: \(framesIn) frames in"
                + " (\(groupFramesIn) multicast or broadcast, \(expeditedIn) expedited), \(delivered) delivered, \(lostByModel) lost by the"
                + " model, \(droppedFull) dropped with the queue full, \(malformed) malformed; in/out by host: \(perPort)"
        }

        private mutating func receiveAll(on port: Int, into buffer: inout [UInt8]) {
            // At most a queue's worth in one turn, so that due frames go out in time.
            for _ in 0..<256 {
                var from = PacketAddress()
                var length = socklen_t(MemoryLayout<PacketAddress>.size)
                let count = buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(ports[port].fd, bytes.baseAddress, bytes.count, 0, $0, &length)
                        }
                    }
                }
                guard count > 0 else { return }
                // The copies this hub sends out of a port come back to its socket as outgoing.
                if from.packetType == packetOutgoing { continue }
                forward(Array(buffer[0..<count]), from: port)
            }
        }

        private mutating func forward(_ frame: [UInt8], from port: Int) {
            ports[port].framesIn += 1
            framesIn += 1
            guard frame.count >= 14 else {
                malformed += 1
                return
            }
            let source = Self.mac(frame, at: 6)
            if macs[source] == nil {
                if macOrder.count >= Self.macsMax { macs[macOrder.removeFirst()] = nil }
                macOrder.append(source)
            }
            macs[source] = port
            let isGroup = frame[0] & 1 == 1
            if isGroup { groupFramesIn += 1 }
            let known = isGroup ? nil : macs[Self.mac(frame, at: 0)]
            let receivers = known.map { [$0] } ?? ports.indices.filter { $0 != port }
            let expedited = Self.dscp(frame).map(LinkModel.isExpedited(dscp:)) ?? false
            if expedited { expeditedIn += 1 }
            let arrivals = model.deliver(
                from: port, to: receivers, isGroup: isGroup, expedited: expedited, at: Self.now())
            lostByModel += receivers.count - arrivals.count
            for arrival in arrivals {
                guard pending.count < Self.pendingMax else {
                    droppedFull += 1
                    continue
                }
                pending.push((frame, arrival.receiver), at: arrival.at)
            }
        }

        private mutating func sendDue(now: Int64) {
            while let next = pending.nextTime, next <= now, let (_, (frame, port)) = pending.pop() {
                let sent = frame.withUnsafeBytes { send(ports[port].fd, $0.baseAddress, $0.count, 0) }
                if sent == frame.count {
                    ports[port].framesOut += 1
                    delivered += 1
                }
            }
        }

        /// An fd_set holding `descriptors` (each below FD_SETSIZE: a hub has few).
        private static func descriptorSet(_ descriptors: [Int32]) -> fd_set {
            var set = fd_set()
            withUnsafeMutableBytes(of: &set) { bytes in
                for fd in descriptors where fd >= 0 && Int(fd) < bytes.count * 8 {
                    bytes[Int(fd) / 8] |= UInt8(1) << UInt8(fd % 8)
                }
            }
            return set
        }

        private static func contains(_ set: fd_set, _ fd: Int32) -> Bool {
            withUnsafeBytes(of: set) { bytes in
                fd >= 0 && Int(fd) < bytes.count * 8 && bytes[Int(fd) / 8] & (UInt8(1) << UInt8(fd % 8)) != 0
            }
        }

        /// The DSCP of an IPv4 or IPv6 frame (the traffic class's upper six bits); nil for others.
        static func dscp(_ frame: [UInt8]) -> UInt8? {
            guard frame.count >= 16 else { return nil }
            switch (UInt16(frame[12]) << 8) | UInt16(frame[13]) {
            case 0x0800: return frame[15] >> 2
            case 0x86DD: return ((frame[14] & 0x0F) << 4 | frame[15] >> 4) >> 2
            default: return nil
            }
        }

        private static func mac(_ frame: [UInt8], at offset: Int) -> UInt64 {
            (0..<6).reduce(UInt64(0)) { $0 << 8 | UInt64(frame[offset + $1]) }
        }

        static func now() -> Int64 {
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC, &time)
            return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
        }
    }

    struct HubError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// `coplay-bench hub --ports P1,P2,… --link wired|wifi|wan [--dtim 1-3] [--seed N] [--seconds S]`
    func runHub(_ arguments: [String]) -> Never {
        var arguments = arguments[...]
        var (names, link, dtim, seed, seconds): ([String], LinkKind, Int, UInt64, Double) = ([], .wifi, 1, 1, 3600)
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("coplay-bench hub: \(message)\n".utf8))
            exit(2)
        }
        while let flag = arguments.popFirst() {
            guard let value = arguments.popFirst() else { fail("\(flag) takes a value") }
            switch flag {
            case "--ports":
                names = value.split(separator: ",").map(String.init)
                guard (2...64).contains(names.count) else { fail("--ports takes 2 to 64 interface names") }
            case "--link":
                guard let kind = LinkKind(rawValue: value) else { fail("--link takes wired, wifi or wan") }
                link = kind
            case "--dtim":
                guard let period = Int(value), (1...3).contains(period) else { fail("--dtim takes 1, 2 or 3") }
                dtim = period
            case "--seed":
                guard let number = UInt64(value) else { fail("--seed takes a whole number") }
                seed = number
            case "--seconds":
                guard let number = Double(value), number > 0, number <= 86_400 else {
                    fail("--seconds takes a duration from 0 to 86400")
                }
                seconds = number
            default: fail("unknown flag \(flag) (--ports, --link, --dtim, --seed, --seconds)")
            }
        }
        guard !names.isEmpty else { fail("--ports is required") }
        do {
            var hub = try Hub(ports: names, model: LinkModel(link, hosts: names.count, dtimPeriod: dtim, seed: seed))
            print(
                "hub: forwarding \(names.count) hosts on the \(link.rawValue) model"
                    + (link == .wifi ? " (DTIM period \(dtim))" : "") + " for at most \(Int(seconds)) s, seed \(seed)")
            fflush(nil)
            print(hub.run(seconds: seconds))
            exit(0)
        } catch {
            fail(error.description)
        }
    }
#else
    func runHub(_ arguments: [String]) -> Never {
        FileHandle.standardError.write(Data("coplay-bench hub: Linux only (AF_PACKET)\n".utf8))
        exit(2)
    }
#endif

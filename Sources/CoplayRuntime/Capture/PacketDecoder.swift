import CoplayCore

/// A UDP datagram found in a captured packet.
public struct CapturedDatagram: Sendable {
    public var timestampNanos: Int64
    public var source: Endpoint
    public var destination: Endpoint
    public var payload: [UInt8]
    /// For a datagram carried by a relay (opened from a NATS PUB or MSG in a TCP stream): the
    /// subject it was published on; the endpoints are then the TCP connection's.
    public var relaySubject: String? = nil
}

/// A TCP segment found in a captured packet (the relay's connections to its NATS servers).
struct CapturedSegment {
    var timestampNanos: Int64
    var source: Endpoint
    var destination: Endpoint
    var sequence: UInt32
    var isSyn: Bool
    var payload: ArraySlice<UInt8>
}

/// Digs the UDP payload out of a captured packet: the link layer (BSD loopback, Ethernet with
/// VLAN tags, raw IP, Linux cooked v1 and v2), then IPv4 or IPv6 (UDP directly after the fixed
/// header) and UDP. Anything else — TCP, fragments, IPv6 extension headers, ARP — is not a UDP
/// datagram here and gives nil.
public enum PacketDecoder {
    public static func udpDatagram(in packet: CapturedPacket) -> CapturedDatagram? {
        guard let (data, ipOffset) = ipLayer(of: packet) else { return nil }
        switch data[ipOffset] >> 4 {
        case 4: return ipv4(data, at: ipOffset, timestampNanos: packet.timestampNanos)
        case 6: return ipv6(data, at: ipOffset, timestampNanos: packet.timestampNanos)
        default: return nil
        }
    }

    /// A TCP segment of IPv4 or IPv6 (TCP directly after the fixed header; not a fragment).
    static func tcpSegment(in packet: CapturedPacket) -> CapturedSegment? {
        guard let (data, ip) = ipLayer(of: packet) else { return nil }
        let tcp: Int
        let end: Int
        let source: IPAddress
        let destination: IPAddress
        switch data[ip] >> 4 {
        case 4:
            guard data.count >= ip + 20 else { return nil }
            let headerLength = Int(data[ip] & 0x0F) * 4
            let totalLength = Int(data[ip + 2]) << 8 | Int(data[ip + 3])
            let fragment = Int(data[ip + 6] & 0x3F) << 8 | Int(data[ip + 7])
            guard headerLength >= 20, data[ip + 9] == 6, fragment == 0, ip + totalLength <= data.count,
                totalLength >= headerLength + 20
            else { return nil }
            func address(_ at: Int) -> IPAddress {
                IPAddress(ipv4: data[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            }
            (tcp, end, source, destination) = (ip + headerLength, ip + totalLength, address(ip + 12), address(ip + 16))
        case 6:
            guard data.count >= ip + 60, data[ip + 6] == 6 else { return nil }
            let payloadLength = Int(data[ip + 4]) << 8 | Int(data[ip + 5])
            guard payloadLength >= 20, ip + 40 + payloadLength <= data.count else { return nil }
            (tcp, end) = (ip + 40, ip + 40 + payloadLength)
            source = IPAddress(ipv6: data[(ip + 8)..<(ip + 24)])
            destination = IPAddress(ipv6: data[(ip + 24)..<(ip + 40)])
        default:
            return nil
        }
        let offset = Int(data[tcp + 12] >> 4) * 4
        guard offset >= 20, tcp + offset <= end else { return nil }
        func port(_ at: Int) -> UInt16 { UInt16(data[at]) << 8 | UInt16(data[at + 1]) }
        let sequence = data[(tcp + 4)..<(tcp + 8)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return CapturedSegment(
            timestampNanos: packet.timestampNanos, source: Endpoint(address: source, port: port(tcp)),
            destination: Endpoint(address: destination, port: port(tcp + 2)), sequence: sequence,
            isSyn: data[tcp + 13] & 0x02 != 0, payload: data[(tcp + offset)..<end])
    }

    /// The packet's bytes and where its IP header starts, past the link layer.
    private static func ipLayer(of packet: CapturedPacket) -> ([UInt8], Int)? {
        let data = Array(packet.data)
        let ipOffset: Int
        // EtherType (or the loopback family) when the link layer names the network layer.
        func isIP(_ high: UInt8, _ low: UInt8) -> Bool { (high, low) == (0x08, 0x00) || (high, low) == (0x86, 0xDD) }
        switch packet.linkType {
        case 0:
            // BSD loopback: a 4-byte address family in the capturing host's byte order (2 for
            // IPv4; 10, 24, 28 or 30 for IPv6): the IP version nibble below decides.
            guard data.count >= 4 else { return nil }
            ipOffset = 4
        case 1:  // Ethernet
            var offset = 12
            while offset + 2 <= data.count, data[offset] == 0x81, data[offset + 1] == 0x00 { offset += 4 }  // 802.1Q
            guard offset + 2 <= data.count, isIP(data[offset], data[offset + 1]) else { return nil }
            ipOffset = offset + 2
        case 101, 228, 229: ipOffset = 0  // raw IP, IPv4, IPv6
        case 113:  // Linux cooked capture v1: protocol at 14
            guard data.count >= 16, isIP(data[14], data[15]) else { return nil }
            ipOffset = 16
        case 276:  // Linux cooked capture v2: protocol at 0
            guard data.count >= 20, isIP(data[0], data[1]) else { return nil }
            ipOffset = 20
        default: return nil
        }
        guard data.count > ipOffset else { return nil }
        return (data, ipOffset)
    }

    private static func ipv4(_ data: [UInt8], at ipOffset: Int, timestampNanos: Int64) -> CapturedDatagram? {
        guard data.count >= ipOffset + 20 else { return nil }
        let headerLength = Int(data[ipOffset] & 0x0F) * 4
        let totalLength = Int(data[ipOffset + 2]) << 8 | Int(data[ipOffset + 3])
        let fragment = Int(data[ipOffset + 6] & 0x3F) << 8 | Int(data[ipOffset + 7])  // MF flag and offset
        guard headerLength >= 20, data[ipOffset + 9] == 17, fragment == 0, totalLength >= headerLength + 8,
            ipOffset + totalLength <= data.count
        else { return nil }
        func address(_ at: Int) -> IPAddress {
            IPAddress(ipv4: data[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }
        return udp(
            data, at: ipOffset + headerLength, end: ipOffset + totalLength, source: address(ipOffset + 12),
            destination: address(ipOffset + 16), timestampNanos: timestampNanos)
    }

    private static func ipv6(_ data: [UInt8], at ipOffset: Int, timestampNanos: Int64) -> CapturedDatagram? {
        guard data.count >= ipOffset + 48, data[ipOffset + 6] == 17 else { return nil }  // next header: UDP
        let payloadLength = Int(data[ipOffset + 4]) << 8 | Int(data[ipOffset + 5])
        guard payloadLength >= 8, ipOffset + 40 + payloadLength <= data.count else { return nil }
        return udp(
            data, at: ipOffset + 40, end: ipOffset + 40 + payloadLength,
            source: IPAddress(ipv6: data[(ipOffset + 8)..<(ipOffset + 24)]),
            destination: IPAddress(ipv6: data[(ipOffset + 24)..<(ipOffset + 40)]), timestampNanos: timestampNanos)
    }

    private static func udp(
        _ data: [UInt8], at udp: Int, end: Int, source: IPAddress, destination: IPAddress, timestampNanos: Int64
    ) -> CapturedDatagram? {
        guard udp + 8 <= end else { return nil }
        let udpLength = Int(data[udp + 4]) << 8 | Int(data[udp + 5])
        guard udpLength >= 8, udp + udpLength <= end else { return nil }
        return CapturedDatagram(
            timestampNanos: timestampNanos,
            source: Endpoint(address: source, port: UInt16(data[udp]) << 8 | UInt16(data[udp + 1])),
            destination: Endpoint(address: destination, port: UInt16(data[udp + 2]) << 8 | UInt16(data[udp + 3])),
            payload: Array(data[(udp + 8)..<(udp + udpLength)]))
    }
}

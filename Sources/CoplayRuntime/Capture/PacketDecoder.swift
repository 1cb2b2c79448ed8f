import CoplayCore

/// A UDP datagram found in a captured packet.
public struct CapturedDatagram: Sendable {
    public var timestampNanos: Int64
    public var source: Endpoint
    public var destination: Endpoint
    public var payload: [UInt8]
}

/// Digs the UDP payload out of a captured packet: the link layer (BSD loopback, Ethernet with
/// VLAN tags, raw IPv4, Linux cooked v1 and v2), then IPv4 and UDP. Anything else — IPv6, TCP,
/// fragments, ARP — is not a UDP datagram here and gives nil.
public enum PacketDecoder {
    public static func udpDatagram(in packet: CapturedPacket) -> CapturedDatagram? {
        let data = Array(packet.data)
        let ipOffset: Int
        switch packet.linkType {
        case 0:  // BSD loopback: a 4-byte address family in the capturing host's byte order
            guard data.count >= 4, data[0...3] == [2, 0, 0, 0] || data[0...3] == [0, 0, 0, 2] else { return nil }
            ipOffset = 4
        case 1:  // Ethernet
            var offset = 12
            while offset + 2 <= data.count, data[offset] == 0x81, data[offset + 1] == 0x00 { offset += 4 }  // 802.1Q
            guard offset + 2 <= data.count, data[offset] == 0x08, data[offset + 1] == 0x00 else { return nil }
            ipOffset = offset + 2
        case 101, 228: ipOffset = 0  // raw IP, IPv4
        case 113:  // Linux cooked capture v1: protocol at 14
            guard data.count >= 16, data[14] == 0x08, data[15] == 0x00 else { return nil }
            ipOffset = 16
        case 276:  // Linux cooked capture v2: protocol at 0
            guard data.count >= 20, data[0] == 0x08, data[1] == 0x00 else { return nil }
            ipOffset = 20
        default: return nil
        }
        guard data.count >= ipOffset + 20, data[ipOffset] >> 4 == 4 else { return nil }
        let headerLength = Int(data[ipOffset] & 0x0F) * 4
        let totalLength = Int(data[ipOffset + 2]) << 8 | Int(data[ipOffset + 3])
        let fragment = Int(data[ipOffset + 6] & 0x3F) << 8 | Int(data[ipOffset + 7])  // MF flag and offset
        guard headerLength >= 20, data[ipOffset + 9] == 17, fragment == 0, totalLength >= headerLength + 8,
            ipOffset + totalLength <= data.count
        else { return nil }
        func address(_ at: Int) -> UInt32 { data[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let udp = ipOffset + headerLength
        let udpLength = Int(data[udp + 4]) << 8 | Int(data[udp + 5])
        guard udpLength >= 8, udp + udpLength <= ipOffset + totalLength else { return nil }
        return CapturedDatagram(
            timestampNanos: packet.timestampNanos,
            source: Endpoint(address: address(ipOffset + 12), port: UInt16(data[udp]) << 8 | UInt16(data[udp + 1])),
            destination: Endpoint(
                address: address(ipOffset + 16), port: UInt16(data[udp + 2]) << 8 | UInt16(data[udp + 3])),
            payload: Array(data[(udp + 8)..<(udp + udpLength)]))
    }
}

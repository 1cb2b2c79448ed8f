import CoplayCore
import Glibc

/// An IPv4 interface found by name (`lo`, `eth0`) or by one of its addresses.
public struct NetworkInterface: Sendable, Equatable {
    public var name: String
    /// Host byte order.
    public var address: UInt32
    public var index: Int32

    public enum LookupError: Error, CustomStringConvertible {
        case notFound(String, available: [String])
        case noIPv4(String)
        public var description: String {
            switch self {
            case .notFound(let wanted, let available):
                "no interface named or addressed '\(wanted)' (IPv4 interfaces here: \(available.joined(separator: ", ")))"
            case .noIPv4(let name):
                "interface '\(name)' has no IPv4 address"
            }
        }
    }

    /// Every interface with an IPv4 address, in the order the system lists them.
    public static func all() -> [NetworkInterface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [NetworkInterface] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let socketAddress = entry.pointee.ifa_addr, socketAddress.pointee.sa_family == sa_family_t(AF_INET)
            else {
                continue
            }
            let name = String(cString: entry.pointee.ifa_name)
            let address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
            }
            found.append(NetworkInterface(name: name, address: address, index: Int32(if_nametoindex(name))))
        }
        return found
    }

    /// Finds the interface by name or dotted-quad address.
    public static func lookup(_ nameOrAddress: String) throws(LookupError) -> NetworkInterface {
        let interfaces = all()
        if let address = Endpoint.parseAddress(nameOrAddress) {
            if let match = interfaces.first(where: { $0.address == address }) { return match }
        } else if let match = interfaces.first(where: { $0.name == nameOrAddress }) {
            return match
        } else if if_nametoindex(nameOrAddress) != 0 {
            throw .noIPv4(nameOrAddress)
        }
        throw .notFound(
            nameOrAddress,
            available: interfaces.map { "\($0.name) \(Endpoint(address: $0.address, port: 0).addressText)" })
    }
}

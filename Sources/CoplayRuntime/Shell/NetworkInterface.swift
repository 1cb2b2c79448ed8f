import CoplayCore
import Glibc

/// An interface found by name (`lo`, `eth0`) or by one of its IPv4 addresses.
public struct NetworkInterface: Sendable, Equatable {
    public var name: String
    /// Its (first) IPv4 address in host byte order; 0 if it has none (an IPv6-only link).
    public var address: UInt32
    public var index: Int32

    public enum LookupError: Error, CustomStringConvertible {
        case notFound(String, available: [String])
        public var description: String {
            switch self {
            case .notFound(let wanted, let available):
                "no interface named or addressed '\(wanted)' (interfaces here: \(available.joined(separator: ", ")))"
            }
        }
    }

    /// Every interface, each once with its first IPv4 address (0 if none), in the order the
    /// system lists them.
    public static func all() -> [NetworkInterface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [NetworkInterface] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let name = String(cString: entry.pointee.ifa_name)
            var address: UInt32 = 0
            if let socketAddress = entry.pointee.ifa_addr, socketAddress.pointee.sa_family == sa_family_t(AF_INET) {
                address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
                }
            }
            if let known = found.firstIndex(where: { $0.name == name }) {
                if found[known].address == 0 { found[known].address = address }
            } else {
                found.append(NetworkInterface(name: name, address: address, index: Int32(if_nametoindex(name))))
            }
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
        }
        throw .notFound(
            nameOrAddress,
            available: interfaces.map {
                $0.address == 0 ? $0.name : "\($0.name) \(Endpoint(address: $0.address, port: 0).addressText)"
            })
    }
}

import CoplayCore
import Testing

/// Addresses of both families in one type: parsing, RFC 5952 text, and the classes the agent
/// acts on (multicast, link-local, unicast destinations).
@Suite struct IPAddressTests {
    @Test(arguments: [
        ("fd77::1", "fd77::1"), ("FF12:0:0:0:0:0:7C:1", "ff12::7c:1"), ("::", "::"), ("::1", "::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"), ("2001:db8::", "2001:db8::"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2:3:4:5:6"), ("fe80::cc3f:80ff:fed6:6efe", "fe80::cc3f:80ff:fed6:6efe"),
        ("10.77.0.1", "10.77.0.1"),
    ])
    func parsesAndWritesTheCanonicalText(text: String, canonical: String) throws {
        let address = try #require(IPAddress.parse(text))
        #expect(address.description == canonical)
        #expect(IPAddress.parse(canonical) == address)
    }

    @Test func rejectsWhatIsNotAnAddress() {
        for text in [
            "", ":", ":::", "1::2::3", "12345::", "g::1", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "10.0.0",
            "fe80::1%eth0",
        ] {
            #expect(IPAddress.parse(text) == nil, "\(text)")
        }
    }

    @Test func classes() throws {
        let group6 = try #require(IPAddress.parse("ff12::7c:1"))
        let linkLocal = try #require(IPAddress.parse("fe80::1"))
        let unique = try #require(IPAddress.parse("fd77::1"))
        let allNodes = try #require(IPAddress.parse("ff02::1"))
        #expect(IPAddress(ipv4: 0xEFFF_4D01).isMulticast && group6.isMulticast)
        #expect(linkLocal.isLinkLocalIPv6 && !unique.isLinkLocalIPv6)
        #expect(IPAddress(ipv4: 0x0A4D_0001).ipv4 == 0x0A4D_0001 && IPAddress.parse("::1")?.ipv4 == nil)
        #expect(Endpoint(address: unique, port: 1).description == "[fd77::1]:1")
        #expect(!Endpoint(address: IPAddress(high: 0, low: 0), port: 1).isUnicastDestination)
        #expect(!Endpoint(address: allNodes, port: 1).isUnicastDestination)
        #expect(Endpoint(address: unique, port: 1).isUnicastDestination)
    }
}

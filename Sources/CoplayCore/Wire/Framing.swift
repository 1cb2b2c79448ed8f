/// How this agent's datagrams are framed: what a payload costs on the wire, header and tag
/// included. Machines that must fit something in a datagram or a byte budget are given one.
struct Framing: Sendable {
    var session: SessionID
    var sender: Member
    /// The authentication tag's bytes (0 in an open group).
    var tagBytes: Int

    /// The encoded size of a datagram carrying `payload`.
    func bytes(_ payload: Payload) -> Int {
        WireFormat.encodedSize(Datagram(session: session, sender: sender, sequence: 1, payload: payload)) + tagBytes
    }

    /// The room for a payload in a datagram of `datagramBytesMax`.
    func payloadBytesMax(in datagramBytesMax: Int) -> Int { datagramBytesMax - WireFormat.headerBytes - tagBytes }
}

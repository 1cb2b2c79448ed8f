/// Why a datagram was rejected. The kind is what gets counted; the detail is for diagnostics.
public struct DecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, CaseIterable, Sendable {
        /// Shorter than the fixed header.
        case tooShort
        /// Longer than `Settings.datagramBytesMax`.
        case tooLong
        /// Does not start with "CPLY".
        case badMagic
        /// A protocol version this agent does not speak.
        case unsupportedVersion
        /// A message type this version does not define.
        case unknownType
        /// Reserved flag bits set, or a tag length that contradicts the flags.
        case badFlags
        /// Header, payload and tag lengths do not add up to the datagram's length.
        case lengthMismatch
        /// The payload does not parse as its type says.
        case malformedPayload
        /// Authentication tag present but not verifiable.
        case unauthenticated
    }

    public var kind: Kind
    public var detail: String
    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }
    public var description: String { "\(kind.rawValue): \(detail)" }
}

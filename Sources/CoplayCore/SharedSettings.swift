/// Settings held by reference, one box per machine. Each of an instance's machines reads them, and
/// held by value they were most of its size: `Instance` was 11.5 KB, nine copies of 1.2 KB of
/// settings. Swift copies a struct whole to read it through an actor's or a class's property, or
/// to build a context from machines, and the shell and the router did so several times per datagram: some
/// 40 KB copied per datagram received. A machine copied now copies a pointer.
final class SharedSettings: Sendable {
    let value: Settings
    init(_ value: Settings) { self.value = value }
}

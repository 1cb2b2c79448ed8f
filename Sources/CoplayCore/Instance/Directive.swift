/// What an `Instance` asks its shell to do. The shell carries these out in order and decides
/// nothing itself.
public enum Directive: Hashable, Sendable {
    /// Encode this datagram and send it to the session's multicast group.
    case multicast(Datagram)
    /// Encode this datagram and send it from the unicast socket to this endpoint.
    case unicast(Datagram, to: Endpoint)
    /// Hand this command to the local player; feed what it reports to `onPlayerReport`.
    case player(PlayerCommand)
    /// Print this event on standard output.
    case emit(Event)
    /// Print this diagnostic line on standard error.
    case diagnose(String)
    /// Subscribe the relay to `relaySubscriptions` as they are now, with `Settings.relay`'s
    /// keep-alive (a viewer took a seat on the stage: it hears the stage's subject too).
    case resubscribe
    /// Call `onTick` at this monotonic instant (it replaces any earlier request).
    case wake(at: MonotonicInstant)
    /// Flush the output and exit the process with this status.
    case exit(status: Int32)
}

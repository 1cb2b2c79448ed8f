import Dispatch
import Glibc

/// The signals the `coplay` agent handles (SIGINT and SIGTERM: leave and exit; SIGHUP: reread
/// the key file), turned into inputs of the shell's loop; SIGPIPE is ignored (a closed control
/// client or player must not end the agent). Held for the agent's life: a source released
/// unresumed traps in libdispatch, so they are made and resumed together.
final class Signals {
    private let sources: [DispatchSourceSignal]

    init(into feed: AsyncStream<ShellInput>.Continuation) {
        signal(SIGPIPE, SIG_IGN)
        let queue = DispatchQueue(label: "coplay-signals", qos: .userInteractive)
        sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { feed.yield(.signal(number)) }
            source.resume()
            return source
        }
    }
}

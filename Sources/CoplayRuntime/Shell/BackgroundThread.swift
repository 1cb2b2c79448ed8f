import Glibc

/// A detached POSIX thread running one closure: the shell's receive and standard-input loops
/// block in system calls, so they get threads of their own rather than the cooperative pool.
/// (POSIX threads rather than Foundation's, to keep Foundation out of the agent: it would add
/// about 8 MB of resident memory.)
enum BackgroundThread {
    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(run: @escaping @Sendable () -> Void) { self.run = run }
    }

    static func start(_ run: @escaping @Sendable () -> Void) {
        let body = Unmanaged.passRetained(Body(run: run)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { argument in
                let body = Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue()
                body.run()
                return nil
            }, body)
        precondition(status == 0, "pthread_create failed: \(status)")
        pthread_detach(thread)
    }
}

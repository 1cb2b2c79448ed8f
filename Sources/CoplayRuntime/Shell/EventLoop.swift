import CoplayCore
import Dispatch
import Glibc
import Synchronization

/// One thread that is an agent's whole world, after NIO's event loops: it is the executor of
/// the `AgentShell` actor (every job of the actor runs on it), it waits for the agent's sockets
/// with poll(2), and it fires the shell's timers when poll's timeout says so.
///
/// A datagram therefore costs one wake-up of one thread: the loop reads it and hands it to the
/// shell in the same turn. (Before, a receive thread per socket woke, handed the datagram to an
/// `AsyncStream`, and a thread of the cooperative pool woke to run the actor: two or three
/// context switches per datagram, and at 64 agents on two cores the switches were most of an
/// idle agent's CPU.) Inputs that are rare and come from threads of their own (standard input,
/// the control socket, an external player, signals) still reach the shell as jobs: `enqueue`
/// queues them and writes a byte to a pipe that poll watches.
///
/// Timers have poll's precision, one millisecond, rounded up so that a timer never fires early;
/// the protocol's timers are tens of milliseconds or more, and the player's schedule does not
/// depend on when its timer fires (a start time is kept by the player model itself).
final class EventLoop: SerialExecutor, @unchecked Sendable {
    // Shared with other threads: the job queue, the wake-up pipe, the loop thread's id.
    private struct Queue {
        var jobs: [UnownedJob] = []
        /// A byte is in the pipe (or about to be) since the loop last took the queue.
        var wakePending = false
        /// The loop thread has exited: jobs go to `afterwards`.
        var exited = false
    }
    private let queue = Mutex(Queue())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let threadID = Atomic<UInt>(0)
    /// Runs the jobs enqueued after the loop exited (the shell is done, but a caller may still
    /// ask it for its status). Inactive until then, so that it never runs beside the loop.
    private let afterwards = DispatchQueue(label: "coplay-after-loop", attributes: .initiallyInactive)

    // The loop thread's own (read and written only on it).
    private var sources: [Source] = []
    private struct Source {
        var fd: Int32
        var readable: @Sendable () -> Void
        /// Called when the socket can be written, while `wantsWrite` (a connect in progress, or
        /// bytes waiting for room in the socket's buffer).
        var writable: (@Sendable () -> Void)?
        var wantsWrite = false
    }
    private var timers: [(due: MonotonicInstant?, fire: @Sendable () -> Void)] = []
    private var stopping = false

    /// A timer of this loop, set and cleared from the loop thread.
    struct Timer {
        fileprivate let index: Int
    }

    init() throws(SocketError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw SocketError("pipe for the event loop") }
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        (wakeRead, wakeWrite) = (ends[0], ends[1])
        BackgroundThread.start { [self] in run() }
    }

    deinit {
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    // MARK: SerialExecutor

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (poke, exited) = queue.withLock { queue -> (Bool, Bool) in
            guard !queue.exited else { return (false, true) }
            queue.jobs.append(job)
            defer { queue.wakePending = true }
            return (!queue.wakePending, false)
        }
        if exited {
            let executor = asUnownedSerialExecutor()
            afterwards.async { job.runSynchronously(on: executor) }
        } else if poke {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Whether the caller runs on the loop thread: lets the loop's own callbacks enter the actor
    /// with `assumeIsolated`, and makes that trap anywhere else.
    var isOnLoop: Bool { pthread_equal(pthread_self(), pthread_t(threadID.load(ordering: .acquiring))) != 0 }

    func isIsolatingCurrentContext() -> Bool? { isOnLoop }

    func checkIsolated() {
        precondition(isOnLoop, "coplay: shell state touched off its event loop")
    }

    // MARK: The loop thread's API

    /// Calls `readable` on the loop thread whenever `fd` has something to read. Loop thread only.
    func watch(
        _ fd: Int32, readable: @escaping @Sendable () -> Void, writable: (@Sendable () -> Void)? = nil
    ) {
        precondition(isOnLoop)
        sources.append(Source(fd: fd, readable: readable, writable: writable))
    }

    /// Stops watching `fd` (before it is closed). Loop thread only.
    func unwatch(_ fd: Int32) {
        precondition(isOnLoop)
        sources.removeAll { $0.fd == fd }
    }

    /// Whether `fd`'s `writable` is called when it can be written. Loop thread only.
    func setWantsWrite(_ fd: Int32, _ wants: Bool) {
        precondition(isOnLoop)
        guard let index = sources.firstIndex(where: { $0.fd == fd }) else { return }
        sources[index].wantsWrite = wants && sources[index].writable != nil
    }

    /// A timer that calls `fire` on the loop thread when it is due. Loop thread only.
    func makeTimer(_ fire: @escaping @Sendable () -> Void) -> Timer {
        precondition(isOnLoop)
        timers.append((nil, fire))
        return Timer(index: timers.count - 1)
    }

    /// Sets `timer` to fire at `due` (at once if it is past), replacing what it was set to.
    /// (A loop that stopped has no timers: then nothing happens.)
    func schedule(_ timer: Timer, at due: MonotonicInstant) {
        guard timer.index < timers.count else { return }
        timers[timer.index].due = due
    }

    /// When `timer` is set to fire; nil when it is not set.
    func due(_ timer: Timer) -> MonotonicInstant? { timer.index < timers.count ? timers[timer.index].due : nil }

    /// Stops watching sockets and firing timers once the current turn ends, and lets the thread
    /// go; jobs enqueued later run on a queue of their own, one at a time. Loop thread only
    /// (the shell calls it as its `run()` ends, before it closes the sockets).
    func stop() {
        precondition(isOnLoop)
        stopping = true
        sources = []
        timers = []
    }

    // MARK: The loop

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        var drain = [UInt8](repeating: 0, count: 64)
        var descriptors: [pollfd] = []
        while true {
            let jobs = queue.withLock { queue -> [UnownedJob] in
                if stopping, queue.jobs.isEmpty { queue.exited = true }
                defer { (queue.jobs, queue.wakePending) = ([], false) }
                return queue.jobs
            }
            for job in jobs { job.runSynchronously(on: asUnownedSerialExecutor()) }
            if stopping {
                if queue.withLock({ $0.exited }) { break }
                continue
            }
            if !jobs.isEmpty { continue }  // a job may have enqueued another, or set a timer

            let now = AgentClock.read(CLOCK_MONOTONIC)
            var timeoutMillis: Int32 = -1
            for timer in timers {
                guard let due = timer.due?.nanos else { continue }
                // Rounded up: a timer never fires early (and so never spins). No sum that could
                // overflow, however far off an instant the core asks for.
                let remaining = due <= now ? 0 : due - now
                let millis = min(Int64(Int32.max), remaining / 1_000_000 + (remaining % 1_000_000 == 0 ? 0 : 1))
                timeoutMillis = timeoutMillis < 0 ? Int32(millis) : min(timeoutMillis, Int32(millis))
            }
            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            for source in sources {
                let events = Int16(POLLIN) | (source.wantsWrite ? Int16(POLLOUT) : 0)
                descriptors.append(pollfd(fd: source.fd, events: events, revents: 0))
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeoutMillis)
            if ready < 0, errno != EINTR {
                // Never seen (EINVAL, ENOMEM): the loop must not end while the agent runs, nor
                // spin; it tries again a millisecond later.
                usleep(1_000)
                continue
            }
            if ready > 0 {
                if descriptors[0].revents != 0 { _ = read(wakeRead, &drain, drain.count) }
                // Sources are looked up again by descriptor: a callback may have stopped the loop.
                for descriptor in descriptors.dropFirst() where descriptor.revents != 0 {
                    guard let source = sources.first(where: { $0.fd == descriptor.fd }) else { continue }
                    if descriptor.revents & Int16(POLLOUT) != 0, source.wantsWrite, let writable = source.writable {
                        writable()
                        // The callback may have closed the socket, or stopped the loop.
                        guard sources.contains(where: { $0.fd == descriptor.fd }) else { continue }
                    }
                    if descriptor.revents & ~Int16(POLLOUT) != 0 { source.readable() }
                }
            }
            let after = MonotonicInstant(nanos: AgentClock.read(CLOCK_MONOTONIC))
            for index in timers.indices {
                guard index < timers.count, let due = timers[index].due, due <= after else { continue }
                timers[index].due = nil
                timers[index].fire()
            }
        }
        queue.withLock { $0.exited = true }
        afterwards.activate()
    }
}

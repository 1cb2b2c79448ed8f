import Foundation
import Testing

/// The real-agent tests wait: on their agents' events, on `usleep`, on processes' exits. Swift
/// Testing runs a synchronous test on a thread of the cooperative pool, which has as many
/// threads as the machine has cores, so on the two cores of CI two waiting tests held the whole
/// pool, and the simulations, which need the CPU, waited behind them: the fast tier took the sum
/// of every test's time over two.
///
/// A suite marked `.onALane` runs each of its tests on a thread of its own, off the pool (the
/// test's task prefers an executor of one thread, `ThreadExecutor`; task-locals, and so the test's
/// `#expect`s, go with the task). At most `Lanes.width` such tests run at once, so that the
/// agents of a few tests, not of every suite, share the machine with the simulations.
struct OnALane: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    /// A lane for each test case; the suite itself and a test function as a whole pass through
    /// (a parameterized test takes one lane per argument, not two).
    func scopeProvider(for test: Test, testCase: Test.Case?) -> OnALane? { testCase == nil ? nil : self }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await Lanes.shared.enter()
        let executor = ThreadExecutor()
        var failure: (any Error)?
        do {
            try await withTaskExecutorPreference(executor) { try await function() }
        } catch {
            failure = error
        }
        executor.stop()
        await Lanes.shared.leave()
        if let failure { throw failure }
    }
}

extension Trait where Self == OnALane {
    /// Each test of the suite on a thread of its own, off the cooperative pool (`OnALane`).
    static var onALane: Self { OnALane() }
}

/// At most `width` lane tests at once; the others wait their turn, in the order they came.
actor Lanes {
    static let shared = Lanes()
    /// Four. On two cores the fast tier took 117–120 s with all tests on the pool, 120 s with two
    /// lanes (the agents' suites, some 140 s of waiting in all, then outlast the simulations by
    /// a minute), 82–101 s with four, 78 s with six; four keeps the agents of at most four tests
    /// beside the simulations' two threads.
    static let width = 4

    private var inUse = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func enter() async {
        if inUse < Self.width {
            inUse += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the lane to the next waiting test, if any.
    func leave() {
        if waiting.isEmpty {
            inUse -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// A task executor of one thread of its own, which runs the jobs given to it in order until it
/// is stopped.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var stopped = false

    /// Its thread takes the pool thread's name on Linux (Foundation does not pass a `Thread`'s
    /// name on to it, and Swift's Glibc module does not export `pthread_setname_np`).
    init() {
        Thread { [self] in run() }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else {
            // Its test is over: nothing should come, but a job that does is still run.
            let executor = asUnownedTaskExecutor()
            Thread { job.runSynchronously(on: executor) }.start()
            return
        }
        jobs.append(job)
        condition.signal()
    }

    /// Ends the thread once the jobs already given have run.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            guard !jobs.isEmpty else {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

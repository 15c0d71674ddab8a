import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// A fixed set of threads that run the HTTP handler and write its answer
/// (both may block: a queue commit waits for its fsync, a slow client for
/// its socket), fed by the event loop. The number of threads bounds the
/// requests answered at once, not the connections open: an idle or
/// half-read connection costs no thread.
///
/// ```swift
/// let workers = HTTPWorkers(count: 8)
/// workers.submit { /* respond and write */ }
/// workers.finish()  // runs what was submitted, then joins the threads
/// ```
// Unchecked: jobs, head, finishing and threads are read and written only
// under `mutex` (threads: by the one thread that calls init and finish).
final class HTTPWorkers: @unchecked Sendable {
    private let mutex = PlainLock()
    private let workAvailable = PlainCondition()
    private var jobs: [() -> Void] = []
    private var head = 0
    private var finishing = false
    private var threads: [pthread_t] = []

    init(count: Int) {
        for _ in 0..<max(1, count) {
            let box = Unmanaged.passRetained(ThreadStart(workers: self))
            var thread = pthread_t()
            // The default stack (8 MiB of address space, touched pages only):
            // a handler runs the parsers, SQLite and zstd.
            let rc = pthread_create(
                &thread,
                nil,
                { raw in
                    let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
                    start.workers.work()
                    return nil
                },
                box.toOpaque()
            )
            if rc == 0 { threads.append(thread) } else { box.release() }
        }
    }

    private final class ThreadStart {
        let workers: HTTPWorkers
        init(workers: HTTPWorkers) { self.workers = workers }
    }

    /// Queues `job` for the next free thread.
    func submit(_ job: @escaping () -> Void) {
        mutex.lock()
        jobs.append(job)
        mutex.unlock()
        workAvailable.signal()
    }

    /// Runs every job submitted so far, then ends the threads and waits for them.
    func finish() {
        mutex.lock()
        finishing = true
        mutex.unlock()
        workAvailable.broadcast()
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }

    private func work() {
        while true {
            mutex.lock()
            while head == jobs.count && !finishing { mutex.wait(on: workAvailable) }
            guard head < jobs.count else {
                mutex.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64, head * 2 >= jobs.count {
                jobs.removeFirst(head)  // under a steady backlog: drop the jobs already run
                head = 0
            }
            mutex.unlock()
            job()
        }
    }
}

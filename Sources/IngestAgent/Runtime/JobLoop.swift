import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Work ready to run and work waiting for a deadline, served by the threads
/// that call ``serve(_:)``.
///
/// This is the heart of ``AgentExecutors``: a thread with nothing to do
/// sleeps on a condition variable until work arrives or the earliest
/// deadline passes, so an idle agent wakes only when one of its own timers
/// is due. (libdispatch, Swift's default on Linux, also wakes its manager
/// thread every second to watch its pool; see docs/BENCHMARKS.md.)
///
/// Who is woken, and when:
/// - A new item wakes one idle thread not already woken — unless a timer
///   started the work that queued it (see ``enqueue(_:)``); with no idle
///   thread it wakes the thread waiting for a deadline, which takes it.
/// - One idle thread at a time waits for the earliest deadline. A new
///   earliest deadline wakes it; with no such thread, a deadline queued by
///   anything but timer-started work wakes an idle thread to take the role,
///   so a thread busy with a long item (a commit waiting for the disk)
///   cannot make timers late while another thread idles.
/// - Conditions are signalled after the mutex is released, so a woken
///   thread does not block on it at once.
///
/// `Item` is `UnownedJob` in the executors; tests use plain values.
// Unchecked: every var is read and written only under `mutex`.
final class JobLoop<Item>: @unchecked Sendable {
    /// How many hops (an item queuing the next) timer-started work stays on
    /// its thread before what it queues is shared like any other work: the
    /// most ``ThreadRole`` can hold. A status round (a status write with its
    /// watchdog ping) takes fewer (docs/BENCHMARKS.md, "Idle wakeups").
    static var quietHops: UInt8 { 15 }

    private struct Entry {
        var item: Item
        /// 0: shared work; 1…``quietHops``: started by a timer, this many hops ago.
        var quietDepth: UInt8
    }

    private let mutex = PlainLock()
    /// Idle threads wait here for an item.
    private let workAvailable = PlainCondition()
    /// The one thread that waits for the earliest deadline waits here.
    private let deadlineChanged = PlainCondition()
    /// ``awaitStall(checkingEvery:)`` waits here; signalled when every
    /// thread is busy and work is waiting.
    private let backlogChanged = PlainCondition()

    private var ready = ItemRing<Entry>()
    private var timers = TimerHeap<Item>()
    private var idleThreads = 0
    /// Signals sent to idle threads that they have not taken yet: without
    /// this, a burst of items would all wake the same sleeper.
    private var wakesPending = 0
    private var busyThreads = 0
    private var deadlineWaiter = false
    private var servingThreadIDs: [Int32] = []
    private var stallWatcherAsleep = false
    private var itemsStarted: UInt64 = 0
    private var stopping = false

    init() {}

    /// Now on CLOCK_MONOTONIC, in nanoseconds: the clock deadlines use.
    static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    private var identity: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Whether the calling thread is one of those serving this loop.
    var servesCurrentThread: Bool { ThreadRole.current.loop == identity }

    /// How many hops ago a timer started the item the calling thread runs
    /// for this loop (0: not timer-started, or not one of its threads).
    private var currentQuietDepth: UInt8 {
        let role = ThreadRole.current
        return role.loop == identity ? role.quietDepth : 0
    }

    /// Idle threads that no signal is on its way to.
    private var freeThreads: Int { max(0, idleThreads - wakesPending) }

    /// Every serving thread is running an item (none free, none waiting for
    /// a deadline). Read with the mutex held.
    private var allBusy: Bool { busyThreads > 0 && freeThreads == 0 && !deadlineWaiter }

    /// Queues an item to run as soon as a thread is free.
    ///
    /// Work a timer started stays on its thread: an item queued by an item
    /// that a timer started (up to ``quietHops`` hops on) wakes nobody
    /// unless more than two items wait — that thread runs it next. An idle
    /// agent's rounds (a status write, a heartbeat, a recheck) all start
    /// from a timer and take a few hops between tasks each; waking another
    /// thread for each hop cost a wake-up and won nothing. Such items are
    /// expected to be short; one that blocks delays what it queued. Work
    /// from outside (a reading thread resuming a task, an upload finishing)
    /// is shared as soon as it is queued, since such an item may block its
    /// thread for a while (a commit waits for the disk).
    func enqueue(_ item: Item) {
        let depth = currentQuietDepth
        mutex.lock()
        ready.append(Entry(item: item, quietDepth: depth > 0 && depth < Self.quietHops ? depth + 1 : 0))
        var wake: PlainCondition?
        if depth > 0 && ready.count <= 2 {
            wake = nil  // the timer-started item running on this thread takes it next
        } else if freeThreads > 0 {
            wake = workAvailable
            wakesPending += 1
        } else if deadlineWaiter {
            wake = deadlineChanged
        }
        let watch = wake == nil && stallWatcherAsleep && allBusy
        if watch { stallWatcherAsleep = false }
        mutex.unlock()
        if let wake { wake.signal() }
        if watch { backlogChanged.signal() }
    }

    /// Queues an item to run once `deadline` (``now``'s clock) has passed.
    func enqueue(_ item: Item, deadline: UInt64) {
        let timerStarted = currentQuietDepth > 0
        mutex.lock()
        let earlier = timers.earliestDeadline.map { deadline < $0 } ?? true
        timers.insert(item, deadline: deadline)
        var wake: PlainCondition?
        if deadlineWaiter {
            if earlier { wake = deadlineChanged }
        } else if !timerStarted && freeThreads > 0 {
            // Nobody waits for deadlines: an idle thread takes the role. (A
            // timer-started item is short and its thread takes it next.)
            wake = workAvailable
            wakesPending += 1
        }
        let watch = wake == nil && stallWatcherAsleep && allBusy
        if watch { stallWatcherAsleep = false }
        mutex.unlock()
        if let wake { wake.signal() }
        if watch { backlogChanged.signal() }
    }

    /// Makes every ``serve(_:)`` and ``awaitStall(checkingEvery:)``
    /// return. Items still queued are not run.
    func stop() {
        mutex.lock()
        stopping = true
        mutex.unlock()
        workAvailable.broadcast()
        deadlineChanged.broadcast()
        backlogChanged.broadcast()
    }

    /// Runs items on the calling thread until ``stop()``.
    func serve(_ run: (Item) -> Void) {
        let outer = ThreadRole.current
        let threadID = ThreadState.currentID()
        defer { ThreadRole.current = outer }
        mutex.lock()
        servingThreadIDs.append(threadID)
        while !stopping {
            if let entry = ready.popFirst() {
                itemsStarted &+= 1
                busyThreads += 1
                // Shared work may block this thread for a while: if it was
                // the one waiting for deadlines, a free thread takes over.
                let handOff =
                    entry.quietDepth == 0 && !deadlineWaiter && timers.earliestDeadline != nil && freeThreads > 0
                if handOff { wakesPending += 1 }
                let watch = stallWatcherAsleep && allBusy && (!ready.isEmpty || timers.earliestDeadline != nil)
                if watch { stallWatcherAsleep = false }
                mutex.unlock()
                if handOff { workAvailable.signal() }
                if watch { backlogChanged.signal() }
                ThreadRole.current = ThreadRole(loop: identity, quietDepth: entry.quietDepth)
                run(entry.item)
                mutex.lock()
                busyThreads -= 1
                continue
            }
            if let deadline = timers.earliestDeadline {
                let now = Self.now
                if deadline <= now {
                    while let item = timers.popDue(now: now) { ready.append(Entry(item: item, quietDepth: 1)) }
                    continue
                }
                if !deadlineWaiter {
                    deadlineWaiter = true
                    mutex.wait(on: deadlineChanged, untilMonotonicNanoseconds: deadline)
                    deadlineWaiter = false
                    continue
                }
            }
            idleThreads += 1
            mutex.wait(on: workAvailable)
            idleThreads -= 1
            if wakesPending > 0 { wakesPending -= 1 }
        }
        servingThreadIDs.removeAll { $0 == threadID }
        mutex.unlock()
    }

    /// Blocks until the serving threads are stuck — every one busy, work
    /// due (an item ready or a deadline passed), none of them started an
    /// item for `interval` nanoseconds and none runnable (all blocked, as
    /// libdispatch judges its workers; busy on the CPU is not stuck) — and
    /// returns true; false after ``stop()``.
    ///
    /// Sleeps without a timeout until every thread is busy with work
    /// waiting (``enqueue(_:)`` and ``serve(_:)`` signal it), so
    /// watching costs no wake-ups when the agent is idle.
    func awaitStall(checkingEvery interval: UInt64) -> Bool {
        mutex.lock()
        defer { mutex.unlock() }
        while !stopping {
            guard allBusy else {
                stallWatcherAsleep = true
                mutex.wait(on: backlogChanged)
                stallWatcherAsleep = false
                continue
            }
            let started = itemsStarted
            let deadline = Self.now &+ interval
            while !stopping && Self.now < deadline {
                mutex.wait(on: backlogChanged, untilMonotonicNanoseconds: deadline)
            }
            guard !stopping, allBusy, workDue, itemsStarted == started else { continue }
            let threads = servingThreadIDs
            mutex.unlock()
            let anyRunnable = threads.contains { ThreadState.isRunnable($0) }
            mutex.lock()
            if !anyRunnable && !stopping && allBusy && itemsStarted == started {
                return true
            }
        }
        return false
    }

    /// An item is ready or a deadline has passed. Read with the mutex held.
    private var workDue: Bool {
        !ready.isEmpty || (timers.earliestDeadline.map { $0 <= Self.now } ?? false)
    }

    /// Whether ``awaitStall(checkingEvery:)`` sleeps until signalled, for tests.
    var stallWatcherIsAsleep: Bool {
        mutex.lock()
        defer { mutex.unlock() }
        return stallWatcherAsleep
    }

    /// The serving threads' states, for tests: (idle and not yet woken,
    /// busy, one waiting for a deadline).
    var threadStates: (idle: Int, busy: Int, deadlineWaiter: Bool) {
        mutex.lock()
        defer { mutex.unlock() }
        return (freeThreads, busyThreads, deadlineWaiter)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Work ready to run and work waiting for a deadline, served by the threads
/// that call ``serve(_:)``.
///
/// This is the heart of ``AgentExecutors``: a thread with nothing to do
/// sleeps on a condition variable until work arrives or the earliest
/// deadline passes, so an idle agent wakes only when one of its own timers is
/// due. (libdispatch, Swift's default on Linux, also wakes its manager
/// thread every second to watch its pool; see docs/BENCHMARKS.md.)
///
/// Wake-ups are kept to what is needed: a new item wakes one idle thread;
/// a new earliest deadline wakes only the one thread that waits for
/// deadlines, and nobody if a thread is busy (it looks at the deadlines
/// before it sleeps again). Conditions are signalled after the mutex is
/// released, so a woken thread does not block on it at once.
///
/// `Item` is `UnownedJob` in the executors; tests use plain values.
final class JobLoop<Item>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Idle threads wait here for an item.
    private let workAvailable: UnsafeMutablePointer<pthread_cond_t>
    /// The one thread that waits for the earliest deadline waits here.
    private let deadlineChanged: UnsafeMutablePointer<pthread_cond_t>
    /// ``awaitStall(checkingEvery:)`` waits here; signalled when items wait
    /// and every thread is busy.
    private let backlogChanged: UnsafeMutablePointer<pthread_cond_t>

    /// Ready items; `quiet` marks one that a timer started (see ``enqueue(_:)``).
    private var ready = ItemRing<(item: Item, quiet: Bool)>()
    private var timers = TimerHeap<Item>()
    private var idleThreads = 0
    private var busyThreads = 0
    private var deadlineWaiter = false
    private var stallWatcherAsleep = false
    private var itemsStarted: UInt64 = 0
    private var stopping = false

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        workAvailable = .allocate(capacity: 1)
        deadlineChanged = .allocate(capacity: 1)
        backlogChanged = .allocate(capacity: 1)
        pthread_cond_init(workAvailable, &attributes)
        pthread_cond_init(deadlineChanged, &attributes)
        pthread_cond_init(backlogChanged, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        for condition in [workAvailable, deadlineChanged, backlogChanged] {
            pthread_cond_destroy(condition)
            condition.deallocate()
        }
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Now on CLOCK_MONOTONIC, in nanoseconds: the clock deadlines use.
    static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Whether the calling thread is one of those serving this loop.
    var servesCurrentThread: Bool { ThreadRole.current.loop == Unmanaged.passUnretained(self).toOpaque() }

    /// Queues an item to run as soon as a thread is free.
    ///
    /// Work a timer started stays on its thread: an item queued by an item
    /// that a timer started (or by one of those, and so on) wakes nobody
    /// unless more than two items wait — that thread runs it next. An idle
    /// agent's rounds (a status write, a heartbeat, a recheck) all start
    /// from a timer and take a few hops between tasks each; waking another
    /// thread for each hop cost a wake-up and won nothing. Work that came
    /// from outside (a reading thread resuming a task, an upload finishing)
    /// is shared as soon as it is queued, since such an item may block its
    /// thread for a while (a commit waits for the disk).
    func enqueue(_ item: Item) {
        let role = ThreadRole.current
        let fromOwnThread = role.loop == Unmanaged.passUnretained(self).toOpaque()
        let quiet = fromOwnThread && role.quiet
        pthread_mutex_lock(mutex)
        ready.append((item, quiet))
        var wake: UnsafeMutablePointer<pthread_cond_t>?
        if quiet && ready.count <= 2 {
            wake = nil
        } else if idleThreads > 0 {
            wake = workAvailable
        } else if deadlineWaiter {
            wake = deadlineChanged
        }
        let watch = wake == nil && !fromOwnThread && stallWatcherAsleep && allBusy
        if watch { stallWatcherAsleep = false }
        pthread_mutex_unlock(mutex)
        if let wake { pthread_cond_signal(wake) }
        if watch { pthread_cond_signal(backlogChanged) }
    }

    /// Queues an item to run once `deadline` (``now``'s clock) has passed.
    func enqueue(_ item: Item, deadline: UInt64) {
        pthread_mutex_lock(mutex)
        let earlier = timers.earliestDeadline.map { deadline < $0 } ?? true
        timers.insert(item, deadline: deadline)
        var wake: UnsafeMutablePointer<pthread_cond_t>?
        if earlier {
            if deadlineWaiter {
                wake = deadlineChanged
            } else if busyThreads == 0 && idleThreads > 0 {
                wake = workAvailable
            }
        }
        pthread_mutex_unlock(mutex)
        if let wake { pthread_cond_signal(wake) }
    }

    /// Makes every ``serve(_:)`` and ``awaitStall(checkingEvery:)`` return.
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_mutex_unlock(mutex)
        pthread_cond_broadcast(workAvailable)
        pthread_cond_broadcast(deadlineChanged)
        pthread_cond_broadcast(backlogChanged)
    }

    /// Runs items on the calling thread until ``stop()``, or until
    /// `condition` holds (checked between items).
    func serve(until condition: () -> Bool = { false }, _ run: (Item) -> Void) {
        let outer = ThreadRole.current
        defer { ThreadRole.current = outer }
        let loop = Unmanaged.passUnretained(self).toOpaque()
        pthread_mutex_lock(mutex)
        while !stopping && !condition() {
            if let (item, quiet) = ready.popFirst() {
                ThreadRole.current = ThreadRole(loop: loop, quiet: quiet)
                itemsStarted &+= 1
                busyThreads += 1
                let watch = stallWatcherAsleep && allBusy && !ready.isEmpty
                if watch { stallWatcherAsleep = false }
                pthread_mutex_unlock(mutex)
                if watch { pthread_cond_signal(backlogChanged) }
                run(item)
                pthread_mutex_lock(mutex)
                busyThreads -= 1
                continue
            }
            if let deadline = timers.earliestDeadline {
                let now = Self.now
                if deadline <= now {
                    while let item = timers.popDue(now: now) { ready.append((item, true)) }
                    continue
                }
                if !deadlineWaiter {
                    deadlineWaiter = true
                    var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                    pthread_cond_timedwait(deadlineChanged, mutex, &until)
                    deadlineWaiter = false
                    continue
                }
            }
            idleThreads += 1
            pthread_cond_wait(workAvailable, mutex)
            idleThreads -= 1
        }
        pthread_mutex_unlock(mutex)
    }

    /// Blocks until work is due — an item ready or a deadline passed — while
    /// every serving thread is busy and none of them started an item for
    /// `interval` nanoseconds (they are all blocked), and returns true;
    /// false after ``stop()``.
    ///
    /// Sleeps without a timeout until items wait while every thread is busy
    /// (``enqueue(_:)`` and ``serve(until:_:)`` signal it), so watching costs
    /// no wake-ups when the agent is idle. A deadline that passes while every
    /// thread is stuck is noticed with the next item queued.
    func awaitStall(checkingEvery interval: UInt64) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !stopping {
            guard allBusy else {
                stallWatcherAsleep = true
                pthread_cond_wait(backlogChanged, mutex)
                stallWatcherAsleep = false
                continue
            }
            let started = itemsStarted
            let deadline = Self.now &+ interval
            var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            while !stopping && Self.now < deadline {
                pthread_cond_timedwait(backlogChanged, mutex, &until)
            }
            let due = !ready.isEmpty || (timers.earliestDeadline.map { $0 <= Self.now } ?? false)
            if !stopping && allBusy && due && itemsStarted == started {
                return true
            }
        }
        return false
    }

    /// Every serving thread is running an item (none idle, none waiting for
    /// a deadline). Read with the mutex held.
    private var allBusy: Bool { busyThreads > 0 && idleThreads == 0 && !deadlineWaiter }

    /// Counts of the serving threads, for tests: (idle, busy, waiting for a deadline).
    var threadStates: (idle: Int, busy: Int, deadlineWaiter: Bool) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return (idleThreads, busyThreads, deadlineWaiter)
    }
}

/// What the current thread is doing for the executors: which ``JobLoop``
/// it serves (nil: none) and whether the item it runs is quiet — started by
/// a timer, see ``JobLoop/enqueue(_:)``. Kept in one thread-specific
/// pointer: the loop's address with the low bit set when quiet.
struct ThreadRole {
    var loop: UnsafeMutableRawPointer?
    var quiet: Bool

    static var current: ThreadRole {
        get {
            let bits = UInt(bitPattern: pthread_getspecific(key))
            return ThreadRole(loop: UnsafeMutableRawPointer(bitPattern: bits & ~1), quiet: bits & 1 != 0)
        }
        set {
            let bits = UInt(bitPattern: newValue.loop) | (newValue.quiet ? 1 : 0)
            pthread_setspecific(key, UnsafeRawPointer(bitPattern: bits))
        }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left for the executors")
        return key
    }()
}

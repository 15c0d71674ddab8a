import EdgeIngestCore
import Synchronization
import Testing

@testable import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// The queue, the timer heap and the loop under ingestd's executors,
/// driven with plain values on threads the tests start.
@Suite struct JobLoopTests {
    @Test func ringKeepsOrderAcrossGrowth() {
        var ring = ItemRing<Int>()
        var expected: [Int] = []
        var popped: [Int] = []
        var next = 0
        // Interleave appends and pops so the head wraps before the ring grows.
        for round in 0..<50 {
            for _ in 0..<(round * 7 % 40 + 1) {
                ring.append(next)
                expected.append(next)
                next += 1
            }
            for _ in 0..<(round * 5 % 30) {
                if let item = ring.popFirst() { popped.append(item) }
            }
        }
        while let item = ring.popFirst() { popped.append(item) }
        #expect(popped == expected)
        #expect(ring.isEmpty)
        #expect(next > 64)  // the ring grew at least once
    }

    @Test func heapReleasesByDeadlineThenArrival() {
        var heap = TimerHeap<(deadline: UInt64, arrival: Int)>()
        var generator = SystemRandomNumberGenerator()
        var all: [(deadline: UInt64, arrival: Int)] = []
        for arrival in 0..<2_000 {
            let deadline = UInt64.random(in: 0..<300, using: &generator)
            heap.insert((deadline, arrival), deadline: deadline)
            all.append((deadline, arrival))
        }
        var released: [(deadline: UInt64, arrival: Int)] = []
        // Nothing after `now` comes out.
        while let item = heap.popDue(now: 149) { released.append(item) }
        #expect(released.allSatisfy { $0.deadline <= 149 })
        #expect(heap.earliestDeadline.map { $0 >= 150 } ?? true)
        while let item = heap.popDue(now: .max) { released.append(item) }
        let sorted = all.sorted { $0.deadline != $1.deadline ? $0.deadline < $1.deadline : $0.arrival < $1.arrival }
        #expect(released.map(\.arrival) == sorted.map(\.arrival))
        #expect(heap.count == 0)
    }

    @Test func everyItemRunsOnceAcrossThreads() async {
        let loop = JobLoop<Int>()
        let seen = Mutex([Int](repeating: 0, count: 20_000))
        let servers = serving(loop, threads: 3) { item in seen.withLock { $0[item] += 1 } }
        let producers = (0..<4).map { part in
            TestThread { for item in stride(from: part, to: 20_000, by: 4) { loop.enqueue(item) } }
        }
        producers.forEach { $0.join() }
        #expect(await eventually { seen.withLock { $0.allSatisfy { $0 == 1 } } })
        stopServing(loop, servers)
        #expect(seen.withLock { $0.allSatisfy { $0 == 1 } })
    }

    @Test func timersRunAtTheirDeadlineInOrder() async {
        let loop = JobLoop<Int>()
        let fired = Mutex<[(item: Int, at: UInt64)]>([])
        let servers = serving(loop, threads: 1) { item in fired.withLock { $0.append((item, JobLoop<Int>.now)) } }
        let start = JobLoop<Int>.now
        let deadlines: [Int: UInt64] = [0: 300, 1: 100, 2: 200, 3: 100, 4: 0].mapValues { start + $0 * 1_000_000 }
        for item in [0, 1, 2, 3, 4] { loop.enqueue(item, deadline: deadlines[item]!) }
        #expect(await eventually { fired.withLock { $0.count } == 5 })
        stopServing(loop, servers)
        let order = fired.withLock { $0 }
        #expect(order.map(\.item) == [4, 1, 3, 2, 0])
        for entry in order { #expect(entry.at >= deadlines[entry.item]!) }
    }

    @Test func anEarlierTimerWakesTheWaitingThread() async {
        let loop = JobLoop<Int>()
        let fired = Mutex<[Int]>([])
        let servers = serving(loop, threads: 1) { item in fired.withLock { $0.append(item) } }
        loop.enqueue(1, deadline: JobLoop<Int>.now + 3_600_000_000_000)  // an hour away
        #expect(await eventually { loop.threadStates.deadlineWaiter })
        loop.enqueue(2, deadline: JobLoop<Int>.now + 10_000_000)
        #expect(await eventually { fired.withLock { $0 } == [2] })
        stopServing(loop, servers)
    }

    /// An idle agent's round starts from a timer and hops between a few
    /// tasks: the hops stay on the thread the timer woke.
    @Test func workATimerStartedStaysOnItsThread() async {
        let loop = JobLoop<Int>()
        let ranOn = Mutex<[Int: Int32]>([:])
        let servers = serving(loop, threads: 2) { item in
            ranOn.withLock { $0[item] = currentThreadID() }
            // Busy a little after queueing, so that a woken thread
            // would take the next hop first.
            if item == 1 {
                loop.enqueue(2)
                usleep(20_000)
            }
            if item == 2 {
                loop.enqueue(3)
                usleep(20_000)
            }
        }
        #expect(await eventually { loop.threadStates.idle == 2 })
        loop.enqueue(1, deadline: JobLoop<Int>.now + 20_000_000)
        #expect(await eventually { ranOn.withLock { $0.count } == 3 })
        let threads = ranOn.withLock { $0 }
        #expect(threads[1] == threads[2] && threads[2] == threads[3], "timer-started hops moved threads: \(threads)")
        stopServing(loop, servers)
    }

    /// Work from outside may block its thread (a commit waits for the disk):
    /// what it queues is shared at once, not left behind it.
    @Test func workFromOutsideIsSharedAtOnce() async {
        let loop = JobLoop<Int>()
        let followUpRan = Flag()
        let sawFollowUp = Flag()
        let servers = serving(loop, threads: 2) { item in
            if item == 1 {
                loop.enqueue(2)
                // Blocks until the follow-up has run elsewhere (at most 5 s).
                for _ in 0..<5_000 where !followUpRan.isSet { usleep(1_000) }
                if followUpRan.isSet { sawFollowUp.set() }
            } else {
                followUpRan.set()
            }
        }
        #expect(await eventually { loop.threadStates.idle == 2 })
        loop.enqueue(1)
        #expect(await eventually { sawFollowUp.isSet })
        stopServing(loop, servers)
    }

    /// The point of these executors: a thread with nothing due sleeps —
    /// no periodic wake-up, whether it waits for work or for a deadline an
    /// hour away.
    @Test func idleThreadsDoNotWakeUp() async throws {
        let loop = JobLoop<Int>()
        let ids = Mutex<[Int32]>([])
        let servers = (0..<3).map { _ in
            TestThread {
                ids.withLock { $0.append(currentThreadID()) }
                loop.serve { _ in }
            }
        }
        loop.enqueue(1, deadline: JobLoop<Int>.now + 3_600_000_000_000)
        #expect(await eventually { loop.threadStates == (idle: 2, busy: 0, deadlineWaiter: true) })
        try await Task.sleep(for: .milliseconds(100))
        let threads = ids.withLock { $0 }
        #expect(threads.count == 3 && threads.allSatisfy { $0 > 0 }, "thread ids not readable: \(threads)")
        let before = threads.map(contextSwitches)
        try await Task.sleep(for: .seconds(2))
        let after = threads.map(contextSwitches)
        #expect(after == before, "idle threads were woken: \(before) -> \(after) context switches")
        stopServing(loop, servers)
    }

    @Test func aStallIsReportedWhenEveryThreadIsBlocked() async {
        let loop = JobLoop<Int>()
        let release = Flag()
        let server = TestThread {
            loop.serve { item in
                if item == 0 { while !release.isSet { usleep(1_000) } }  // blocked, not runnable
            }
        }
        let reported = Flag()
        let watcher = TestThread {
            if loop.awaitStall(checkingEvery: 20_000_000) { reported.set() }
        }
        loop.enqueue(0)  // occupies the only thread
        #expect(await eventually { loop.threadStates.busy == 1 })
        loop.enqueue(1)  // waits behind it
        #expect(await eventually { reported.isSet })
        release.set()
        loop.stop()  // ends the watcher if it never reported
        watcher.join()
        server.join()
    }

    /// libdispatch adds workers only when none is runnable: a thread busy on
    /// the CPU is not stuck, even with work waiting behind it.
    @Test func aThreadBusyOnTheCPUIsNotAStall() async {
        let loop = JobLoop<Int>()
        let spinning = Flag()
        let server = TestThread {
            loop.serve { item in
                guard item == 0 else { return }
                spinning.set()
                let end = JobLoop<Int>.now + 600_000_000
                var x: UInt64 = 0
                while JobLoop<Int>.now < end { x &+= 1 }  // runnable throughout
                _ = x
            }
        }
        let reported = Flag()
        let watcher = TestThread {
            if loop.awaitStall(checkingEvery: 20_000_000) { reported.set() }
        }
        loop.enqueue(0)
        #expect(await eventually { spinning.isSet })
        loop.enqueue(1)
        try? await Task.sleep(for: .milliseconds(700))  // past the spin
        loop.stop()
        watcher.join()
        server.join()
        #expect(!reported.isSet)
    }

    /// Three items from outside, three free threads: all three run at once
    /// (each waits until it sees the others running). Waking the same
    /// sleeping thread twice would leave one behind.
    @Test func aBurstFromOutsideUsesEveryFreeThread() async {
        let loop = JobLoop<Int>()
        let running = Mutex(0)
        let mostAtOnce = Mutex(0)
        let servers = serving(loop, threads: 3) { _ in
            let now = running.withLock {
                $0 += 1
                return $0
            }
            mostAtOnce.withLock { $0 = max($0, now) }
            for _ in 0..<10_000 where mostAtOnce.withLock({ $0 }) < 3 { usleep(1_000) }
            running.withLock { $0 -= 1 }
        }
        // One of the three waits for a deadline an hour away, the others idle.
        loop.enqueue(99, deadline: JobLoop<Int>.now + 3_600_000_000_000)
        #expect(await eventually { loop.threadStates == (idle: 2, busy: 0, deadlineWaiter: true) })
        for item in 0..<3 { loop.enqueue(item) }
        #expect(await eventually { running.withLock { $0 } == 0 && mostAtOnce.withLock { $0 } > 0 })
        #expect(mostAtOnce.withLock { $0 } == 3)
        stopServing(loop, servers)
    }

    /// A thread busy with a long item (a commit waiting for the disk) must
    /// not make timers late while another thread idles.
    @Test func aTimerIsNotLateBehindALongItem() async {
        let loop = JobLoop<Int>()
        let longItemStarted = Flag()
        let longItemDone = Flag()
        let giveUp = Flag()
        let timerFired = Flag()
        let timerFiredDuringLongItem = Flag()
        let servers = serving(loop, threads: 2) { item in
            if item == 0 {
                longItemStarted.set()
                // Busy until the timer fired elsewhere, or the test gave up.
                while !timerFired.isSet && !giveUp.isSet { usleep(1_000) }
                longItemDone.set()
            } else {
                if !longItemDone.isSet { timerFiredDuringLongItem.set() }
                timerFired.set()
            }
        }
        #expect(await eventually { loop.threadStates.idle == 2 })
        loop.enqueue(0)
        #expect(await eventually { longItemStarted.isSet })
        loop.enqueue(1, deadline: JobLoop<Int>.now + 50_000_000)
        let firedInTime = await eventually { timerFired.isSet }
        giveUp.set()
        #expect(firedInTime && timerFiredDuringLongItem.isSet, "the timer waited for the long item")
        stopServing(loop, servers)
    }

    @Test func anEmptiedRingGivesBackABurstsMemory() {
        var ring = ItemRing<Int>()
        for item in 0..<10_000 { ring.append(item) }
        #expect(ring.capacity >= 10_000)
        while ring.popFirst() != nil {}
        #expect(ring.capacity == 64)
    }

    @Test func threadStatesFromProc() async {
        #expect(ThreadState.currentID() > 0)
        #expect(ThreadState.isRunnable(ThreadState.currentID()))  // it is running this
        let id = Mutex<Int32>(0)
        let release = Flag()
        let sleeper = TestThread {
            id.withLock { $0 = ThreadState.currentID() }
            while !release.isSet { usleep(5_000) }
        }
        #expect(await eventually { id.withLock { $0 } > 0 })
        var sawSleeping = false
        for _ in 0..<100 where !sawSleeping {
            sawSleeping = !ThreadState.isRunnable(id.withLock { $0 })
            usleep(1_000)
        }
        #expect(sawSleeping)
        release.set()
        sleeper.join()
        #expect(ThreadState.isRunnable(999_999_999))  // unreadable: assume busy, never stuck
    }
}

/// A joinable thread for tests.
final class TestThread: @unchecked Sendable {
    private let handle: pthread_t

    init(_ body: @escaping () -> Void) {
        handle = BlockingThread.start(body)!
    }

    func join() { pthread_join(handle, nil) }
}

/// `count` threads serving `loop` with `run`.
func serving(_ loop: JobLoop<Int>, threads count: Int, _ run: @escaping (Int) -> Void) -> [TestThread] {
    (0..<count).map { _ in TestThread { loop.serve(run) } }
}

/// Stops `loop` and waits for its threads to return.
func stopServing(_ loop: JobLoop<Int>, _ threads: [TestThread]) {
    loop.stop()
    threads.forEach { $0.join() }
}

/// Polls `condition` every 10 ms for up to 10 s.
func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<1_000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// The calling thread's kernel id (what /proc/self/task lists).
func currentThreadID() -> Int32 { ThreadState.currentID() }

/// Voluntary plus involuntary context switches of thread `id` of this process.
func contextSwitches(_ id: Int32) -> Int {
    guard let file = fopen("/proc/self/task/\(id)/status", "r") else { return -1 }
    defer { fclose(file) }
    var total = 0
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("voluntary_ctxt_switches:") || text.hasPrefix("nonvoluntary_ctxt_switches:") {
            total += Int(text.split(separator: ":")[1].trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
    }
    return total
}

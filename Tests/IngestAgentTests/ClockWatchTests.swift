import EdgeIngestCore
import Logging
import Testing

@testable import IngestAgent

/// The agent's view of the wall clock (docs/QUEUE.md, "Boxes without a
/// real-time clock"): synchronisation, jumps, and the lines it logs.
@Suite struct ClockWatchTests {
    /// A clock the test moves: state, wall and boot-time ms.
    final class FakeClock: Sendable {
        let now = PlainMutex((state: Int64?.some(0), wall: Int64(86_400_000), boottime: Int64(180_000)))
        func advance(_ ms: Int64) {
            now.withLock {
                $0.wall += ms
                $0.boottime += ms
            }
        }
        var watch: ClockWatch { ClockWatch(read: { [now] in now.withLock { $0 } }) }
    }

    @Test func aBoxBootingAt1970IsUnsynchronisedSinceBootThenSynchronisedWithTheJump() {
        let clock = FakeClock()
        let watch = clock.watch
        #expect(watch.look() == [.startedUnsynchronised(uptime: 180_000)])
        #expect(watch.look().isEmpty)
        #expect(watch.snapshot.state == .unsynchronised && watch.snapshot.since == 0)
        #expect(
            ClockWatch.Change.startedUnsynchronised(uptime: 180_000).description.hasPrefix(
                "clock: unsynchronised since boot, 3 m:"
            )
        )
        clock.advance(1_000)
        // NTP steps the clock 1.6 years ahead, then says it is synchronised.
        let jump = Int64(1.6 * 365.25 * 86_400_000)
        clock.now.withLock { $0.wall += jump }
        #expect(watch.look() == [.jumped(jump)])
        clock.now.withLock { $0.state = 1 }
        clock.advance(1_000)
        let changes = watch.look()
        #expect(changes == [.synchronised(jump: jump)])
        #expect(changes.map(\.description) == ["clock synchronised: jumped +1.6 years"])
        #expect(watch.snapshot.state == .synchronised && watch.snapshot.jumps == 1)
        #expect(watch.snapshot.lastJump?.milliseconds == jump)
    }

    @Test func slewingIsNoJumpAndASynchronisedStartSaysNothing() {
        let clock = FakeClock()
        clock.now.withLock { $0.state = 1 }
        let watch = clock.watch
        #expect(watch.look().isEmpty)
        for _ in 0..<10 {
            clock.advance(5_000)
            clock.now.withLock { $0.wall += 3 }  // 0.6 ms/s: faster than NTP ever slews
            #expect(watch.look().isEmpty)
        }
        clock.now.withLock { $0.wall -= 7_200_000 }
        #expect(watch.look().map(\.description) == ["clock jumped -2.0 h"])
        clock.now.withLock { $0.state = 0 }
        #expect(watch.look() == [.lost])
    }

    @Test func unknownIsSaidOnceWithWhatToDo() {
        let clock = FakeClock()
        clock.now.withLock { $0.state = nil }
        let watch = clock.watch
        let changes = watch.look()
        #expect(changes == [.startedUnknown])
        #expect(changes[0].description.contains("[clock] synchronised_file"))
        #expect(watch.look().isEmpty)
    }

    @Test func durationsReadAsAnOperatorWouldSayThem() {
        #expect(ClockWatch.duration(350) == "350 ms")
        #expect(ClockWatch.duration(42_000) == "42 s")
        #expect(ClockWatch.duration(180_000) == "3 m")
        #expect(ClockWatch.duration(9_000_000) == "2.5 h")
        #expect(ClockWatch.duration(3 * 86_400_000) == "3.0 days")
        #expect(ClockWatch.duration(40 * 86_400_000) == "40 days")
        #expect(ClockWatch.signedDuration(-7_200_000) == "-2.0 h")
        #expect(ClockWatch.signedDuration(.min).hasPrefix("-"))
    }

    @Test func statusSaysTheClockInItsTextAndMetrics() throws {
        var status = AgentStatus(state: .idle, statistics: .empty, inputs: [], pid: 1)
        status.clock = "unsynchronised"
        status.clockForSeconds = 180
        status.clockSinceBoot = true
        status.clockJumpsTotal = 0
        #expect(
            status.textLines.contains("  clock:    unsynchronised since boot, 3 m (readings are corrected once it is)")
        )
        #expect(status.prometheusText.contains("ingestd_clock_synchronised 0\n"))
        #expect(status.prometheusText.contains("ingestd_clock_jumps_total 0\n"))
        status.clock = "synchronised"
        status.clockLastJumpMilliseconds = 50_492_160_000
        #expect(status.textLines.contains("  clock:    synchronised; last jump +1.6 years"))
        #expect(status.prometheusText.contains("ingestd_clock_synchronised 1\n"))
        let decoded = try AgentStatus.decode(status.json())
        #expect(decoded == status)
    }
}

extension ClockWatchTests {
    /// An operator whose backlog does not leave is told why, when the
    /// reason is the clock.
    @Test func aBacklogHeldForTheClockSaysSo() throws {
        let type = try RecordType(name: "T", fields: [.init(name: "v", type: .int)])
        var configuration = QueueConfiguration(
            location: .inMemory(identifier: "held-\(wallClockMilliseconds())"),
            objectTypes: [type]
        )
        configuration.acceptanceStamps["T"] = AcceptanceStamping(timeField: "at", holdUnsynchronised: true)
        let service = StatusService(
            queue: try DurableQueue.open(configuration),
            inputs: [],
            statusPath: "/dev/null",
            notifier: SystemdNotifier(),
            statusIntervalMilliseconds: 1000,
            statsIntervalSeconds: 0,
            logger: Logger(label: "test")
        )
        var status = AgentStatus(state: .idle, statistics: .empty, inputs: [], pid: 1)
        status.oldestAgeSeconds = 900
        status.clock = "unsynchronised"
        #expect(service.deliveryProblem(status)?.contains("wait for the clock to be synchronised") == true)
        status.clock = "synchronised"
        #expect(service.deliveryProblem(status)?.contains("wait for the clock") == false)
    }
}

import EdgeIngest
import Logging
import Testing

@testable import IngestAgent

@Suite struct WatchdogHealthTests {
    func service(_ counters: [InputCounters], upload: UploadState? = nil) throws -> StatusService {
        let type = try RecordType(name: "T", fields: [.init(name: "v", type: .int)])
        let queue = try DurableQueue.open(
            QueueConfiguration(
                location: .inMemory(identifier: "watchdog-\(counters.count)-\(wallClockMilliseconds())"),
                objectTypes: [type]
            )
        )
        return StatusService(
            queue: queue,
            inputs: counters,
            upload: upload,
            statusPath: "/dev/null",
            notifier: SystemdNotifier(),
            statusIntervalMilliseconds: 1000,
            statsIntervalSeconds: 0,
            logger: Logger(label: "test")
        )
    }

    /// An idle input proves it is alive four times per interval after which
    /// it would be called wedged.
    @Test func anIdleInputsHeartbeatIsAQuarterOfTheWedgeInterval() {
        #expect(InputContext.idleHeartbeat(watchdogMicroseconds: 30_000_000) == 7_500)
        #expect(InputContext.idleHeartbeat(watchdogMicroseconds: nil) == 7_500)  // wedged after 30 s without a watchdog
        #expect(InputContext.idleHeartbeat(watchdogMicroseconds: 2_000_000) == 500)
        #expect(InputContext.idleHeartbeat(watchdogMicroseconds: 1_000) == 10)
        #expect(InputContext.idleHeartbeat(watchdogMicroseconds: .max) > 0)
    }

    @Test func aWedgedInputWithholdsTheWatchdog() throws {
        let wedged = InputCounters(name: "serial:/dev/ttyUSB0", kind: "serial")
        wedged.update { $0.heartbeatAt = monotonicMilliseconds() - 120_000 }
        let reason = try service([InputCounters(name: "stdin", kind: "stdin"), wedged]).unhealthyReason()
        #expect(reason == "input 'serial:/dev/ttyUSB0' has shown no progress for 120 s")
    }

    @Test func waitingForQueueSpaceOrFinishedIsHealthy() throws {
        let waiting = InputCounters(name: "a", kind: "stdin")
        waiting.update {
            $0.heartbeatAt = 0
            $0.waitingForSpace = true
        }
        let finished = InputCounters(name: "b", kind: "stdin")
        finished.update {
            $0.heartbeatAt = 0
            $0.finished = true
        }
        #expect(try service([waiting, finished, InputCounters(name: "c", kind: "file")]).unhealthyReason() == nil)
    }

    @Test func anUploaderPastItsPromisedDeadlineIsWedged() throws {
        let upload = UploadState()
        upload.expectProgress(within: 60_000)  // e.g. a request with a 60 s timeout
        #expect(try service([], upload: upload).wedgedReason() == nil)
        upload.update { $0.aliveUntil = monotonicMilliseconds() - 5_000 }
        let reason = try #require(try service([], upload: upload).wedgedReason())
        #expect(reason.hasPrefix("the uploader has shown no progress"))
        // A full disk is reported, but is no reason for a restart.
        let paused = InputCounters(name: "stdin", kind: "stdin")
        paused.update { $0.problem = "the queue's disk is full" }
        let healthy = UploadState()
        healthy.expectProgress(within: 1_000)
        let status = try service([paused], upload: healthy)
        #expect(status.wedgedReason() == nil)
        #expect(status.unhealthyReason() == "input 'stdin': the queue's disk is full")
    }
}

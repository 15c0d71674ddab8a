import EdgeIngest
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite struct QueueSpaceTests {
    /// Opens with a compact-on-launch predicate that always compacts and
    /// returns what it was asked: the file's total and used bytes.
    func openCompacting(_ configuration: QueueConfiguration) throws -> (DurableQueue, total: Int64, used: Int64) {
        var configuration = configuration
        let asked = Mutex<(Int64, Int64)?>(nil)
        configuration.shouldCompactOnLaunch = { total, used in
            asked.withLock { $0 = (total, used) }
            return true
        }
        let queue = try DurableQueue.open(configuration)
        let (total, used) = try #require(asked.withLock { $0 })
        return (queue, total, used)
    }

    @Test func drainingReturnsSpaceAndCompactOnLaunchShrinksTheFile() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        var configuration = try fileConfiguration(dir)
        configuration.shouldCompactOnLaunch = nil
        configuration.compression = .none  // page reclaim is what is measured, on pages filled plain
        var peak: Int64 = 0
        do {
            let queue = try DurableQueue.open(configuration)
            for b in 0..<40 { try await queue.append(try weatherRecords(1000, start: b * 1000)) }
            peak = try queue.statistics().fileBytes  // file + WAL
            // Drain all but the last batch.
            for _ in 0..<39 {
                let lease = try #require(try queue.take(maxRecords: 1000))
                try queue.acknowledge(lease)
            }
            queue.close()
        }
        #expect(peak > 5_000_000)
        let afterDrain = QueueFile(path).size
        #expect(afterDrain < peak / 2)  // incremental vacuum gave pages back while draining

        let (queue, total, used) = try openCompacting(configuration)
        #expect(used <= total)
        #expect(QueueFile(path).size <= afterDrain)
        #expect(try queue.statistics().queuedRecords == 1000)
    }

    /// Half drained, the queue keeps its free pages for reuse (nothing is
    /// reclaimed while draining); compact-on-launch gives them back, at once.
    @Test func compactOnLaunchGivesTheFreePagesBack() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        var configuration = try fileConfiguration(dir)
        configuration.shouldCompactOnLaunch = nil
        configuration.compression = .none  // page reclaim is what is measured, on pages filled plain
        do {
            let queue = try DurableQueue.open(configuration)
            for b in 0..<40 { try await queue.append(try weatherRecords(1000, start: b * 1000)) }
            for _ in 0..<20 {
                let lease = try #require(try queue.take(maxRecords: 1000))
                try queue.acknowledge(lease)
            }
            queue.close()
        }
        let beforeLaunch = QueueFile(path).size
        let (queue, total, used) = try openCompacting(configuration)
        #expect(used < total * 3 / 4, "about half the file was free: \(used) of \(total) bytes in use")
        #expect(
            QueueFile(path).size < beforeLaunch * 3 / 4,
            "\(QueueFile(path).size) bytes after compacting, \(beforeLaunch) before"
        )
        #expect(try queue.statistics().queuedRecords == 20_000)
        queue.close()
    }
}

struct QueueFile {
    let path: String
    init(_ path: String) { self.path = path }
    var size: Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.int64Value ?? 0
    }
}

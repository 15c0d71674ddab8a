import TestSupport
import EdgeIngest
import Foundation
import Testing

/// A child process appends batches in a loop and is killed with SIGKILL at
/// random moments. After each kill the queue must hold every batch the
/// child reported committed, complete, no partial batch at all, and no
/// batch that was already verified and acknowledged in an earlier round.
@Suite(.serialized) struct QueueCrashTests {
    @Test func sigkillNeverLosesACommittedBatchNorLeavesAPartialOne() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        var verified = Set<Int>()  // batches checked and acknowledged in earlier rounds
        var acknowledged: Int64 = 0
        var rng = SystemRandomNumberGenerator()
        for round in 0..<8 {
            let process = Process()
            process.executableURL = CrashProbe.executable
            process.arguments = ["append", path, "\(round * 1_000_000)"]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            try await Task.sleep(for: .milliseconds(Int.random(in: 150...600, using: &rng)))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)
            var committed: [Int: Int] = [:]  // batch → count, as reported by the child
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ")
                // A line cut by the kill is not a report.
                guard parts.count == 3, parts[0] == "committed", let b = Int(parts[1]), let n = Int(parts[2]) else { continue }
                committed[b] = n
            }
            #expect(!committed.isEmpty, "round \(round): the child committed nothing before the kill")

            let configuration = QueueConfiguration(location: .file(path: path), objectTypes: [try declaredWeatherSensor()])
            let queue = try DurableQueue.open(configuration)
            var declared: [Int: Int] = [:]  // batch → count its records declare
            var present: [Int: Int] = [:]  // batch → records found, in index order
            var problems: [String] = []
            let lease = try #require(try queue.take(maxRecords: .max))
            for i in 0..<lease.recordCount {
                let json = lease.recordJSON(at: i)
                guard let batch = integer(after: #""deviceId":"b"#, in: json),
                    let size = integer(after: "-", in: json, from: #""deviceId":"b"#),
                    let index = integer(after: #""windSpeedInMph":"#, in: json)
                else {
                    problems.append("record \(i) is not a probe record")
                    continue
                }
                if index != present[batch, default: 0] { problems.append("batch \(batch) out of order at \(index)") }
                present[batch, default: 0] += 1
                declared[batch] = size
            }
            for (batch, count) in present {
                if count != declared[batch] { problems.append("batch \(batch) is partial: \(count) of \(declared[batch]!)") }
                if verified.contains(batch) { problems.append("batch \(batch) is back after being acknowledged") }
            }
            for (batch, count) in committed where present[batch] != count {
                problems.append("committed batch \(batch) (\(count) records) has \(present[batch] ?? 0) in the queue")
            }
            #expect(problems.isEmpty, "round \(round): \(problems.prefix(5))")
            // Counters agree with the contents, across every restart.
            let stats = try queue.statistics()
            #expect(stats.queuedRecords == Int64(lease.recordCount))
            #expect(stats.appendedTotal == acknowledged + Int64(lease.recordCount))
            try queue.acknowledge(lease)
            acknowledged += Int64(lease.recordCount)
            verified.formUnion(present.keys)
            queue.close()
        }
    }
}

/// The decimal integer right after `marker` in `json` (searching after
/// `anchor` first, if given). Plain byte search: Regex is too slow here.
private func integer(after marker: String, in json: ArraySlice<UInt8>, from anchor: String? = nil) -> Int? {
    func find(_ needle: [UInt8], in hay: ArraySlice<UInt8>) -> ArraySlice<UInt8>.Index? {
        guard needle.count <= hay.count else { return nil }
        var i = hay.startIndex
        while i + needle.count <= hay.endIndex {
            if hay[i..<i + needle.count].elementsEqual(needle) { return i + needle.count }
            i += 1
        }
        return nil
    }
    var slice = json
    if let anchor, let start = find(Array(anchor.utf8), in: slice) { slice = slice[start...] }
    guard var i = find(Array(marker.utf8), in: slice) else { return nil }
    var value = 0
    var digits = 0
    while i < slice.endIndex, slice[i] >= 48, slice[i] <= 57 {
        value = value * 10 + Int(slice[i] - 48)
        i += 1
        digits += 1
    }
    return digits > 0 ? value : nil
}

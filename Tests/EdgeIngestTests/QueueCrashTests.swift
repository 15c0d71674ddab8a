import EdgeIngest
import Foundation
import TestSupport
import Testing

/// A child process appends batches in a loop and is killed with SIGKILL at
/// random moments. After each kill the queue must hold every batch the
/// child reported committed, complete, no partial batch at all, and no
/// batch that was already verified and acknowledged in an earlier round.
///
/// The power-cut variant runs the child over Tests/Support/powercut (an
/// LD_PRELOAD layer that records which writes were fsynced) and, after the
/// kill, rebuilds the queue's files the way a disk might have left them when
/// the power failed: synced data intact, unsynced writes kept, lost or torn
/// at random. With `power_loss_safe` (the default) every batch the child
/// reported committed must still be there; with `crash_safe` the last
/// commits may be gone, but never a batch in part, and the file must open.
@Suite(.serialized) struct QueueCrashTests {
    @Test func sigkillNeverLosesACommittedBatchNorLeavesAPartialOne() async throws {
        try await crashRounds(8, powerCut: nil)
    }

    @Test func aPowerCutNeverLosesASyncedBatchNorLeavesAPartialOne() async throws {
        let dropped = try await crashRounds(12, powerCut: .powerLossSafe)
        // The cuts must have lost or torn unsynced writes in some rounds, or
        // this test proved nothing beyond the SIGKILL one.
        #expect(dropped > 0, "no round ended with unsynced writes to drop")
    }

    @Test func aPowerCutUnderCrashSafeDurabilityMayLoseTheLastCommitsButNeverHalfABatch() async throws {
        let dropped = try await crashRounds(8, powerCut: .crashSafe)
        #expect(dropped > 0, "no round ended with unsynced writes to drop")
    }
}

/// Runs `rounds` kill rounds; returns how many unsynced operations the power
/// cuts lost or tore in all.
@discardableResult
private func crashRounds(_ rounds: Int, powerCut: Durability?) async throws -> Int {
    let dir = try TemporaryDirectory()
    let path = dir.file("queue.sqlite")
    let log = dir.file("powercut")
    var environment = ProcessInfo.processInfo.environment
    if powerCut != nil {
        try FileManager.default.createDirectory(atPath: log, withIntermediateDirectories: true)
        let library = dir.file("libpowercut.so")
        let build = try PowerCut.run(["build", library])
        try #require(build.status == 0, "cannot build the power-cut layer: \(build.output)")
        environment["LD_PRELOAD"] = library
        environment["POWERCUT_PATH"] = path
        environment["POWERCUT_LOG"] = log
        // A slow disk (20 ms per fsync): at power_loss_safe the only unsynced
        // writes are those of a commit waiting for its fsync, and without
        // this a kill rarely lands in that window.
        environment["POWERCUT_SYNC_DELAY_US"] = "20000"
    }
    var verified = Set<Int>()  // batches checked and acknowledged in earlier rounds
    var acknowledged: Int64 = 0
    var droppedOperations = 0
    var rng = SystemRandomNumberGenerator()
    for round in 0..<rounds {
        let process = Process()
        process.executableURL = CrashProbe.executable
        process.arguments = ["append", path, "\(round * 1_000_000)"] + (powerCut == .crashSafe ? ["crash_safe"] : [])
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        // Kill at a random moment after the first commit: on a loaded
        // machine (CI runs suites in parallel) the child under the power-cut
        // layer can take longer to commit once than any fixed delay.
        var reported = Data()
        let firstCommitDeadline = ContinuousClock.now + .seconds(60)
        while !String(decoding: reported, as: UTF8.self).contains("committed "),
            ContinuousClock.now < firstCommitDeadline
        {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }  // the child ended
            reported += chunk
        }
        try await Task.sleep(for: .milliseconds(Int.random(in: 50...450, using: &rng)))
        // Killed by us, not dead by itself (a trap, or the power-cut layer's
        // abort when it cannot keep its record).
        #expect(process.isRunning, "round \(round): the probe ended before the kill")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(
            process.terminationStatus == SIGKILL,
            "round \(round): the probe ended by signal \(process.terminationStatus)"
        )
        var committed: [Int: Int] = [:]  // batch → count, as reported by the child
        let text = String(decoding: reported + out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            // A line cut by the kill is not a report.
            guard parts.count == 3, parts[0] == "committed", let b = Int(parts[1]), let n = Int(parts[2]) else {
                continue
            }
            committed[b] = n
        }
        #expect(!committed.isEmpty, "round \(round): the child committed nothing before the kill")
        if powerCut != nil {
            let cut = try PowerCut.run(["cut", log, "--dir", dir.path, "--seed", "\(round)"])
            try #require(cut.status == 0, "round \(round): the power cut failed: \(cut.output)")
            droppedOperations += PowerCut.droppedOperations(in: cut.output)
        }

        let configuration = QueueConfiguration(location: .file(path: path), objectTypes: [try declaredWeatherSensor()])
        let queue = try DurableQueue.open(configuration)
        var declared: [Int: Int] = [:]  // batch → count its records declare
        var present: [Int: Int] = [:]  // batch → records found, in index order
        var problems: [String] = []
        // Under crash_safe a cut before the first checkpoint may leave nothing.
        let taken = try queue.take(maxRecords: .max)
        if powerCut != .crashSafe { try #require(taken != nil, "round \(round): the queue is empty") }
        for i in 0..<(taken?.recordCount ?? 0) {
            let json = taken!.recordJSON(at: i)
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
            if count != declared[batch] {
                problems.append("batch \(batch) is partial: \(count) of \(declared[batch]!)")
            }
            if verified.contains(batch) { problems.append("batch \(batch) is back after being acknowledged") }
        }
        if powerCut != .crashSafe {
            for (batch, count) in committed where present[batch] != count {
                problems.append("committed batch \(batch) (\(count) records) has \(present[batch] ?? 0) in the queue")
            }
        } else {
            // Whatever survived is a prefix of what was committed: a later
            // batch never outlives an earlier one.
            let lost = committed.keys.filter { present[$0] == nil }
            if let firstLost = lost.min(), let survivor = present.keys.filter({ $0 > firstLost }).min() {
                problems.append("batch \(survivor) survived but the earlier batch \(firstLost) did not")
            }
        }
        #expect(problems.isEmpty, "round \(round): \(problems.prefix(5))")
        // Counters agree with the contents, across every restart.
        let stats = try queue.statistics()
        let queued = Int64(taken?.recordCount ?? 0)
        #expect(stats.queuedRecords == queued)
        if powerCut != .crashSafe {
            #expect(stats.appendedTotal == acknowledged + queued)
        }
        if let taken { try queue.acknowledge(taken) }
        acknowledged += queued
        verified.formUnion(present.keys)
        queue.close()
    }
    return droppedOperations
}

/// Tests/Support/powercut.py: builds the LD_PRELOAD layer and cuts the power.
private enum PowerCut {
    static let script = supportScript("powercut.py")

    static func run(_ arguments: [String]) throws -> ToolResult {
        try runTool("/usr/bin/env", ["python3", script] + arguments)
    }

    /// How many unsynced operations the cut lost or tore: lost + torn of the
    /// "total kept=K lost=L torn=T" line `cut` ends with.
    static func droppedOperations(in output: String) -> Int {
        guard let total = output.split(separator: "\n").last(where: { $0.hasPrefix("total ") }) else { return 0 }
        return total.split(separator: " ").reduce(0) { sum, field in
            let parts = field.split(separator: "=")
            return parts.count == 2 && (parts[0] == "lost" || parts[0] == "torn") ? sum + (Int(parts[1]) ?? 0) : sum
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

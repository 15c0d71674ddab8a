// Queue benchmark: append N WeatherSensor readings durably in batches, then
// drain them (take a lease + acknowledge) until empty.
//
//   swift run -c release queue-bench [--records N] [--batch B] [--dir DIR]
//       [--durability power_loss_safe|crash_safe] [--repeat R] [--archive]
//
// Runs the whole append + drain R times (default 3) on a fresh file and
// prints, per phase, the median readings/s with the range, and the bytes on
// disk per reading. With --archive each drained lease is first delivered to
// the SQLite archive sink (upload.sink = "sqlite") in DIR/archive.sqlite:
// the drain rate is then the archive's rate.
import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

func seconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

func option(_ name: String, _ fallback: String) -> String {
    let args = CommandLine.arguments
    if let i = args.firstIndex(of: name), i + 1 < args.count { return args[i + 1] }
    return fallback
}

func peakRSSKiB() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss
}

let total = Int(option("--records", "1000000"))!
let batchSize = Int(option("--batch", "1000"))!
let dir = option("--dir", "/tmp/edgeingest-queue-bench")
let durability = Durability(name: option("--durability", "power_loss_safe"))!
let repeats = Int(option("--repeat", "3"))!
let toArchive = CommandLine.arguments.contains("--archive")
let path = dir + "/queue.sqlite"
let archivePath = dir + "/archive.sqlite"

let weatherSensor = try RecordType(
    name: "WeatherSensor",
    fields: [
        .init(name: "deviceId", type: .string),
        .init(name: "temperatureInFahrenheit", type: .double),
        .init(name: "barometricPressureInHg", type: .double),
        .init(name: "windSpeedInMph", type: .int),
    ]
)

// Readings as a sensor produces them: validated records, built per batch
// (validation is timed apart from the append).
func makeBatch(_ b: Int) throws -> [Record] {
    try (0..<batchSize).map { i in
        try weatherSensor.validate(pairs: [
            ("deviceId", .string("WX\(b % 100)")), ("temperatureInFahrenheit", .double(60 + Double(i % 200) / 10)),
            ("barometricPressureInHg", .double(29.65)), ("windSpeedInMph", .int(Int64(i % 40))),
        ])
    }
}

struct Run {
    var validate: Double
    var append: Double
    var drain: Double
    var bytesPerReading: Int64
    var payloadPerReading: Int64
}

func runOnce() async throws -> Run {
    for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
    var configuration = QueueConfiguration(location: .file(path: path), objectTypes: [weatherSensor])
    configuration.maxBytes = nil
    configuration.durability = durability
    configuration.shouldCompactOnLaunch = nil
    let queue = try DurableQueue.open(configuration)
    var validateTime = 0.0
    var appendTime = 0.0
    var appended = 0
    var b = 0
    while appended < total {
        let t0 = seconds()
        let batch = try makeBatch(b)
        let t1 = seconds()
        try await queue.append(batch)
        let t2 = seconds()
        validateTime += t1 - t0
        appendTime += t2 - t1
        appended += batch.count
        b += 1
    }
    let stats = try queue.statistics()
    for suffix in ["", "-wal", "-shm"] { unlink(archivePath + suffix) }
    let archive = toArchive ? SQLiteArchiveSink(path: archivePath, types: [weatherSensor]) : nil
    let d0 = seconds()
    var drained = 0
    while let lease = try queue.take(maxRecords: batchSize) {
        if let archive {
            let batch = SinkBatch(
                type: lease.segments[0].type,
                idempotencyKey: lease.id,
                payload: lease.payload(records: 0..<lease.recordCount),
                recordCount: lease.recordCount,
                headers: []
            )
            let outcome = archive.deliver(batch)
            precondition(outcome == .stored(rejected: []), "the archive answered \(outcome)")
        }
        drained += lease.recordCount
        try queue.acknowledge(lease)
    }
    let d1 = seconds()
    precondition(drained == appended, "drained \(drained) of \(appended)")
    if let archive {
        precondition(archive.storedCount == drained, "the archive stored \(archive.storedCount) of \(drained)")
    }
    queue.close()
    for suffix in ["", "-wal", "-shm"] {
        unlink(path + suffix)
        unlink(archivePath + suffix)
    }
    return Run(
        validate: Double(appended) / validateTime,
        append: Double(appended) / appendTime,
        drain: Double(drained) / (d1 - d0),
        bytesPerReading: stats.fileBytes / Int64(appended),
        payloadPerReading: stats.queuedBytes / Int64(appended)
    )
}

var runs: [Run] = []
for _ in 0..<repeats { runs.append(try await runOnce()) }

func summary(_ values: [Double]) -> String {
    let sorted = values.sorted()
    return
        "\(Int(sorted[sorted.count / 2])) readings/s (median of \(sorted.count); range \(Int(sorted.first!))–\(Int(sorted.last!)))"
}
print("append   \(total) readings, batches of \(batchSize), \(durability): \(summary(runs.map(\.append)))")
print(
    "drain    take + \(toArchive ? "deliver to the SQLite archive + " : "")acknowledge, batches of \(batchSize): \(summary(runs.map(\.drain)))"
)
print("validate building + validating the records: \(summary(runs.map(\.validate)))")
print(
    "disk     \(runs[0].bytesPerReading) bytes/reading on disk (file + WAL), \(runs[0].payloadPerReading) bytes/reading of encoded records"
)
print("memory   peak RSS \(peakRSSKiB() / 1024) MiB")

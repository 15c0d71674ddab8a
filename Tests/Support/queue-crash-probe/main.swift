// A child process for the queue's crash tests. Not installed.
//
//   queue-crash-probe append PATH FIRST_BATCH [DURABILITY]
//                                               append batches forever, printing
//                                               "committed <batch> <count>" after each
//                                               (DURABILITY: power_loss_safe, the
//                                               default, or crash_safe)
//   queue-crash-probe --hold-check PATH         exit 0 if the queue opens, 3 if not
//
// Batch b holds records whose deviceId is "b<b>-<count>" and whose
// windSpeedInMph is the record's index within the batch, so the test can
// tell a complete batch from a partial one.
import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

let weatherSensor = try RecordType(
    name: "WeatherSensor",
    fields: [
        .init(name: "deviceId", type: .string),
        .init(name: "temperatureInFahrenheit", type: .double),
        .init(name: "barometricPressureInHg", type: .double),
        .init(name: "windSpeedInMph", type: .int),
    ]
)

func write(_ text: String, to fd: Int32) {
    var text = text
    text.withUTF8 { _ = Glibc.write(fd, $0.baseAddress, $0.count) }
}

func configuration(_ path: String, durability: Durability = .powerLossSafe) -> QueueConfiguration {
    var c = QueueConfiguration(location: .file(path: path), objectTypes: [weatherSensor])
    c.maxBytes = nil
    c.durability = durability
    return c
}

let arguments = CommandLine.arguments
switch arguments.dropFirst().first {
case "--hold-check":
    do {
        _ = try DurableQueue.open(configuration(arguments[2]))
        exit(0)
    } catch {
        write("\(error)\n", to: 2)
        exit(3)
    }
case "append":
    let durability = arguments.count > 4 ? Durability(name: arguments[4]) : .powerLossSafe
    guard let durability else {
        write("queue-crash-probe: unknown durability \(arguments[4])\n", to: 2)
        exit(2)
    }
    let queue = try DurableQueue.open(configuration(arguments[2], durability: durability))
    var batch = Int(arguments[3])!
    var rng = SystemRandomNumberGenerator()
    while true {
        let count = Int.random(in: 1...400, using: &rng)
        let device = "b\(batch)-\(count)"
        let records = try (0..<count).map { i in
            try weatherSensor.validate([
                "deviceId": .string(device), "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65,
                "windSpeedInMph": .int(Int64(i)),
            ])
        }
        try await queue.append(records, positions: [SourcePosition(source: "probe", position: "\(batch)")])
        write("committed \(batch) \(count)\n", to: 1)
        batch += 1
    }
default:
    write("usage: queue-crash-probe append PATH FIRST_BATCH [DURABILITY] | --hold-check PATH\n", to: 2)
    exit(2)
}

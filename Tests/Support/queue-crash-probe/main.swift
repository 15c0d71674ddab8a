// A child process for the queue's crash tests. Not installed.
//
//   queue-crash-probe append PATH FIRST_BATCH   append batches forever, printing
//                                               "committed <batch> <count>" after each
//   queue-crash-probe --hold-check PATH         exit 0 if the queue opens, 3 if not
//
// Batch b holds records whose deviceId is "b<b>-<count>" and whose
// windSpeedInMph is the record's index within the batch, so the test can
// tell a complete batch from a partial one.
import EdgeIngest

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

func configuration(_ path: String) -> QueueConfiguration {
    var c = QueueConfiguration(location: .file(path: path), objectTypes: [weatherSensor])
    c.maxBytes = nil
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
    let queue = try DurableQueue.open(configuration(arguments[2]))
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
    write("usage: queue-crash-probe append PATH FIRST_BATCH | --hold-check PATH\n", to: 2)
    exit(2)
}

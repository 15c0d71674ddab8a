import EdgeIngest
import Foundation
import TestSupport

/// A state directory and a configuration file for one test's agent.
struct AgentFixture {
    let dir: TemporaryDirectory
    let configPath: String
    var stateDirectory: String { dir.file("state") }

    static let weatherSensorTOML = """
        [types.WeatherSensor]
        deviceId = "string"
        temperatureInFahrenheit = "double"
        barometricPressureInHg = "double"
        windSpeedInMph = "int"
        """

    init(
        _ extra: String = "",
        queue: String = "",
        inputs: String = "[[inputs]]\nkind = \"stdin\"\nmax_line_bytes = 256\n",
        types: String = AgentFixture.weatherSensorTOML
    ) throws {
        dir = try TemporaryDirectory()
        configPath = dir.file("ingestd.toml")
        let text = """
            [agent]
            state_directory = "\(dir.file("state"))"
            rejects_file = "\(dir.file("rejects.ndjson"))"
            log_target = "stderr"
            status_interval_ms = 100
            \(queue.isEmpty ? "" : "[queue]\n" + queue)
            \(extra)
            \(types)

            \(inputs)
            """
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// The address the first input (an HTTP input) listens on, once the
    /// running agent's status shows it (10 s at most).
    func listenAddress() -> String? {
        var listen: String?
        _ = eventually {
            listen = ((try? status())?["inputs"] as? [[String: Any]])?.first?["listen"] as? String
            return listen != nil
        }
        return listen
    }

    func run(
        _ arguments: [String],
        stdin: Data? = nil,
        environment: [String: String]? = nil
    ) throws -> IngestdBinary.Result {
        try IngestdBinary.run(arguments + ["--config", configPath], stdin: stdin, environment: environment)
    }

    func status() throws -> [String: Any] {
        let result = try run(["status", "--json"])
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as! [String: Any]
    }

    /// The JSON lines in the queue, in order (the agent must have exited).
    func queuedLines() throws -> [String] {
        try queuedLinesAt(stateDirectory + "/queue.sqlite")
    }

    /// The JSON lines in the queue file at `path` (WeatherSensor records
    /// with `fields`, the fixture's declaration by default).
    func queuedLinesAt(
        _ path: String,
        fields: KeyValuePairs<String, FieldType>? = nil,
        schemaVersion: Int64 = 0
    ) throws -> [String] {
        let declared: [RecordType.Field] =
            fields.map { $0.map { RecordType.Field(name: $0.key, type: $0.value) } } ?? [
                .init(name: "deviceId", type: .string), .init(name: "temperatureInFahrenheit", type: .double),
                .init(name: "barometricPressureInHg", type: .double), .init(name: "windSpeedInMph", type: .int),
            ]
        let type = try RecordType(name: "WeatherSensor", fields: declared)
        var configuration = QueueConfiguration(location: .file(path: path), objectTypes: [type])
        configuration.schemaVersion = schemaVersion
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        guard let lease = try queue.take(maxRecords: .max) else { return [] }
        defer { try? queue.release(lease) }
        return String(decoding: lease.payload, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    func rejects() throws -> [[String: Any]] {
        let text = try String(contentsOfFile: dir.file("rejects.ndjson"), encoding: .utf8)
        return try text.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }
}

func reading(_ wind: Int, device: String = "WX1278UIT") -> String {
    #"{"deviceId":"\#(device)","temperatureInFahrenheit":66.7,"barometricPressureInHg":29.65,"windSpeedInMph":\#(wind)}"#
}

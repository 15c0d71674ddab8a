import Foundation

/// A real VictoriaMetrics single-node server (Debian 12's victoria-metrics,
/// 1.79.5) storing into its own temporary directory, HTTP on a loopback
/// port the kernel chose, keeping 100 years. Killed when released.
///
///     let server = try VictoriaMetricsServer(["-dedup.minScrapeInterval=1ms"])
///     let url = server.writeURL                          // http://127.0.0.1:PORT/write
///     let samples = try server.export("weather_windSpeedInMph")
public final class VictoriaMetricsServer {
    public static let executable = "/usr/bin/victoria-metrics"
    public let engine: EngineProcess

    public var url: String { "http://127.0.0.1:\(engine.port)" }

    /// The InfluxDB line protocol endpoint, for `upload.url`.
    public var writeURL: String { url + "/write" }

    /// One stored sample: its series' labels (without `__name__`), its time
    /// in milliseconds, its value.
    public struct Sample: Hashable, Sendable {
        public var labels: [String: String]
        public var milliseconds: Int64
        public var value: Double
    }

    /// - Parameter flags: more command-line flags, such as
    ///   `-dedup.minScrapeInterval=1ms` (one sample per series and
    ///   millisecond: without it a re-sent sample is stored twice).
    public init(_ flags: [String] = []) throws {
        let directory = try TemporaryDirectory()
        engine = try EngineProcess(
            "VictoriaMetrics",
            executable: Self.executable,
            package: "victoria-metrics",
            directory: directory,
            arguments: [
                "-storageDataPath=\(directory.file("data"))", "-httpListenAddr=127.0.0.1:0", "-retentionPeriod=100y",
            ] + flags
        ) { port in
            httpStatus("http://127.0.0.1:\(port)/health", timeout: 1) == 200
        }
    }

    /// Makes everything written so far searchable (VictoriaMetrics buffers
    /// new samples for about a second).
    public func flush() throws {
        let answer = try httpRequest("GET", url + "/internal/force_flush")
        guard answer.status == 200 else { throw ToolFailure("force_flush answered \(answer.status): \(answer.text)") }
    }

    /// Every stored sample of `metric` (all its series), as
    /// `/api/v1/export` gives them: raw samples, with the server's
    /// deduplication applied.
    public func export(_ metric: String) throws -> [Sample] {
        let answer = try httpRequest(
            "GET",
            url + "/api/v1/export?match[]=" + formEncoded("{__name__=\"\(metric)\"}")
        )
        guard answer.status == 200 else { throw ToolFailure("export answered \(answer.status): \(answer.text)") }
        var samples: [Sample] = []
        for line in answer.text.split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                var labels = object["metric"] as? [String: String],
                let values = object["values"] as? [Any],
                let times = object["timestamps"] as? [NSNumber]
            else { throw ToolFailure("export answered a line that is not a series: \(line.prefix(300))") }
            labels["__name__"] = nil
            for (value, time) in zip(values, times) {
                // Numbers come as numbers; NaN and infinities as strings.
                let number = (value as? NSNumber)?.doubleValue ?? Double("\(value)") ?? .nan
                samples.append(Sample(labels: labels, milliseconds: time.int64Value, value: number))
            }
        }
        return samples
    }

    /// The server's version as it reports it (`victoria-metrics-…-v1.79.5…`).
    public var version: String {
        (try? runTool(Self.executable, ["-version"]).output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? "?"
    }
}

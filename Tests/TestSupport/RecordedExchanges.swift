import Foundation

/// Answers recorded from real servers of Debian 12's packages
/// (Tests/Support/recorded/*.json: ClickHouse 18.16, InfluxDB 1.6,
/// VictoriaMetrics 1.79; how they were made: Tests/Support/recorded/README.md).
public struct RecordedExchange {
    public var name: String
    public var method: String
    public var target: String
    public var requestBody: String
    public var status: Int
    public var responseBody: String

    /// The writes (POSTs) of one recording, by case name.
    public static func writes(in file: String) throws -> [String: RecordedExchange] {
        let url = repositoryRoot.appendingPathComponent("Tests/Support/recorded/\(file)")
        guard let root = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any],
            let exchanges = root["exchanges"] as? [[String: Any]]
        else { throw ToolFailure("\(file): not a recording") }
        var out: [String: RecordedExchange] = [:]
        for exchange in exchanges {
            guard let request = exchange["request"] as? [String: Any],
                let response = exchange["response"] as? [String: Any],
                let name = exchange["case"] as? String, request["method"] as? String == "POST"
            else { continue }
            out[name] = RecordedExchange(
                name: name,
                method: "POST",
                target: request["target"] as? String ?? "",
                requestBody: request["body"] as? String ?? "",
                status: response["status"] as? Int ?? -1,
                responseBody: response["body"] as? String ?? ""
            )
        }
        return out
    }
}

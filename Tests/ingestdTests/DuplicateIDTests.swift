import Foundation
import TestSupport
import Testing

/// Proves, against the built binary, that a reading whose own `_id` is
/// already queued or was taken recently is refused as `duplicate_id`
/// (counted, logged with its line, kept out of the queue) — a line sent
/// twice, or two readings under one `_id` — while readings without an
/// `_id` are never refused; that the queued ids are known again after a
/// restart; and that a backend receives each `_id` exactly once, with the
/// content first accepted.
@Suite struct DuplicateIDTests {
    static func reading(_ id: String?, device: String) -> String {
        let idField = id.map { #""_id":"\#($0)","# } ?? ""
        return
            #"{\#(idField)"deviceId":"\#(device)","temperatureInFahrenheit":66.7,"barometricPressureInHg":29.6,"windSpeedInMph":2}"#
            + "\n"
    }

    static let a = "65f1c2a9e1b2c3d4e5f600a1"
    static let b = "65f1c2a9e1b2c3d4e5f600b2"
    static let c = "65f1c2a9e1b2c3d4e5f600c3"
    static let d = "65f1c2a9e1b2c3d4e5f600d4"

    /// Lines 1–7: A, B, A again (same), none, C, B with other content, none again.
    static let input =
        reading(a, device: "A") + reading(b, device: "B") + reading(a, device: "A") + reading(nil, device: "N")
        + reading(c, device: "C") + reading(b, device: "B-other") + reading(nil, device: "N")

    @Test func aRepeatedIDIsRefusedAndCountedAndKnownAfterARestart() throws {
        let fixture = try AgentFixture()
        let result = try fixture.run(["run"], stdin: Data(Self.input.utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        var status = try fixture.status()
        #expect(status["accepted_total"] as? Int == 5, "\(status)")
        #expect(status["rejected_by_reason"] as? [String: Int] == ["duplicate_id": 2], "\(status)")
        for line in ["ingest.line=3", "ingest.line=6"] {
            #expect(
                result.stderr.split(separator: "\n").contains { $0.contains(line) && $0.contains("duplicate_id") },
                "\(line): \(result.stderr.suffix(2000))"
            )
        }
        #expect(!result.stderr.contains("B-other"), "no payloads in the log")
        let devices = try fixture.queuedLines().map { try Self.field("deviceId", of: $0) }
        #expect(devices == ["A", "B", "N", "C", "N"])

        // A restart: the queued ids are known (read back from the queue file).
        let again = try fixture.run(
            ["run"],
            stdin: Data((Self.reading(Self.a, device: "A2") + Self.reading(Self.d, device: "D")).utf8)
        )
        #expect(again.status == 0, "\(again.stderr.suffix(2000))")
        status = try fixture.status()
        #expect(status["accepted_total"] as? Int == 6, "\(status)")
        #expect((status["rejected_by_reason"] as? [String: Int])?["duplicate_id"] == 3, "\(status)")
        #expect(try fixture.queuedLines().map { try Self.field("deviceId", of: $0) } == ["A", "B", "N", "C", "N", "D"])
    }

    /// End to end: the backend gets every `_id` once, with the content the
    /// agent accepted first, and the counters add up.
    @Test func theBackendReceivesEachIDOnceWithTheFirstContent() throws {
        let dir = try TemporaryDirectory()
        let recorded = dir.file("received.ndjson")
        let backend = try TestBackend(["--record", recorded])
        let fixture = try AgentFixture("[upload]\nurl = \"\(backend.url)\"\nlinger_ms = 10\n")
        let result = try fixture.run(["run"], stdin: Data(Self.input.utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        let lines = try String(contentsOfFile: recorded, encoding: .utf8).split(separator: "\n").map(String.init)
        var byID: [String: [String]] = [:]
        for line in lines {
            byID[try Self.field("_id", of: line), default: []].append(try Self.field("deviceId", of: line))
        }
        #expect(lines.count == 5, "\(lines)")
        #expect(byID[Self.a] == ["A"] && byID[Self.b] == ["B"] && byID[Self.c] == ["C"], "\(byID)")
        let status = try fixture.status()
        #expect(status["uploaded_total"] as? Int == 5 && status["queued_records"] as? Int == 0, "\(status)")
        let input = (status["inputs"] as? [[String: Any]])?.first
        #expect(input?["linesRead"] as? Int == 7 && input?["accepted"] as? Int == 5, "\(String(describing: input))")
        #expect(input?["rejected"] as? Int == 2, "\(String(describing: input))")
    }

    static func field(_ name: String, of line: String) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        return try #require(object?[name] as? String, "\(name) in \(line)")
    }
}

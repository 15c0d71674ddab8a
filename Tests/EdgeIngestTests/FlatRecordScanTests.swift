import TestSupport
import Testing

@testable import EdgeIngestCore

/// The MQTT sink's scan of stored lines against the full JSON parse, on
/// many generated flat records (escapes, unicode, numbers, booleans,
/// nulls, spacing): where the scan answers, it answers the same.
@Suite struct FlatRecordScanTests {
    @Test func theScanAgreesWithTheFullParse() {
        var random = SplitMix64(seed: 25)
        let alphabet: [String] = [
            "a", "Z", "7", " ", "é", "💧", "/", "+", "#", "\\\"", "\\\\", "\\n", "\\u0041", ":", ",", "{", "}",
        ]
        func text() -> String {
            (0..<Int.random(in: 0...8, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined()
        }
        var scanned = 0
        for _ in 0..<20_000 {
            var members: [String] = []
            let names = ["_id", "deviceId", "site", "n"]
            for name in names.shuffled(using: &random) where Bool.random(using: &random) || name == "_id" {
                let value: String
                switch Int.random(in: 0..<6, using: &random) {
                case 0: value = "\"\(text())\""
                case 1: value = String(Int64.random(in: -1_000_000...1_000_000, using: &random))
                case 2: value = String(Double.random(in: -1000...1000, using: &random))
                case 3: value = Bool.random(using: &random) ? "true" : "false"
                case 4: value = "null"
                default: value = "\"6740\(String(UInt64.random(in: 0...UInt64.max, using: &random), radix: 16))\""
                }
                let space = Bool.random(using: &random) ? " " : ""
                members.append("\"\(name)\"\(space):\(space)\(value)")
            }
            let line = Array(("{" + members.joined(separator: ",") + "}").utf8)
            let wanted = ["_id", "deviceId", "n"]
            let full = line.withUnsafeBytes { MQTTSink.parsedValues($0, wanted: wanted) }
            guard let fast = line.withUnsafeBytes({ FlatRecordScan.values($0, wanted: wanted) }) else { continue }
            scanned += 1
            #expect(Set(fast.keys) == Set(full.keys), "\(String(decoding: line, as: UTF8.self))")
            for (key, value) in fast {
                #expect(value == full[key], "\(String(decoding: line, as: UTF8.self))")
            }
        }
        #expect(scanned > 5_000)  // the fast path answers most lines
        // What it refuses, the caller parses in full.
        #expect(
            [UInt8]("{\"_id\":\"a\\\"b\"}".utf8).withUnsafeBytes { FlatRecordScan.values($0, wanted: ["_id"]) } == nil
        )
        #expect(
            [UInt8]("{\"_id\":{\"x\":1}}".utf8).withUnsafeBytes { FlatRecordScan.values($0, wanted: ["_id"]) } == nil
        )
        #expect([UInt8]("{\"_id\":\"x\"".utf8).withUnsafeBytes { FlatRecordScan.values($0, wanted: ["_id"]) } == nil)
        for bad in ["{\"n\":tru}", "{\"n\":1}x", "{\"n\":1.50}", "{\"n\":1e3}", "{\"n\":01}"] {
            #expect([UInt8](bad.utf8).withUnsafeBytes { FlatRecordScan.values($0, wanted: ["n"]) } == nil, "\(bad)")
        }
        #expect(
            [UInt8]("{\"n\":\t-12\r\n}".utf8).withUnsafeBytes { FlatRecordScan.values($0, wanted: ["n"]) } == [
                "n": "-12"
            ]
        )
    }
}

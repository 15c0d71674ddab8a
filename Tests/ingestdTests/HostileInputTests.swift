import Foundation
import Testing

/// Hostile input against the built binary: thousands of malformed lines of
/// every kind between good ones. No crash, every bad line counted, every
/// good line kept, memory bounded.
@Suite(.serialized) struct HostileInputTests {
    static func hostileLines(_ n: Int) -> [[UInt8]] {
        var rng = SystemRandomNumberGenerator()
        let good = Array(reading(1).utf8)
        var out: [[UInt8]] = []
        for i in 0..<n {
            switch i % 10 {
            case 0: out.append(Array(good.prefix(Int.random(in: 1..<good.count, using: &rng))))  // truncated JSON
            case 1:
                out.append(
                    Array(
                        #"{"deviceId":7,"temperatureInFahrenheit":"hot","barometricPressureInHg":null,"windSpeedInMph":[]}"#
                            .utf8
                    )
                )
            case 2:
                out.append(
                    Array(
                        #"{"deviceId":"x","temperatureInFahrenheit":1e999,"barometricPressureInHg":1,"windSpeedInMph":123456789012345678901234567890}"#
                            .utf8
                    )
                )
            // NUL bytes
            case 3: out.append(Array(#"{"deviceId":"x"#.utf8) + [0, 0, 0] + Array(#"","windSpeedInMph":1}"#.utf8))
            case 4: out.append([0x7B, 0x22, 0xC3, 0x28, 0xFF, 0xFE, 0xED, 0xA0, 0x80, 0x22, 0x7D])  // invalid UTF-8
            case 5: out.append(Array((#"{"a":"# + String(repeating: "[", count: 5_000)).utf8))  // deep nesting
            case 6:
                // Random bytes, never a newline and never blank: a lone "\r" or " " is a
                // blank line, which the agent skips rather than rejects (LineIngestor).
                let noise = (0..<Int.random(in: 1...300, using: &rng)).map { _ in UInt8.random(in: 1...255, using: &rng)
                }.filter { $0 != 0x0A }
                out.append([0x01] + noise)
            case 7: out.append(Array(#"{"_type":"Nope","deviceId":"x"}"#.utf8))
            case 8:
                out.append(
                    Array(
                        #"{"deviceId":"x","temperatureInFahrenheit":1,"barometricPressureInHg":2,"windSpeedInMph":3,"deviceId":"y"}"#
                            .utf8
                    )
                )
            default: out.append(Array("\u{FEFF}{\"deviceId\":\"bom\"}".utf8))
            }
        }
        return out
    }

    @Test func tenThousandMalformedLinesNeverStopTheAgentNorCostTheGoodOnes() throws {
        let fixture = try AgentFixture(inputs: "[[inputs]]\nkind = \"stdin\"\nmax_line_bytes = 65536\n")
        var input: [UInt8] = []
        var good = 0
        var bad = 0
        for (i, line) in Self.hostileLines(10_000).enumerated() {
            input += line + [0x0A]
            bad += 1
            if i % 7 == 0 {
                input += Array((reading(i % 40, device: "G\(good)") + "\n").utf8)
                good += 1
            }
        }
        // Three 10 MB lines (one without any newline until the end) and a good line after each.
        for k in 0..<3 {
            input += [UInt8](repeating: UInt8(ascii: "x"), count: 10 << 20) + [0x0A]
            bad += 1
            input += Array((reading(k, device: "G\(good)") + "\n").utf8)
            good += 1
        }
        // Under /usr/bin/time for the agent's own peak RSS. (getrusage(RUSAGE_CHILDREN)
        // is no use here: posix_spawn shares the parent's memory until exec, and the
        // kernel records that high-water mark as the child's.)
        let rssFile = fixture.dir.file("rss")
        let result = try IngestdBinary.run(
            ["run", "--log-target", "stderr", "--config", fixture.configPath],
            stdin: Data(input),
            wrapper: ["/usr/bin/time", "-f", "%M", "-o", rssFile]
        )
        #expect(result.status == 0, "\(result.stderr.suffix(1000))")
        let status = try fixture.status()
        #expect(status["accepted_total"] as? Int == good)
        #expect(status["rejected_total"] as? Int == bad, "\(status["rejected_by_reason"] ?? "")")
        let devices = FileInputTests.devices(try fixture.queuedLines())
        #expect(devices == (0..<good).map { "G\($0)" })
        // Bounded memory: 30 MB of input (three 10 MB lines) never held whole.
        let peakKB =
            Int(try String(contentsOfFile: rssFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
            ?? .max
        #expect(peakKB < 40 * 1024, "the agent peaked at \(peakKB / 1024) MB")
    }
}

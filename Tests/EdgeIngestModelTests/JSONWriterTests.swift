import Testing

@testable import EdgeIngestModel

@Suite struct JSONWriterTests {
    func text(_ value: Double) -> String {
        var out: [UInt8] = []
        JSONWriter.appendDouble(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test(arguments: [
        (66.7, "66.7"), (29.65, "29.65"), (-0.5, "-0.5"), (2.0, "2"), (0.000001, "0.000001"), (-1234.125, "-1234.125"),
        (1e-7, "1e-07"), (1e300, "1e+300"), (0.1 + 0.2, "0.30000000000000004"),
        // -2^63 is an exact Int64, and abs() of it traps: one reading crashed the agent.
        (-9_223_372_036_854_775_808, "-9.223372036854776e+18"), (9_007_199_254_740_992, "9007199254740992.0"),
        (9_007_199_254_740_991, "9007199254740991"),
    ])
    func knownValues(value: Double, expected: String) {
        #expect(text(value) == expected)
    }

    @Test func everyDoubleReadsBackExactly() {
        var rng = SystemRandomNumberGenerator()
        var failures: [String] = []
        for i in 0..<200_000 {
            let value: Double
            switch i % 4 {
            case 0:  // sensor-like: a few decimals
                let decimals = Int.random(in: 1...7, using: &rng)
                var scale = 1.0
                for _ in 0..<decimals { scale *= 10 }
                value = Double(Int.random(in: -10_000_000...10_000_000, using: &rng)) / scale
            case 1: value = Double.random(in: -1e9...1e9, using: &rng)
            case 2: value = Double.random(in: -1...1, using: &rng)
            default: value = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &rng))
            }
            guard value.isFinite else { continue }
            let written = text(value)
            if Double(written) != value { failures.append("\(value.description) -> \(written)") }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    /// Found by Fuzz/NDJSONFuzz.swift: years past 999,999 were written modulo
    /// a million (a different instant, silently).
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
        (-62_167_219_200_001, "-000001-12-31T23:59:59.999Z"),
        (62_167_219_192_000_010, "+1971970-10-02T21:46:40.010Z"),
    ])
    func timestampsKeepEveryDigitOfTheYear(milliseconds: Int64, text: String) {
        var out: [UInt8] = []
        Timestamp.appendISO8601(milliseconds: milliseconds, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == text)
    }
}

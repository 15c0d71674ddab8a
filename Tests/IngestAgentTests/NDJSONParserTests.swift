#if canImport(Glibc)
import Glibc
#endif
import EdgeIngest
@testable import IngestAgent
import Testing

@Suite struct NDJSONParserTests {
    func parse(_ text: String) throws -> [(String, RawFieldValue)] {
        var parser = NDJSONParser()
        var line = ParsedLine()
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBytes { raw in try parser.parse(raw, into: &line) }
        return line.fields.map { (line.keyString($0), $0.value) }
    }

    /// Found by Fuzz/NDJSONFuzz.swift: an undeclared `_type` was cut at 32
    /// characters, but one character can carry any number of combining
    /// marks, so the message could quote a whole line.
    @Test func anUndeclaredTypeNameIsQuotedShortAndEscaped() throws {
        let type = try RecordType(name: "WeatherSensor", fields: [.init(name: "deviceId", type: .string)])
        let router = ReadingRouter(types: [type], defaultType: "WeatherSensor", inputName: "test")
        for name in ["a" + String(repeating: "\u{301}", count: 300), String(repeating: "x\\\"\n", count: 200)] {
            var parser = NDJSONParser()
            var line = ParsedLine()
            var json: [UInt8] = []
            JSONWriter.appendString(name, to: &json)
            let bytes = Array(#"{"_type":"#.utf8) + json + Array("}".utf8)
            try bytes.withUnsafeBytes { try parser.parse($0, into: &line) }
            #expect(throws: LineRejection.self) { try router.route(line) }
            do {
                _ = try router.route(line)
            } catch {
                #expect(error.reason == "unknown_type")
                #expect(error.message.utf8.count < 200, "\(error.message.utf8.count) bytes")
                #expect(!error.message.contains("\n"))
            }
        }
    }

    /// Found in review: -2^63 given for a double field is an exact Int64,
    /// and the writer's abs() of it trapped, so one line crashed the agent.
    @Test func theLowestInt64ForADoubleFieldIsStored() throws {
        let type = try RecordType(name: "T", fields: [.init(name: "d", type: .double)])
        var router = ReadingRouter(types: [type], defaultType: "T", inputName: "test")
        var parser = NDJSONParser()
        var line = ParsedLine()
        var batch = EncodedBatch(expectedRecords: 1)
        for text in [#"{"d":-9223372036854775808}"#, #"{"d":-9223372036854775808.0}"#, #"{"d":-9.223372036854775808e18}"#] {
            let bytes = Array(text.utf8)
            try bytes.withUnsafeBytes { try parser.parse($0, into: &line) }
            try router.route(line, into: &batch)
        }
        #expect(batch.count == 3)
        let record = try router.route(line)
        var out: [UInt8] = []
        record.encodeJSON(into: &out)
        #expect(String(decoding: out, as: UTF8.self).hasSuffix(#""d":-9.223372036854776e+18}"#))
    }

    @Test func flatObjectWithEveryValueKind() throws {
        let fields = try parse(#" {"s":"a\"b\u00e9\ud83d\ude00","i":-42,"d":2.5e1,"t":true,"f":false,"n":null,"o":{"x":[1,{"y":"}"}]},"a":[1,2]} "#)
        #expect(fields.map(\.0) == ["s", "i", "d", "t", "f", "n", "o", "a"])
        #expect(fields[0].1 == .string("a\"bé😀"))
        #expect(fields[1].1 == .int(-42))
        #expect(fields[2].1 == .double(25))
        #expect(fields[3].1 == .bool(true))
        #expect(fields[5].1 == .null)
        #expect(fields[6].1 == .unsupported("an object"))
        #expect(fields[7].1 == .unsupported("an array"))
    }

    @Test func largeIntegersBecomeDoubles() throws {
        #expect(try parse(#"{"n":123456789012345678901234}"#)[0].1 == .double(1.2345678901234568e23))
        #expect(try parse(#"{"n":9223372036854775807}"#)[0].1 == .int(.max))
        #expect(try parse(#"{"n":-9223372036854775808}"#)[0].1 == .int(.min))
        // One past the edge must not trap: it becomes a double.
        #expect(try parse(#"{"n":9223372036854775808}"#)[0].1 == .double(9.223372036854775808e18))
        #expect(try parse(#"{"n":9999999999999999999}"#)[0].1 == .double(1e19))
        #expect(try parse(#"{"n":-9223372036854775809}"#)[0].1 == .double(-9.223372036854775809e18))
        #expect(try parse(#"{"n":922337203685477580}"#)[0].1 == .int(922_337_203_685_477_580))
    }

    @Test(arguments: [
        (#"{"a":1"#, "malformed_json", "malformed JSON at byte 7: unexpected end of line: expected ',' or '}'"),
        (#"{"a" 1}"#, "malformed_json", "malformed JSON at byte 6: expected ':' after a key"),
        (#"{"a":01}"#, "malformed_json", "malformed JSON at byte 6: numbers cannot have leading zeros"),
        (#"{"a":tru}"#, "malformed_json", "malformed JSON at byte 6: expected a value"),
        (#"[1,2]"#, "malformed_json", "malformed JSON at byte 1: expected '{' to start a JSON object"),
        (#"{"a":1} x"#, "malformed_json", "malformed JSON at byte 9: unexpected text after the JSON object"),
        (#"{"a":"\x"}"#, "malformed_json", "malformed JSON at byte 7: invalid escape in a string"),
        (#"{"a":"\ud800"}"#, "malformed_json", "malformed JSON at byte 13: unpaired surrogate in \\u escape"),
        ("{\"a\":\"x\u{01}\"}", "malformed_json", "malformed JSON at byte 8: control character inside a string (escape it)"),
        ("", "malformed_json", "empty line: expected a JSON object"),
    ])
    func malformedLinesSayWhereAndWhat(text: String, reason: String, message: String) {
        #expect(throws: LineRejection(reason: reason, message: message)) { try parse(text) }
    }

    @Test func deepNestingIsRefusedNotRecursed() {
        let deep = #"{"a":"# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}"
        #expect(throws: LineRejection(reason: "malformed_json", message: "malformed JSON at byte 70: nested deeper than 64 levels")) {
            try parse(deep)
        }
    }

    @Test func invalidUTF8IsRefusedWithItsOffset() {
        var parser = NDJSONParser()
        var line = ParsedLine()
        let bytes: [UInt8] = [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D]
        #expect(throws: LineRejection(reason: "invalid_utf8", message: "invalid UTF-8 at byte 7")) {
            try bytes.withUnsafeBytes { raw in try parser.parse(raw, into: &line) }
        }
    }

    @Test(arguments: [
        [0xED, 0xA0, 0x80] as [UInt8],  // surrogate
        [0xC0, 0x80],  // overlong NUL
        [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
        [0xE2, 0x82],  // truncated
    ])
    func utf8CheckerRefusesWhatTheStandardLibraryRefuses(bytes: [UInt8]) {
        let ours = bytes.withUnsafeBytes { firstInvalidUTF8($0) }
        #expect(ours == 0)
        #expect(String(validating: bytes, as: UTF8.self) == nil)
    }

    /// The 8-byte ASCII stride must not skip a bad byte wherever it sits.
    @Test func utf8CheckerFindsABadByteAtEveryOffset() {
        for length in 1...40 {
            for at in 0..<length {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                bytes[at] = 0xFF
                #expect(bytes.withUnsafeBytes { firstInvalidUTF8($0) } == at)
                bytes[at] = 0xC3  // start of "é", completed when there is room
                if at + 1 < length { bytes[at + 1] = 0xA9 }
                let expected: Int? = at + 1 < length ? nil : at
                #expect(bytes.withUnsafeBytes { firstInvalidUTF8($0) } == expected)
                #expect((String(validating: bytes, as: UTF8.self) == nil) == (expected != nil))
            }
        }
    }

    /// The parser's own decimal conversion (no strtod) gives strtod's
    /// double, bit for bit, for numbers it takes, and declines the others.
    @Test func decimalNumbersConvertExactlyAsStrtodDoes() throws {
        var generator = SystemRandomNumberGenerator()
        var texts = ["0.1", "-0.0", "0.0", "29.65", "66.7", "1e22", "1e23", "123456789012345.0", "1234567890123456.0", "99999999999999999999",
                     "0.000001", "1E-22", "9.999999999999999", "4.35", "-17.5e3", "1e-400", "2.5E+10", "0.30000000000000004"]
        for _ in 0..<20_000 {
            let digits = String(UInt64.random(in: 0...999_999_999_999_999_999, using: &generator)).prefix(Int.random(in: 1...18))
            let point = Int.random(in: 0...digits.count)
            var text = String(digits.prefix(point)) + "." + String(digits.dropFirst(point))
            if text.hasPrefix(".") { text = "0" + text }
            if text.hasSuffix(".") { text += "5" }
            if Bool.random() { text = "-" + text }
            if Int.random(in: 0..<4) == 0 { text += "e\(Int.random(in: -30...30))" }
            texts.append(text)
        }
        var fast = 0
        for text in texts {
            let value = try #require(try parse(#"{"x":"# + text + "}").first?.1)
            let expected = strtod(text, nil)
            guard case .double(let got) = value else {
                #expect(Bool(false), "\(text) parsed as \(value)")
                continue
            }
            #expect(got.bitPattern == expected.bitPattern, "\(text): \(got) != strtod's \(expected)")
            if Array(text.utf8).withUnsafeBytes({ NDJSONParser.fastDouble($0) }) != nil { fast += 1 }
        }
        #expect(fast > texts.count / 2)  // the fast path is taken, not only the fallback
    }
}

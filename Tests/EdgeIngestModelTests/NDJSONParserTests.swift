import Testing

@testable import EdgeIngestModel

#if canImport(Glibc)
import Glibc
#endif

@Suite struct NDJSONParserTests {
    func parse(_ text: String) throws -> [(String, RawFieldValue)] {
        var parser = NDJSONParser()
        var line = ParsedLine()
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBytes { raw in
            try parser.parse(raw, into: &line)
            return try line.fields.map { (line.keyString($0), try line.value($0)) }
        }
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
            try bytes.withUnsafeBytes { bytes in
                try parser.parse(bytes, into: &line)
                #expect(throws: LineRejection.self) { try router.route(line) }
                do throws(LineRejection) {
                    _ = try router.route(line)
                } catch {
                    #expect(error.reason == "unknown_type")
                    #expect(error.message.utf8.count < 200, "\(error.message.utf8.count) bytes")
                    #expect(!error.message.contains("\n"))
                }
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
        var routed: Record?
        for text in [
            #"{"d":-9223372036854775808}"#, #"{"d":-9223372036854775808.0}"#, #"{"d":-9.223372036854775808e18}"#,
        ] {
            let bytes = Array(text.utf8)
            try bytes.withUnsafeBytes { bytes in
                try parser.parse(bytes, into: &line)
                try router.route(line, into: &batch)
                routed = try router.route(line)
            }
        }
        #expect(batch.count == 3)
        let record = try #require(routed)
        var out: [UInt8] = []
        record.encodeJSON(into: &out)
        #expect(String(decoding: out, as: UTF8.self).hasSuffix(#""d":-9.223372036854776e+18}"#))
    }

    @Test func flatObjectWithEveryValueKind() throws {
        let fields = try parse(
            #" {"s":"a\"b\u00e9\ud83d\ude00","i":-42,"d":2.5e1,"t":true,"f":false,"n":null,"o":{"x":[1,{"y":"}"}]},"a":[1,2]} "#
        )
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
        (
            "{\"a\":\"x\u{01}\"}", "malformed_json",
            "malformed JSON at byte 8: control character inside a string (escape it)"
        ),
        ("", "malformed_json", "empty line: expected a JSON object"),
    ])
    func malformedLinesSayWhereAndWhat(text: String, reason: String, message: String) {
        #expect(throws: LineRejection(reason: reason, message: message)) { try parse(text) }
    }

    @Test func deepNestingIsRefusedNotRecursed() {
        let deep = #"{"a":"# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}"
        #expect(
            throws: LineRejection(
                reason: "malformed_json",
                message: "malformed JSON at byte 70: nested deeper than 64 levels"
            )
        ) {
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
        var texts = [
            "0.1", "-0.0", "0.0", "29.65", "66.7", "1e22", "1e23", "123456789012345.0", "1234567890123456.0",
            "99999999999999999999",
            "0.000001", "1E-22", "9.999999999999999", "4.35", "-17.5e3", "1e-400", "2.5E+10", "0.30000000000000004",
        ]
        for _ in 0..<20_000 {
            let digits = String(UInt64.random(in: 0...999_999_999_999_999_999, using: &generator)).prefix(
                Int.random(in: 1...18)
            )
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

    /// The agent's path (values whose text the queue stores as it is are
    /// not converted: VerbatimJSON) stores byte for byte the line the
    /// converting path (a Record, encoded) stores, and refuses the same
    /// lines with the same reasons — over lines mixing every form of value
    /// for every field type, in any order, with `_id` given or not.
    @Test func theAgentPathStoresWhatTheConvertingPathStores() throws {
        let probe = try RecordType(
            name: "Probe",
            fields: [
                .init(name: "s", type: .string), .init(name: "i", type: .int), .init(name: "d", type: .double),
                .init(name: "b", type: .bool), .init(name: "t", type: .timestamp, isRequired: false),
                .init(name: "o", type: .objectId, isRequired: false),
                .init(name: "n", type: .int, defaultValue: .int(7)),
            ]
        )
        let values = [
            #""WX1278UIT""#, #""caf\u00e9 \"q\"""#, #""""#, #""é😀""#, "0", "-0", "42", "-42", "999999999999999",
            "1000000000000000",
            "9223372036854775807", "29.65", "60.0", "-0.5", "0.000001", "1e3", "2.5E-3", "1e400", "123456789.5",
            "1234567890.5",
            "true", "false", "null", "{}", "[1]", #""2026-11-21T11:41:55.120Z""#, #""0123456789abcdef01234567""#,
        ]
        let keys = ["s", "i", "d", "b", "t", "o", "n"]
        let other = try RecordType(
            name: "Other",
            fields: [.init(name: "s", type: .string), .init(name: "d", type: .double, isRequired: false)]
        )
        var agentRouter = ReadingRouter(types: [probe, other], defaultType: "Probe", inputName: "test")
        let recordRouter = ReadingRouter(types: [probe, other], defaultType: "Probe", inputName: "test")
        var parser = NDJSONParser()
        var line = ParsedLine()
        var generator = SystemRandomNumberGenerator()
        var stored = 0
        for n in 0..<20_000 {
            var members: [String] = []
            for key in keys.shuffled(using: &generator) where Int.random(in: 0..<8, using: &generator) > 0 {
                // Mostly values the field takes, so that many lines are stored.
                let value = n % 2 == 0 ? values.randomElement(using: &generator)! : plausible(key, &generator)
                // Now and then the key escaped (matched after decoding), or given twice.
                let written =
                    Int.random(in: 0..<10, using: &generator) == 0 ? "\\u00" + String(key.utf8.first!, radix: 16) : key
                members.append("\"\(written)\":\(value)")
                if Int.random(in: 0..<40, using: &generator) == 0 {
                    members.append("\"\(key)\":\(plausible(key, &generator))")
                }
            }
            if Int.random(in: 0..<10, using: &generator) == 0 {
                members = [
                    #""_type":"Other""#, "\"s\":\(plausible("s", &generator))", "\"d\":\(plausible("d", &generator))",
                ]
            }
            let id = [
                "", #""_id":"65f0c0ffee0123456789abcd","#, #""_id":"65F0C0FFEE0123456789ABCD","#, #""_id":null,"#,
                #""_id":"x","#,
            ]
            .randomElement(using: &generator)!
            // Every key left out (about one line in a hundred runs): no comma after the _id.
            let text = "{" + (members.isEmpty ? String(id.dropLast()) : id) + members.joined(separator: ",") + "}"
            try Array(text.utf8).withUnsafeBytes { bytes in
                try parser.parse(bytes, into: &line)
                var batch = EncodedBatch()
                let agent: Result<[UInt8], LineRejection>
                do throws(LineRejection) {
                    try agentRouter.route(line, into: &batch)
                    agent = .success(batch.runs[0].payload)
                } catch {
                    agent = .failure(error)
                }
                let converting: Result<[UInt8], LineRejection>
                do throws(LineRejection) {
                    var out: [UInt8] = []
                    try recordRouter.route(line).encodeJSON(into: &out)
                    out.append(UInt8(ascii: "\n"))
                    converting = .success(out)
                } catch {
                    converting = .failure(error)
                }
                switch (agent, converting) {
                case (.success(let a), .success(let b)):
                    try expectSameValues(input: text, stored: a)
                    // A generated _id differs; everything after it must not.
                    #expect(
                        a.count == b.count && a[33...] == b[33...],
                        "\(text)\n\(String(decoding: a, as: UTF8.self))\(String(decoding: b, as: UTF8.self))"
                    )
                    if id.contains("65") { #expect(a == b, "\(text)") }
                    stored += 1
                case (.failure(let a), .failure(let b)):
                    #expect(a == b, "\(text)")
                default:
                    Issue.record("one path stored and the other refused: \(text): \(agent) / \(converting)")
                }
            }
        }
        #expect(stored > 2_000, "too few lines stored to compare: \(stored)")
    }

    /// Read by an independent parser (JSONValue), every string, boolean and
    /// number of the input line is in the stored line with the same value
    /// (numbers compared as doubles; timestamps and ObjectIds are rewritten).
    private func expectSameValues(input: String, stored: [UInt8]) throws {
        guard case .object(let given) = try JSONValue.parse(Array(input.utf8)),
            case .object(let kept) = try JSONValue.parse(Array(stored.dropLast()))
        else {
            Issue.record("not objects: \(input)")
            return
        }
        let storedByKey = Dictionary(kept, uniquingKeysWith: { first, _ in first })
        // A stored line's strings and booleans are in s and b, its numbers in
        // i, n and d: any other value there would have refused the line.
        for (key, value) in given where key != "_id" && key != "_type" && key != "t" && key != "o" {
            switch value {
            case .string, .bool: #expect(storedByKey[key] == value, "\(key) in \(input)")
            case .int, .double: #expect(storedByKey[key]?.double == value.double, "\(key) in \(input)")
            default: break
            }
        }
    }

    /// Errors found after the eight-bytes-at-a-time scan skipped part of a
    /// long string are reported at the same byte as a byte-by-byte reader would.
    @Test func errorsInsideLongStringsSayTheirByte() {
        var parser = NDJSONParser()
        var line = ParsedLine()
        for offset in 0..<40 {
            let head = #"{"a":""# + String(repeating: "x", count: offset)
            let at = head.utf8.count + 1  // 1-based byte of the problem
            for (tail, message) in [
                ("\u{01}\"}", "malformed JSON at byte \(at): control character inside a string (escape it)"),
                (#"\x"}"#, "malformed JSON at byte \(at): invalid escape in a string"),
                (String(repeating: "y", count: 20), "malformed JSON at byte \(at + 20): unterminated string"),
            ] {
                let bytes = Array((head + tail).utf8)
                #expect(throws: LineRejection(reason: "malformed_json", message: message)) {
                    try bytes.withUnsafeBytes { try parser.parse($0, into: &line) }
                }
            }
            // And a key that long, escaped at the end, still matches its field.
            let key = String(repeating: "k", count: offset) + "\\u0041"
            let bytes = Array(("{\"" + key + "\":1}").utf8)
            let decoded = try? bytes.withUnsafeBytes { raw in
                try parser.parse(raw, into: &line)
                return line.keyString(line.fields[0])
            }
            #expect(decoded == String(repeating: "k", count: offset) + "A")
        }
    }

    /// A value of the field's own type, in one of the texts it may come as.
    private func plausible(_ key: String, _ generator: inout SystemRandomNumberGenerator) -> String {
        switch key {
        case "s":
            return [#""WX\#(Int.random(in: 0...99, using: &generator))""#, #""tab\there""#, #""ok""#].randomElement(
                using: &generator
            )!
        case "i", "n":
            return ["\(Int.random(in: -1000...1000, using: &generator))", "3.0", "12", "-0"].randomElement(
                using: &generator
            )!
        case "d":
            return [
                "\(Int.random(in: -99...99, using: &generator)).\(Int.random(in: 0...99, using: &generator))", "66.7",
                "5", "7.50", "1.5e1",
            ]
            .randomElement(using: &generator)!
        case "b": return Bool.random(using: &generator) ? "true" : "false"
        case "t": return [#""2026-11-21T11:41:55.120Z""#, "1763725315120", "null"].randomElement(using: &generator)!
        default: return [#""65f0c0ffee0123456789abcd""#, "null"].randomElement(using: &generator)!
        }
    }

    /// The eight-bytes-at-a-time test of the string scanner agrees with a
    /// byte-by-byte one, for words with each special byte at each position:
    /// whether there is one, and which comes first.
    @Test func theWordTestFindsEveryQuoteBackslashAndControlByte() {
        var generator = SystemRandomNumberGenerator()
        var words: [UInt64] = (0..<100_000).map { _ in UInt64.random(in: 0...UInt64.max, using: &generator) }
        for special: UInt8 in [0x22, 0x5C, 0x00, 0x1F, 0x0A, 0x20, 0x21, 0x7F, 0x80, 0xA0, 0xFF] {
            for position in 0..<8 {
                var bytes = [UInt8](repeating: 0x41, count: 8)
                bytes[position] = special
                words.append(bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
                bytes = [UInt8](repeating: 0xE9, count: 8)
                bytes[position] = special
                words.append(bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
            }
        }
        for word in words {
            let first = withUnsafeBytes(of: word.littleEndian) {
                $0.firstIndex { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 }
            }
            let flagged = NDJSONParser.endOrEscapeBytes(word)
            #expect((flagged == 0 ? nil : flagged.trailingZeroBitCount >> 3) == first, "\(String(word, radix: 16))")
        }
    }
}

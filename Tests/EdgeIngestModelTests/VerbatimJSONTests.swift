import TestSupport
import Testing

@testable import EdgeIngestModel

/// The forms a reading's value is stored in as read (VerbatimJSON) are
/// exactly texts JSONWriter writes unchanged: if one were not, the queue
/// would hold other bytes than the converting path stores.
@Suite struct VerbatimJSONTests {
    private func form(_ text: String) -> VerbatimJSON? {
        Array(text.utf8).withUnsafeBytes { VerbatimJSON.number($0) }
    }

    private func written(_ value: FieldValue) -> String {
        var out: [UInt8] = []
        switch value {
        case .int(let i): JSONWriter.appendInt(i, to: &out)
        case .double(let d): JSONWriter.appendDouble(d, to: &out)
        default: Issue.record("not a number: \(value)")
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test(arguments: [
        ("0", VerbatimJSON.integer), ("-42", .integer), ("999999999999999", .integer), ("-999999999999999", .integer),
        ("29.65", .shortDecimal), ("-0.5", .shortDecimal), ("0.000001", .shortDecimal),
        ("999999999.999999", .shortDecimal),
        ("66.7", .shortDecimal), ("123456789.123456", .shortDecimal),
    ])
    func theseAreVerbatim(_ text: String, _ expected: VerbatimJSON) {
        #expect(form(text) == expected)
    }

    @Test(arguments: [
        "-0", "1000000000000000", "60.0", "29.650", "1e3", "1E3", "1.5e2", "0.0000001", "1234567890.5", "-0.0", "1.",
    ])
    func theseAreConverted(_ text: String) {
        #expect(form(text) == nil)
    }

    /// Every verbatim number reads back (as the parser reads it) to a value
    /// the writer writes as the same text, for each field type that stores it.
    @Test func verbatimNumbersAreWhatTheWriterWrites() {
        var generator = SystemRandomNumberGenerator()
        var checked = 0
        for n in 0..<200_000 {
            let text: String
            switch n % 4 {
            case 0: text = String(Int64.random(in: -999_999_999_999_999...999_999_999_999_999, using: &generator))
            case 1: text = String(Int64.random(in: -1000...1000, using: &generator))
            default:
                let integer = Int64.random(in: 0...(n % 3 == 0 ? 999_999_999 : 999), using: &generator)
                let decimals = Int.random(in: 1...7, using: &generator)
                var fraction = ""
                for _ in 0..<decimals { fraction += String(Int.random(in: 0...9, using: &generator)) }
                text = (Bool.random(using: &generator) ? "-" : "") + String(integer) + "." + fraction
            }
            guard let form = form(text) else { continue }
            checked += 1
            let double = Double(text)!
            let type = FieldType.double
            #expect(type.storesVerbatim(form))
            #expect(written(.double(double)) == text, "double field: \(text)")
            let fromVerbatim = Array(text.utf8).withUnsafeBytes { type.value(verbatim: $0, form: form) }
            #expect(fromVerbatim == .double(double))
            if form == .integer {
                #expect(FieldType.int.storesVerbatim(form))
                #expect(written(.int(Int64(text)!)) == text, "int field: \(text)")
            } else {
                #expect(!FieldType.int.storesVerbatim(form))
            }
        }
        #expect(checked > 100_000)
    }

    @Test func onlyTheTypesThatWriteAFormStoreIt() {
        #expect(FieldType.string.storesVerbatim(.plainString))
        #expect(FieldType.bool.storesVerbatim(.boolean))
        for type in [FieldType.timestamp, .objectId] {
            for form in [VerbatimJSON.plainString, .integer, .shortDecimal, .boolean] {
                #expect(!type.storesVerbatim(form), "\(type) must convert \(form)")
            }
        }
        #expect(FieldType.timestamp.storesVerbatim(.canonicalTimestamp))
        #expect(!FieldType.string.storesVerbatim(.canonicalTimestamp))
        #expect(!FieldType.string.storesVerbatim(.integer))
        #expect(!FieldType.bool.storesVerbatim(.plainString))
    }

    private func canonical(_ text: String) -> Bool {
        Array(("\"" + text + "\"").utf8).withUnsafeBytes { VerbatimJSON.isCanonicalTimestamp($0) }
    }

    /// Every instant of years 0–9999 written by the writer is canonical
    /// and reads back to itself; random texts of the same shape are
    /// canonical only when the writer writes them so.
    @Test func canonicalTimestampsAreExactlyTheWritersText() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100_000 {
            let ms = Int64.random(in: -62_167_219_200_000...253_402_300_799_999, using: &generator)
            var text: [UInt8] = []
            Timestamp.appendISO8601(milliseconds: ms, to: &text)
            let literal = [UInt8(ascii: "\"")] + text + [UInt8(ascii: "\"")]
            #expect(literal.withUnsafeBytes { VerbatimJSON.isCanonicalTimestamp($0) }, "\(ms)")
            #expect(
                literal.withUnsafeBytes { FieldType.timestamp.value(verbatim: $0, form: .canonicalTimestamp) }
                    == .timestamp(milliseconds: ms)
            )
        }
        let alphabet = Array("0123456789TZtz-:.,+ ".utf8)
        var canonicalSeen = 0
        for n in 0..<200_000 {
            // Mostly valid shapes with one or two bytes changed.
            var text = Array("2026-11-21T10:00:00.100Z".utf8)
            for _ in 0..<(1 + n % 2) {
                text[Int.random(in: 0..<text.count, using: &generator)] = alphabet.randomElement(using: &generator)!
            }
            let literal = [UInt8(ascii: "\"")] + text + [UInt8(ascii: "\"")]
            guard literal.withUnsafeBytes({ VerbatimJSON.isCanonicalTimestamp($0) }) else { continue }
            canonicalSeen += 1
            let ms = text.withUnsafeBytes { Timestamp.parse($0) }!
            var written: [UInt8] = []
            Timestamp.appendISO8601(milliseconds: ms, to: &written)
            #expect(written == text, "\(String(decoding: text, as: UTF8.self))")
        }
        #expect(canonicalSeen > 1_000)
    }

    /// The parser finds a number's verbatim form in its one pass exactly as
    /// `VerbatimJSON.number` finds it in the text: generated numbers of
    /// every shape (signs, leading zeros, trailing zeros, long digit runs,
    /// fractions, exponents), each parsed in a line.
    @Test func theParserFindsTheSameNumberFormAsTheText() {
        var random = SplitMix64(seed: 2222)
        func digits(_ count: Int) -> String { String((0..<count).map { _ in Character(String(random.next() % 10)) }) }
        var checked = 0
        for _ in 0..<100_000 {
            var text = random.next() % 4 == 0 ? "-" : ""
            text += random.next() % 5 == 0 ? "0" : String(random.next() % 9 + 1) + digits(Int(random.next() % 17))
            if random.next() % 2 == 0 { text += "." + digits(Int(random.next() % 8) + 1) }
            if random.next() % 8 == 0 {
                text += ["e", "E", "e-", "E+"][Int(random.next() % 4)] + digits(Int(random.next() % 3) + 1)
            }
            var parser = NDJSONParser()
            var parsed = ParsedLine()
            let line = Array(#"{"x":\#(text)}"#.utf8)
            let form = line.withUnsafeBytes { raw -> VerbatimJSON?? in
                guard (try? parser.parse(raw, into: &parsed)) != nil, case .json(let token) = parsed.fields[0].value
                else {
                    return nil
                }
                return .some(token.numberForm)
            }
            guard let form else { continue }  // not valid JSON ("01"): the parser refuses it
            let expected = Array(text.utf8).withUnsafeBytes { VerbatimJSON.number($0) }
            #expect(form == expected, "\(text)")
            checked += 1
        }
        #expect(checked > 50_000)
    }

    /// The in-place check agrees with the general parser's on texts near
    /// the canonical layout: every position mutated, days at each month's
    /// end, February 29 in leap and common years (centuries too).
    @Test func theInPlaceTimestampCheckAgreesWithTheParser() {
        var random = SplitMix64(seed: 22)
        let alphabet = Array("0123456789TZtz-:.,+ /".utf8) + [0x00, 0x7F, 0xC3]
        var texts: [[UInt8]] = []
        for year in ["0000", "1900", "2000", "2023", "2024", "2100", "9999"] {
            for month in 0...13 {
                for day in [0, 1, 28, 29, 30, 31, 32] {
                    let date = "\(year)-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)"
                    texts.append(Array("\(date)T23:59:59.999Z".utf8))
                }
            }
        }
        for n in 0..<300_000 {
            var text = Array("2024-02-29T10:00:00.100Z".utf8)
            for _ in 0..<(1 + n % 3) {
                text[Int(random.next() % 24)] = alphabet[Int(random.next() % UInt64(alphabet.count))]
            }
            texts.append(text)
        }
        var canonicalSeen = 0
        for text in texts {
            let literal = [UInt8(ascii: "\"")] + text + [UInt8(ascii: "\"")]
            let fast = literal.withUnsafeBytes { VerbatimJSON.isCanonicalTimestamp($0) }
            let parsed = literal.withUnsafeBytes { VerbatimJSON.isCanonicalTimestampByParsing($0) }
            #expect(fast == parsed, "\(String(decoding: text, as: UTF8.self))")
            if fast { canonicalSeen += 1 }
        }
        #expect(canonicalSeen > 10_000)
    }

    @Test(arguments: [
        "2026-12-31T23:59:60.000Z", "2026-11-21t10:00:00.100Z", "2026-11-21T10:00:00.100z", "2026-11-21T10:00:00,100Z",
        "2026-11-21T10:00:00.10Z", "2026-11-21T10:00:00Z", "2026-11-21T10:00:00.100+00:00", "2023-02-29T10:00:00.100Z",
        "2026-11-21T24:00:00.000Z", "2026-11-21 10:00:00.100Z", "+02026-11-21T10:00:00.100Z",
    ])
    func otherTimestampFormsAreConverted(_ text: String) {
        #expect(!canonical(text))
    }

    /// A builder given verbatim text finishes into the same Record as one
    /// given the converted values, and into the same stored line.
    @Test func aBuilderGivenTextBuildsWhatConvertedValuesBuild() throws {
        let type = try RecordType(
            name: "T",
            fields: [
                .init(name: "s", type: .string), .init(name: "i", type: .int), .init(name: "d", type: .double),
                .init(name: "b", type: .bool), .init(name: "o", type: .int, isRequired: false),
                .init(name: "t", type: .timestamp),
            ]
        )
        let id = ObjectId.generate()
        var verbatim = RecordBuilder(type: type)
        var converted = RecordBuilder(type: type)
        try verbatim.setID(.objectId(id))
        try converted.setID(.objectId(id))
        for (index, text, form, value) in [
            (0, #""WX1278UIT""#, VerbatimJSON.plainString, RawFieldValue.string("WX1278UIT")),
            (1, "-42", .integer, .int(-42)), (2, "29.65", .shortDecimal, .double(29.65)),
            (3, "true", .boolean, .bool(true)),
            (5, #""2026-11-21T10:00:00.100Z""#, .canonicalTimestamp, .string("2026-11-21T10:00:00.100Z")),
        ] {
            #expect(try Array(text.utf8).withUnsafeBytes { try verbatim.setVerbatim(field: index, $0, form: form) })
            try converted.set(field: index, value)
        }
        #expect(try verbatim.finish() == converted.finish())
        var stored = EncodedBatch()
        var expected = EncodedBatch()
        try verbatim.finish(into: &stored)
        try converted.finish(into: &expected)
        #expect(stored.runs[0].payload == expected.runs[0].payload)
        #expect(
            String(decoding: stored.runs[0].payload, as: UTF8.self)
                == #"{"_id":"\#(id.hexString)","s":"WX1278UIT","i":-42,"d":29.65,"b":true,"t":"2026-11-21T10:00:00.100Z"}"#
                + "\n"
        )
    }

    @Test func verbatimTextIsRefusedWhereTheTypeDoesNotStoreItAndCountsAsSet() throws {
        let type = try RecordType(
            name: "T",
            fields: [.init(name: "t", type: .timestamp), .init(name: "i", type: .int)]
        )
        var builder = RecordBuilder(type: type)
        #expect(
            try !Array("1700000000000".utf8).withUnsafeBytes { try builder.setVerbatim(field: 0, $0, form: .integer) }
        )
        try builder.set(field: 0, .int(1_700_000_000_000))  // not set twice: the refusal set nothing
        #expect(try Array("7".utf8).withUnsafeBytes { try builder.setVerbatim(field: 1, $0, form: .integer) })
        #expect(throws: EdgeIngestError.self) {
            try Array("8".utf8).withUnsafeBytes { try builder.setVerbatim(field: 1, $0, form: .integer) }
        }
        #expect(throws: EdgeIngestError.self) { try builder.set(field: 1, .int(8)) }
    }
}

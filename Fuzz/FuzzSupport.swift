// Shared by the NDJSON and CSV fuzz targets (scripts/fuzz.sh compiles it
// into each of them): the record types, a reference model of the line
// framer, and the checks every accepted record and every rejection must pass.
//
// A failed check is a `precondition`, so libFuzzer reports it as a crash
// and saves the input.

@testable import EdgeIngestModel

// MARK: - Lines

/// The fuzzed pipeline's line limit (the agent's default is 64 KiB; this is
/// lower so that fuzz inputs of a few KiB reach line_too_long too).
let fuzzMaxLineBytes = 2048

/// Frames `input` as LineIngestor does and hands `body` every non-blank line
/// within the limit (over-long lines become line_too_long there, blank ones
/// are skipped). With `checkingFraming`, first checks the framer itself
/// (``checkFraming(_:)``); the framer does not depend on the format, so one
/// target doing it is enough.
func forEachLine(_ input: UnsafeRawBufferPointer, checkingFraming: Bool, _ body: (UnsafeRawBufferPointer) -> Void) {
    if checkingFraming { checkFraming(input) }
    var framer = LineFramer(delimiter: 0x0A, maxLineBytes: fuzzMaxLineBytes)
    let handle: (LineFramer.Event) -> Void = { event in
        guard case .line(let bytes, _, _) = event, !LineFramer.isBlank(bytes) else { return }
        body(bytes)
    }
    framer.feed(input, handle)
    framer.finish(handle)
}

// MARK: - Record types

/// WeatherSensor as etc/ingestd.toml and Tests/EdgeIngestTests/WeatherSensor.swift declare it.
let weatherSensor = try! RecordType(
    name: "WeatherSensor",
    fields: [
        .init(name: "_id", type: .objectId),
        .init(name: "deviceId", type: .string),
        .init(name: "temperatureInFahrenheit", type: .double),
        .init(name: "barometricPressureInHg", type: .double),
        .init(name: "windSpeedInMph", type: .int),
    ]
)

/// A second type, reached with `"_type":"Probe"`, so that every field type
/// (and optional fields and defaults) is validated and encoded.
let probe = try! RecordType(
    name: "Probe",
    fields: [
        .init(name: "flag", type: .bool, isRequired: false),
        .init(name: "at", type: .timestamp, isRequired: false),
        .init(name: "ref", type: .objectId, isRequired: false),
        .init(name: "count", type: .int, isRequired: false),
        .init(name: "ratio", type: .double, isRequired: false),
        .init(name: "label", type: .string, isRequired: false, defaultValue: .string("C")),
    ]
)

let declaredTypes = [weatherSensor, probe]

/// The router an input configured with `type = "WeatherSensor"` uses.
let inputRouter = ReadingRouter(types: declaredTypes, defaultType: "WeatherSensor", inputName: "fuzz")

/// One router per type, for reading back a record's own JSON (which has no `_type`).
let routerFor: [String: ReadingRouter] = Dictionary(
    uniqueKeysWithValues: declaredTypes.map {
        ($0.name, ReadingRouter(types: declaredTypes, defaultType: $0.name, inputName: "fuzz"))
    }
)

// MARK: - Rejections

/// Every reason a line can be rejected for: stable counter keys
/// (LineIngestor counts `rejected.<reason>`). Anything else is a bug.
let knownReasons: Set<String> = [
    "malformed_json", "malformed_csv", "invalid_utf8", "line_too_long", "missing_type", "invalid_record",
    "missing_field", "unknown_field", "duplicate_field", "type_mismatch", "out_of_range", "invalid_object_id",
    "invalid_timestamp", "unknown_type",
]

/// LineRejection's contract: a known reason and a message that "quote[s] at
/// most a short, truncated excerpt of the line, never the whole payload".
/// The longest legitimate message is well under 512 bytes (quoted values
/// are cut at 32 scalars, declared names are short).
func checkRejection(_ rejection: LineRejection) {
    precondition(knownReasons.contains(rejection.reason), "unknown rejection reason '\(rejection.reason)'")
    precondition(!rejection.message.isEmpty, "empty rejection message for reason \(rejection.reason)")
    precondition(
        rejection.message.utf8.count <= 512,
        "rejection message of \(rejection.message.utf8.count) bytes (\(rejection.reason)): quotes more than an excerpt"
    )
}

// MARK: - Line framing

enum Framed: Equatable {
    case line([UInt8], number: Int, end: Int64)
    case overlong(number: Int, bytes: Int, end: Int64)
}

/// What LineFramer must produce (with `finish`), written the obvious way:
/// split at every "\n"; a piece over `limit` bytes (counted before the
/// trailing "\r" is dropped) is overlong; an unterminated last piece counts
/// only if it is not empty.
func referenceFrames(_ data: UnsafeRawBufferPointer, limit: Int) -> [Framed] {
    var out: [Framed] = []
    var start = 0
    var number = 1
    func emit(_ end: Int, consumed: Int) {
        let raw = Array(data[start..<end])
        if raw.count > limit {
            out.append(.overlong(number: number, bytes: raw.count, end: Int64(consumed)))
        } else {
            out.append(.line(raw.last == 0x0D ? Array(raw.dropLast()) : raw, number: number, end: Int64(consumed)))
        }
        number += 1
    }
    for i in 0..<data.count where data[i] == 0x0A {
        emit(i, consumed: i + 1)
        start = i + 1
    }
    if start < data.count { emit(data.count, consumed: data.count) }
    return out
}

/// Feeds `data` to a LineFramer in chunks that end at `cuts` (ascending
/// offsets), checking its bookkeeping after every chunk.
func frames(_ data: UnsafeRawBufferPointer, limit: Int, cuts: [Int]) -> [Framed] {
    var framer = LineFramer(delimiter: 0x0A, maxLineBytes: limit)
    var out: [Framed] = []
    let collect: (LineFramer.Event) -> Void = { event in
        switch event {
        case .line(let bytes, let number, let end): out.append(.line(Array(bytes), number: number, end: end))
        case .overlong(let number, let bytes, let end): out.append(.overlong(number: number, bytes: bytes, end: end))
        }
    }
    var from = 0
    var lastDelimiterEnd = 0
    for cut in cuts + [data.count] where cut > from {
        framer.feed(UnsafeRawBufferPointer(rebasing: data[from..<cut]), collect)
        for i in from..<cut where data[i] == 0x0A { lastDelimiterEnd = i + 1 }
        from = cut
        // Bounded memory: never more than the limit held for a partial line…
        precondition(
            framer.bufferedBytes <= limit,
            "framer holds \(framer.bufferedBytes) bytes, over its limit \(limit)"
        )
        // …while counting all of it, and committing exactly to the last delimiter.
        precondition(
            framer.pendingBytes == cut - lastDelimiterEnd,
            "framer pendingBytes \(framer.pendingBytes) != \(cut - lastDelimiterEnd)"
        )
        precondition(
            framer.committedOffset == Int64(lastDelimiterEnd),
            "framer committedOffset \(framer.committedOffset) != \(lastDelimiterEnd)"
        )
        precondition(framer.nextLineNumber == out.count + 1, "framer line numbers skip")
    }
    framer.finish(collect)
    precondition(
        framer.committedOffset == Int64(data.count),
        "after finish the framer has not committed the whole input"
    )
    return out
}

/// The framer gives the same lines as the reference however the input is
/// cut into chunks (one chunk, byte by byte, chunk sizes taken from the
/// input) and whatever the line limit.
func checkFraming(_ data: UnsafeRawBufferPointer) {
    var seed: UInt64 = 0xCBF2_9CE4_8422_2325
    for b in data.prefix(64) { seed = (seed ^ UInt64(b)) &* 0x100_0000_01B3 }
    let limits = [1 << 20, 1 + Int(seed % 48)]
    var mixed: [Int] = []
    var at = 0
    var k = 0
    while at < data.count {
        at += 1 + Int(data[k % data.count] % 23)
        k += 1
        if at < data.count { mixed.append(at) }
    }
    let cuttings: [[Int]] = [[], Array(1..<max(1, data.count)), mixed]
    for limit in limits {
        let expected = referenceFrames(data, limit: limit)
        for cuts in cuttings {
            let got = frames(data, limit: limit, cuts: cuts)
            precondition(
                got == expected,
                "LineFramer (limit \(limit), \(cuts.count + 1) chunks) differs from the reference framing"
            )
        }
    }
}

// MARK: - UTF-8

/// firstInvalidUTF8 agrees with the standard library's validation, and the
/// offset it reports is where the valid prefix ends.
func checkUTF8(_ line: UnsafeRawBufferPointer) {
    let ours = firstInvalidUTF8(line)
    let stdlib = String(validating: line, as: UTF8.self)
    precondition(
        (ours == nil) == (stdlib != nil),
        "firstInvalidUTF8 = \(String(describing: ours)) but String(validating:) \(stdlib == nil ? "refuses" : "accepts")"
    )
    if let bad = ours {
        precondition(bad < line.count, "invalid UTF-8 offset past the end")
        precondition(
            String(validating: UnsafeRawBufferPointer(rebasing: line[..<bad]), as: UTF8.self) != nil,
            "bytes before the invalid offset are not valid UTF-8"
        )
    }
}

// MARK: - Parsed lines

/// Raw values compared bit for bit (NaN equals itself).
func same(_ a: RawFieldValue, _ b: RawFieldValue) -> Bool {
    if case .double(let x) = a, case .double(let y) = b { return x.bitPattern == y.bitPattern }
    return a == b
}

/// A parse result, comparable.
enum ParseResult {
    case fields([(key: [UInt8], value: RawFieldValue)])
    case rejected(LineRejection)

    /// The fields of a parsed line, values converted (while the line's bytes are held).
    init(_ parsed: ParsedLine) throws(LineRejection) {
        var fields: [(key: [UInt8], value: RawFieldValue)] = []
        for field in parsed.fields { fields.append((parsed.keyBytes(field), try parsed.value(field))) }
        self = .fields(fields)
    }

    /// Runs `parse` into `parsed`: the fields it left there, or the
    /// rejection it threw.
    init(_ parsed: inout ParsedLine, _ parse: (inout ParsedLine) throws(LineRejection) -> Void) {
        do throws(LineRejection) {
            try parse(&parsed)
            try self.init(parsed)
        } catch {
            self = .rejected(error)
        }
    }

    func matches(_ other: ParseResult) -> Bool {
        switch (self, other) {
        case (.rejected(let a), .rejected(let b)): return a == b
        case (.fields(let a), .fields(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && same($0.value, $1.value) }
        default: return false
        }
    }
}

// MARK: - Records

/// An accepted record is well formed, and its JSON (what the queue stores
/// and the backend receives) reads back as the same record.
func checkRecord(_ record: Record) {
    let type = record.type
    precondition(declaredTypes.contains(type), "record of an undeclared type")
    precondition(
        record.values.count == type.fields.count,
        "record has \(record.values.count) values for \(type.fields.count) fields"
    )
    precondition(!record.id.isZero, "record with a zero _id")
    var readable = true
    for (field, value) in zip(type.fields, record.values) {
        guard let value else {
            precondition(
                !field.isRequired && field.defaultValue == nil,
                "required or defaulted field '\(field.name)' left empty"
            )
            continue
        }
        precondition(value.type == field.type, "field '\(field.name)' holds a \(value.type), declared \(field.type)")
        switch value {
        case .double(let d): precondition(d.isFinite, "field '\(field.name)' holds \(d)")
        case .timestamp(let ms): if !checkTimestampText(ms) { readable = false }
        default: break
        }
    }

    var json: [UInt8] = []
    record.encodeJSON(into: &json)
    json.withUnsafeBytes { raw in
        precondition(firstInvalidUTF8(raw) == nil, "a record's JSON is not valid UTF-8")
        guard readable else { return }
        var parser = NDJSONParser()
        var parsed = ParsedLine()
        do throws(LineRejection) {
            try parser.parse(raw, into: &parsed)
        } catch {
            preconditionFailure(
                "a record's own JSON does not parse: \(error.message): \(String(decoding: json, as: UTF8.self))"
            )
        }
        let back: Record
        do throws(LineRejection) {
            back = try routerFor[type.name]!.route(parsed)
        } catch {
            preconditionFailure(
                "a record's own JSON is refused: \(error.message): \(String(decoding: json, as: UTF8.self))"
            )
        }
        precondition(back.id == record.id, "_id changed through JSON")
        precondition(
            back.values == record.values,
            "values changed through JSON: \(record.values) became \(back.values)"
        )
    }
}

/// The ISO 8601 text a timestamp is encoded as names the same instant.
/// Returns whether the agent's own parser can read it back (4-digit years);
/// expanded years (`+010000-…`, `-000001-…`, `+1971970-…`) are decoded here instead.
func checkTimestampText(_ ms: Int64) -> Bool {
    var text: [UInt8] = []
    Timestamp.appendISO8601(milliseconds: ms, to: &text)
    let parsed = text.withUnsafeBytes { Timestamp.parse($0) }
    if let parsed {
        precondition(
            parsed == ms,
            "timestamp \(ms) is written as \(String(decoding: text, as: UTF8.self)), which reads back as \(parsed)"
        )
        return true
    }
    // ±YYYYYY…-MM-DDTHH:MM:SS.mmmZ: a sign and six or more year digits.
    let yearDigits = text.count - 21
    precondition(
        yearDigits >= 6 && (text[0] == UInt8(ascii: "+") || text[0] == UInt8(ascii: "-")),
        "timestamp \(ms) is written as unreadable \(String(decoding: text, as: UTF8.self))"
    )
    func number(_ from: Int, _ count: Int) -> Int64 {
        text[from..<from + count].reduce(0) { $0 * 10 + Int64($1 - 48) }
    }
    let year = (text[0] == UInt8(ascii: "-") ? -1 : 1) * number(1, yearDigits)
    let o = yearDigits - 6  // the fields after the year move right by the extra digits
    let days = Timestamp.daysFromCivil(year, number(8 + o, 2), number(11 + o, 2))
    let seconds = days * 86_400 + number(14 + o, 2) * 3_600 + number(17 + o, 2) * 60 + number(20 + o, 2)
    // Seconds and milliseconds compared apart: within a second of
    // Int64.min, seconds × 1,000 alone is out of Int64's range.
    let (quotient, remainder) = ms.quotientAndRemainder(dividingBy: 1_000)
    let expectedSeconds = remainder < 0 ? quotient - 1 : quotient
    let expectedMilliseconds = remainder < 0 ? remainder + 1_000 : remainder
    precondition(
        seconds == expectedSeconds && number(23 + o, 3) == expectedMilliseconds,
        "timestamp \(ms) is written as \(String(decoding: text, as: UTF8.self)), which is \(seconds) s + \(number(23 + o, 3)) ms"
    )
    return false
}

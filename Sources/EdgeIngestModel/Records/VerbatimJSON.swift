/// JSON value text that ``JSONWriter`` would write byte for byte the same
/// for a field of some types, so a validated reading's value can be stored
/// as it was read instead of being converted and written again.
///
/// The forms are narrow on purpose: each is text the writer produces
/// unchanged, so a record stored from verbatim text is the same bytes as
/// the record built from converted values (tests compare both paths).
///
/// | form | text | stored verbatim for |
/// | --- | --- | --- |
/// | ``plainString`` | a string literal without a backslash: `"WX1278UIT"` | `string` |
/// | ``integer`` | `0`, or up to 15 digits without a leading zero, optionally negative: `-42` | `int`, `double` |
/// | ``shortDecimal`` | up to 9 integer digits, `.`, 1–6 decimals ending in a non-zero digit: `29.65` | `double` |
/// | ``boolean`` | `true`, `false` | `bool` |
/// | ``canonicalTimestamp`` | a valid UTC time as the writer writes it: `"2026-11-21T10:00:00.100Z"` | `timestamp` |
///
/// Anything else (`60.0`, `1e3`, `-0`, escapes, other timestamp forms,
/// ObjectIds) takes the converting path.
package enum VerbatimJSON: Sendable {
    case plainString
    case integer
    case shortDecimal
    case boolean
    case canonicalTimestamp

    /// The form of a JSON number's text (already checked to be valid JSON),
    /// or nil when the writer would write that number differently.
    ///
    /// Why these are the writer's own text: a decimal with at most 15
    /// significant digits reads as a double whose shortest round-trip
    /// text is those digits again (15 ≤ `Double`'s 15.95 decimal digits),
    /// and ``JSONWriter/appendDouble(_:to:)`` writes integers below 2^53
    /// without a fraction and values in [1e-6, 1e9) with the fewest
    /// decimals (≤ 6) that read back the same.
    package static func number(_ text: UnsafeRawBufferPointer) -> VerbatimJSON? {
        var k = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative { k = 1 }
        let integerStart = k
        while k < text.count, isDigit(text[k]) { k += 1 }
        let integerDigits = k - integerStart
        guard integerDigits > 0 else { return nil }
        var fractionDigits = 0
        if k < text.count {
            guard text[k] == UInt8(ascii: ".") else { return nil }
            k += 1
            let fractionStart = k
            while k < text.count, isDigit(text[k]) { k += 1 }
            fractionDigits = k - fractionStart
            guard k == text.count, fractionDigits >= 1 else { return nil }
        }
        return numberForm(
            negativeZero: negative && integerDigits == 1 && text[integerStart] == UInt8(ascii: "0"),
            integerDigits: integerDigits,
            fractionDigits: fractionDigits,
            endsInZero: text[k - 1] == UInt8(ascii: "0")
        )
    }

    /// ``number(_:)``'s rule on a valid JSON number without exponent, given
    /// its parts (the NDJSON parser finds them in its own scan): whether it
    /// is `-0` (written `0`), its integer and fraction digit counts, and
    /// whether its last digit is 0 (a decimal's trailing zero is not written).
    @inline(__always)
    package static func numberForm(
        negativeZero: Bool,
        integerDigits: Int,
        fractionDigits: Int,
        endsInZero: Bool
    ) -> VerbatimJSON? {
        if fractionDigits == 0 { return integerDigits <= 15 && !negativeZero ? .integer : nil }
        return integerDigits <= 9 && fractionDigits <= 6 && !endsInZero ? .shortDecimal : nil
    }

    /// Whether a string literal (with its quotes) is a timestamp exactly as
    /// ``Timestamp/appendISO8601(milliseconds:to:)`` writes it — a year of
    /// 4 digits, `T`, seconds below 60, 3 decimals, `Z` — and valid: then
    /// its text is the stored text (issue 22: formatting it again cost 19 %
    /// of the realistic ingest). A fuzz target compares both paths.
    ///
    /// Checked in place, without the general parser (`yyyy-mm-ddThh:mm:ss.fffZ`
    /// has one layout: every character is a given digit or separator); a
    /// test and the NDJSON fuzz target compare it with
    /// ``isCanonicalTimestampByParsing(_:)``.
    package static func isCanonicalTimestamp(_ literal: UnsafeRawBufferPointer) -> Bool {
        guard literal.count == 26 else { return false }
        let p = literal.baseAddress!.assumingMemoryBound(to: UInt8.self) + 1
        // Separators at 4, 7, 10, 13, 16, 19, 23; digits everywhere else.
        guard p[4] == UInt8(ascii: "-"), p[7] == UInt8(ascii: "-"), p[10] == UInt8(ascii: "T"),
            p[13] == UInt8(ascii: ":"), p[16] == UInt8(ascii: ":"), p[19] == UInt8(ascii: "."),
            p[23] == UInt8(ascii: "Z")
        else { return false }
        var notDigits = false
        func digit(_ k: Int) -> Int {
            let value = p[k] &- UInt8(ascii: "0")  // wraps above 9 for anything below "0"
            notDigits = notDigits || value > 9
            return Int(value)
        }
        func two(_ k: Int) -> Int { digit(k) * 10 + digit(k + 1) }
        let year = two(0) * 100 + two(2)
        let month = two(5)
        let day = two(8)
        let hour = two(11)
        let minute = two(14)
        let second = two(17)
        _ = two(20) + digit(22)  // the milliseconds: digits, any value
        guard !notDigits, month >= 1, month <= 12, day >= 1, hour < 24, minute < 60, second < 60 else { return false }
        if day <= 28 { return true }
        switch month {
        case 2: return day == 29 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        case 4, 6, 9, 11: return day <= 30
        default: return day <= 31
        }
    }

    /// ``isCanonicalTimestamp(_:)`` through the general parser: the
    /// reference the fast check is tested against.
    package static func isCanonicalTimestampByParsing(_ literal: UnsafeRawBufferPointer) -> Bool {
        guard literal.count == 26, literal[20] == UInt8(ascii: "."), literal[24] == UInt8(ascii: "Z"),
            literal[11] == UInt8(ascii: "T"), literal[18] < UInt8(ascii: "6")
        else { return false }
        // The parser checks the rest: digits, separators, month, day, hour, minute.
        return Timestamp.parse(UnsafeRawBufferPointer(rebasing: literal[1..<25])) != nil
    }

    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
}

extension FieldType {
    /// Whether a value of this form is stored as its own text in a field of this type.
    package func storesVerbatim(_ form: VerbatimJSON) -> Bool {
        switch (kind, form) {
        case (.string, .plainString), (.int, .integer), (.double, .integer), (.double, .shortDecimal),
            (.bool, .boolean), (.timestamp, .canonicalTimestamp):
            return true
        default: return false
        }
    }

    /// The value verbatim text of `form` stands for in a field of this type
    /// (``storesVerbatim(_:)`` holds), for a ``Record`` built from it.
    func value(verbatim text: UnsafeRawBufferPointer, form: VerbatimJSON) -> FieldValue? {
        switch form {
        case .plainString:
            return .string(
                String(decoding: UnsafeRawBufferPointer(rebasing: text.dropFirst().dropLast()), as: UTF8.self)
            )
        case .boolean:
            return .bool(text.first == UInt8(ascii: "t"))
        case .canonicalTimestamp:
            return Timestamp.parse(UnsafeRawBufferPointer(rebasing: text.dropFirst().dropLast()))
                .map(FieldValue.timestamp(milliseconds:))
        case .integer, .shortDecimal:
            let string = String(decoding: text, as: UTF8.self)
            if kind == .int { return Int64(string).map(FieldValue.int) }
            return Double(string).map(FieldValue.double)
        }
    }
}

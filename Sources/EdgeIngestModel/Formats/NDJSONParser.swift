#if canImport(Glibc)
import Glibc
#endif

/// Parses one NDJSON line (a flat JSON object) into a ``ParsedLine``,
/// byte by byte: keys are located in the line (decoded into the
/// ParsedLine's key buffer only if they hold escapes), values are checked and located
/// (a ``JSONToken``) and converted only when asked (``value(of:in:)``).
/// Nested objects and arrays are skipped (bounded depth) and become
/// `.unsupported`, which validation refuses with the field's name.
package struct NDJSONParser {
    package init() {}

    static let maxDepth = 64

    private var p: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
    private var i = 0
    private var scratch: [UInt8] = []

    package mutating func parse(_ line: UnsafeRawBufferPointer, into out: inout ParsedLine) throws(LineRejection) {
        out.removeAll()
        out.line = line
        p = line
        i = 0
        try checkUTF8(line)
        skipSpace()
        guard i < p.count else {
            throw LineRejection(reason: "malformed_json", message: "empty line: expected a JSON object")
        }
        guard p[i] == UInt8(ascii: "{") else { throw .malformedJSON(i, "expected '{' to start a JSON object") }
        i += 1
        skipSpace()
        if i < p.count, p[i] == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                skipSpace()
                guard i < p.count, p[i] == UInt8(ascii: "\"") else { throw .malformedJSON(i, "expected a quoted key") }
                let quote = i
                let keyInLine = try skipPlainString()
                let keyStart: Int
                let keyCount: Int
                if keyInLine {
                    keyStart = quote + 1
                    keyCount = i - 1 - keyStart
                } else {
                    // Escapes: the key decoded (and its escapes checked) into the keys buffer.
                    i = quote
                    keyStart = out.keys.count
                    try readString(into: &out.keys)
                    keyCount = out.keys.count - keyStart
                }
                skipSpace()
                guard i < p.count, p[i] == UInt8(ascii: ":") else {
                    throw .malformedJSON(i, "expected ':' after a key")
                }
                i += 1
                skipSpace()
                let value = try scanValue()
                out.fields.append(
                    ParsedLine.Field(keyStart: keyStart, keyCount: keyCount, keyInLine: keyInLine, value: .json(value))
                )
                skipSpace()
                guard i < p.count else { throw .malformedJSON(i, "unexpected end of line: expected ',' or '}'") }
                if p[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                guard p[i] == UInt8(ascii: "}") else { throw .malformedJSON(i, "expected ',' or '}' after a value") }
                i += 1
                break
            }
        }
        skipSpace()
        guard i == p.count else { throw .malformedJSON(i, "unexpected text after the JSON object") }
    }

    private func checkUTF8(_ line: UnsafeRawBufferPointer) throws(LineRejection) {
        if let bad = firstInvalidUTF8(line) {
            throw LineRejection(reason: "invalid_utf8", message: "invalid UTF-8 at byte \(bad + 1)")
        }
    }

    /// Moves the scratch buffer out (emptied, capacity kept) so it can be
    /// filled while `self` is being mutated.
    private mutating func takeScratch() -> [UInt8] {
        var buffer: [UInt8] = []
        swap(&buffer, &scratch)
        buffer.removeAll(keepingCapacity: true)
        return buffer
    }

    private mutating func skipSpace() {
        while i < p.count, p[i] == 0x20 || p[i] == 0x09 || p[i] == 0x0D || p[i] == 0x0A { i += 1 }
    }

    /// Reads a JSON string at `i` (which is a quote), appending its bytes unescaped.
    private mutating func readString(into out: inout [UInt8]) throws(LineRejection) {
        i += 1
        var runStart = i
        while i < p.count {
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: p[runStart..<i]))
                i += 1
                return
            }
            if c < 0x20 { throw .malformedJSON(i, "control character inside a string (escape it)") }
            if c != UInt8(ascii: "\\") {
                i += 1
                continue
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: p[runStart..<i]))
            i += 1
            do throws(JSONEscape.Problem) {
                try JSONEscape.decode(p, at: &i, into: &out)
            } catch {
                switch error {
                case .truncated: throw .malformedJSON(i, "unterminated string")
                case .unknown: throw .malformedJSON(i - 2, "invalid escape in a string")
                case .truncatedHex: throw .malformedJSON(i, "truncated \\u escape")
                case .badHex: throw .malformedJSON(i, "invalid hex digit in \\u escape")
                case .unpairedHighSurrogate, .loneLowSurrogate:
                    throw .malformedJSON(i, "unpaired surrogate in \\u escape")
                }
            }
            runStart = i
        }
        throw .malformedJSON(i, "unterminated string")
    }

    /// Checks the JSON value at `i` and says where it is and what it is.
    private mutating func scanValue() throws(LineRejection) -> JSONToken {
        guard i < p.count else { throw .malformedJSON(i, "expected a value") }
        let start = i
        let form: JSONToken.Form
        var numberForm: VerbatimJSON?
        switch p[i] {
        case UInt8(ascii: "\""):
            if try skipPlainString() {
                form = .string
            } else {
                // Escapes: read again by the decoding reader, which checks them.
                i = start
                var buffer = takeScratch()
                defer { scratch = buffer }
                try readString(into: &buffer)
                form = .escapedString
            }
        case UInt8(ascii: "t"):
            try literal("true")
            form = .trueLiteral
        case UInt8(ascii: "f"):
            try literal("false")
            form = .falseLiteral
        case UInt8(ascii: "n"):
            try literal("null")
            form = .null
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            form = p[i] == UInt8(ascii: "{") ? .object : .array
            try skipNested()
        case UInt8(ascii: "-"), 0x30...0x39:
            numberForm = try scanNumber()
            form = .number
        default:
            throw .malformedJSON(i, "expected a value (string, number, true, false, null, object or array)")
        }
        return JSONToken(form: form, start: start, count: i - start, numberForm: numberForm)
    }

    /// The value of a token ``parse(_:into:)`` found in `line`, converted.
    static func value(of token: JSONToken, in line: UnsafeRawBufferPointer) throws(LineRejection) -> RawFieldValue {
        let text = UnsafeRawBufferPointer(rebasing: line[token.start..<token.start + token.count])
        switch token.form {
        case .string:
            return .string(
                String(decoding: UnsafeRawBufferPointer(rebasing: text.dropFirst().dropLast()), as: UTF8.self)
            )
        case .escapedString:
            var parser = NDJSONParser()
            parser.p = text
            var buffer: [UInt8] = []
            try parser.readString(into: &buffer)
            return .string(String(decoding: buffer, as: UTF8.self))
        case .number: return NDJSONParser.numberValue(text)
        case .trueLiteral: return .bool(true)
        case .falseLiteral: return .bool(false)
        case .null: return .null
        case .object: return .unsupported("an object")
        case .array: return .unsupported("an array")
        }
    }

    /// The high bit of each of eight bytes (the first in the lowest byte)
    /// that may be `"`, `\` or below 0x20; 0 when none is (the classic "has
    /// a zero byte" test on the word XORed with each; bytes ≥ 0x80 are
    /// masked out of the below-0x20 test by `~word`). A borrow can flag a
    /// byte above a true match, never below one: the lowest flagged byte is
    /// always one of the three.
    static func endOrEscapeBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func zeroBytes(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        return zeroBytes(word ^ (ones &* 0x22)) | zeroBytes(word ^ (ones &* 0x5C)) | (word &- ones &* 0x20) & ~word
            & highs
    }

    /// Moves past the string at `i` (a quote) and returns true when it has
    /// no escapes; at its first backslash, stops and returns false (the
    /// caller reads it again from the quote with ``readString(into:)``).
    @inline(__always)
    private mutating func skipPlainString() throws(LineRejection) -> Bool {
        i = NDJSONParser.firstEndOrEscape(in: p, from: i + 1, before: p.count)
        guard i < p.count else { throw .malformedJSON(i, "unterminated string") }
        switch p[i] {
        case UInt8(ascii: "\""):
            i += 1
            return true
        case UInt8(ascii: "\\"): return false
        default: throw .malformedJSON(i, "control character inside a string (escape it)")
        }
    }

    /// The offset of the first `"`, `\` or control character in `p` from
    /// `start` on, before `end`; `end` when there is none. Eight bytes at a
    /// time: the first of them among eight is the lowest flagged byte (x86
    /// and ARM load little-endian), found without a loop over the others.
    @inline(__always)
    static func firstEndOrEscape(in p: UnsafeRawBufferPointer, from start: Int, before end: Int) -> Int {
        var k = start
        while k + 8 <= end {
            let flagged = endOrEscapeBytes(p.loadUnaligned(fromByteOffset: k, as: UInt64.self).littleEndian)
            if flagged != 0 { return k + flagged.trailingZeroBitCount >> 3 }
            k += 8
        }
        while k < end, p[k] != UInt8(ascii: "\""), p[k] >= 0x20, p[k] != UInt8(ascii: "\\") { k += 1 }
        return k
    }

    private mutating func literal(_ word: StaticString) throws(LineRejection) {
        let n = word.utf8CodeUnitCount
        guard i + n <= p.count else { throw .malformedJSON(i, "expected a value") }
        for k in 0..<n where p[i + k] != word.utf8Start[k] { throw .malformedJSON(i, "expected a value") }
        i += n
    }

    /// ``scanNumber()`` on `line` at `i` (a `-` or a digit), for a caller
    /// without a parser: moves `i` past the number and returns the form
    /// the queue stores it in verbatim, if any; throws when it is not a
    /// valid JSON number.
    static func scanNumber(in line: UnsafeRawBufferPointer, at i: inout Int) throws(LineRejection) -> VerbatimJSON? {
        var parser = NDJSONParser()
        parser.p = line
        parser.i = i
        defer { i = parser.i }
        return try parser.scanNumber()
    }

    /// Checks the JSON number at `i`, moves past it and returns the form
    /// the queue stores it in verbatim, if any — ``VerbatimJSON``'s rule on
    /// the parts found in this one pass (a test compares it with
    /// ``VerbatimJSON/number(_:)`` on the text).
    private mutating func scanNumber() throws(LineRejection) -> VerbatimJSON? {
        let negative = p[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        guard i < p.count, p[i] >= 0x30, p[i] <= 0x39 else { throw .malformedJSON(i, "expected a digit") }
        if p[i] == 0x30, i + 1 < p.count, p[i + 1] >= 0x30, p[i + 1] <= 0x39 {
            throw .malformedJSON(i, "numbers cannot have leading zeros")
        }
        let integerStart = i
        while i < p.count, p[i] >= 0x30, p[i] <= 0x39 { i += 1 }
        let integerDigits = i - integerStart
        var fractionDigits = 0
        if i < p.count, p[i] == UInt8(ascii: ".") {
            i += 1
            guard i < p.count, p[i] >= 0x30, p[i] <= 0x39 else { throw .malformedJSON(i, "expected a digit after '.'") }
            let fractionStart = i
            while i < p.count, p[i] >= 0x30, p[i] <= 0x39 { i += 1 }
            fractionDigits = i - fractionStart
        }
        if i < p.count, p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E") {
            i += 1
            if i < p.count, p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") { i += 1 }
            guard i < p.count, p[i] >= 0x30, p[i] <= 0x39 else {
                throw .malformedJSON(i, "expected a digit in the exponent")
            }
            while i < p.count, p[i] >= 0x30, p[i] <= 0x39 { i += 1 }
            return nil
        }
        return VerbatimJSON.numberForm(
            negativeZero: negative && integerDigits == 1 && p[integerStart] == 0x30,
            integerDigits: integerDigits,
            fractionDigits: fractionDigits,
            endsInZero: p[i - 1] == 0x30
        )
    }

    /// The value of a valid JSON number: an integer if it is one within
    /// 64 bits, else a double.
    static func numberValue(_ text: UnsafeRawBufferPointer) -> RawFieldValue {
        let isInteger = !text.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
        if isInteger, text.count <= 20 {
            // Accumulate negatively so Int64.min fits; overflow falls back to a double.
            var v: Int64 = 0
            var overflow = false
            let negative = text[0] == UInt8(ascii: "-")
            for k in (negative ? 1 : 0)..<text.count where !overflow {
                let (times10, o1) = v.multipliedReportingOverflow(by: 10)
                let (next, o2) = times10.subtractingReportingOverflow(Int64(text[k] - 0x30))
                overflow = o1 || o2
                v = next
            }
            if !overflow {
                if negative { return .int(v) }
                if v != .min { return .int(-v) }
            }
        }
        if let exact = NDJSONParser.fastDouble(text) { return .double(exact) }
        // Longer integers and decimals: strtod on a NUL-terminated copy.
        if text.count > 400 {
            return .double(isInteger ? (text[0] == UInt8(ascii: "-") ? -.infinity : .infinity) : .nan)
        }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: text.count + 1) { buffer in
            for k in 0..<text.count { buffer[k] = CChar(bitPattern: text[k]) }
            buffer[text.count] = 0
            return .double(strtod(buffer.baseAddress!, nil))
        }
    }

    private static let powersOfTen: [Double] = (0...22).map { (0..<$0).reduce(1.0) { p, _ in p * 10 } }

    /// A JSON number (already checked by ``scanNumber()``) with at most 15
    /// significant digits and a decimal exponent within ±22, converted
    /// without strtod: its digits and the power of ten are exact doubles,
    /// so one multiplication or division rounds correctly (Clinger's fast
    /// path, the one strtod itself takes first). Nil for any other number.
    static func fastDouble(_ text: UnsafeRawBufferPointer) -> Double? {
        var k = 0
        let negative = text[0] == UInt8(ascii: "-")
        if negative { k = 1 }
        var mantissa: UInt64 = 0
        var significant = 0
        var fractionDigits = 0
        var inFraction = false
        while k < text.count {
            let c = text[k]
            if c == UInt8(ascii: ".") {
                inFraction = true
            } else if c >= 0x30, c <= 0x39 {
                if mantissa != 0 || c != 0x30 { significant += 1 }
                guard significant <= 15 else { return nil }
                mantissa = mantissa &* 10 &+ UInt64(c - 0x30)
                if inFraction { fractionDigits += 1 }
            } else {
                break  // 'e' or 'E'
            }
            k += 1
        }
        var exponent = 0
        if k < text.count {
            k += 1
            var exponentNegative = false
            if text[k] == UInt8(ascii: "-") || text[k] == UInt8(ascii: "+") {
                exponentNegative = text[k] == UInt8(ascii: "-")
                k += 1
            }
            while k < text.count {
                exponent = exponent * 10 + Int(text[k] - 0x30)
                guard exponent <= 400 else { return nil }
                k += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        let scale = exponent - fractionDigits
        guard scale >= -22, scale <= 22 else { return nil }
        var value = Double(mantissa)
        value = scale < 0 ? value / powersOfTen[-scale] : value * powersOfTen[scale]
        return negative ? -value : value
    }

    /// Skips a nested object or array, iteratively, up to ``maxDepth``.
    private mutating func skipNested() throws(LineRejection) {
        var depth = 0
        while i < p.count {
            let c = p[i]
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                if depth > NDJSONParser.maxDepth {
                    throw .malformedJSON(i, "nested deeper than \(NDJSONParser.maxDepth) levels")
                }
                i += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                i += 1
                if depth == 0 { return }
            case UInt8(ascii: "\""):
                var buffer = takeScratch()
                try readString(into: &buffer)
                scratch = buffer
            default:
                i += 1
            }
        }
        throw .malformedJSON(i, "unterminated object or array")
    }
}

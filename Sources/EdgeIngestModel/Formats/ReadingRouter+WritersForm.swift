#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The writer's-form path: a line in the shape of the record the queue
/// stores — `{"_id":"<24 hex digits>",` (or no `_id`: one is generated),
/// the default type's fields in declaration order with the writer's
/// `,"name":` between values (no spaces), plain strings, numbers, true or
/// false — is checked in one pass over its bytes and appended as read,
/// without taking it apart into a ``ParsedLine`` first (issue 43: parsing,
/// then comparing the parsed fields with the type, was over half of the
/// ingest's instructions). A value the writer writes otherwise (`59.10`,
/// a timestamp with an offset, an id in capitals) is written again in
/// place, exactly as the as-read path (``appendAsRead(_:type:requireID:rewrites:into:)``) does.
///
/// It takes only lines the general path (``NDJSONParser``, then
/// ``route(_:into:)`` and its as-read step) stores the same way; anything
/// else — an escape, a space, another order, a `_type`, a null, a value
/// the field does not take, invalid UTF-8, bad JSON — returns nil with
/// nothing appended, and the caller parses the line and routes it as
/// usual, which stores or refuses it with its reason.
/// `WritersFormPathTests` and the NDJSON fuzz target compare the paths.
extension ReadingRouter {
    /// Appends `line` to `batch` when it is its default type's record in
    /// the writer's shape; returns whether it carried its own `_id`. Nil,
    /// with nothing appended, for any other line.
    package mutating func appendIfWritersForm(_ line: UnsafeRawBufferPointer, into batch: inout EncodedBatch) -> Bool? {
        guard storesAsRead, let type = defaultType else { return nil }
        let count = line.count
        guard count >= 2, line[0] == UInt8(ascii: "{"), line[count - 1] == UInt8(ascii: "}") else { return nil }
        // Taken out and put back (emptied, capacity kept): no copy, no allocation per line.
        var rewrites: [AsReadRewrite] = []
        swap(&rewrites, &writersFormRewrites)
        defer {
            if !rewrites.isEmpty { rewrites.removeAll(keepingCapacity: true) }
            swap(&rewrites, &writersFormRewrites)
        }
        let close = count - 1  // where the closing brace is
        var i = 1
        var ownID: ObjectId?
        if count >= 34, memcmp(line.baseAddress!, WritersForm.idKey.utf8Start, 7) == 0 {
            guard line[7] == UInt8(ascii: "\""), line[32] == UInt8(ascii: "\"") else { return nil }
            let hex = UnsafeRawBufferPointer(rebasing: line[8..<32])
            guard let id = ObjectId(hexUTF8: hex), !id.isZero else { return nil }
            if !WritersForm.isLowercaseHex(hex) {
                rewrites.append(AsReadRewrite(start: 7, end: 33, replacement: .value(.objectId(id))))
            }
            ownID = id
            i = 33
        } else if requireID {
            return nil
        }
        let storage = type.storage
        let matched = storage.encodedKeyBytes.withUnsafeBytes { keys -> Bool in
            let declared = storage.fieldTypes.count
            var field = 0  // the next declared field
            var values = 0
            while i < close {
                // The key: `,"name":`, or `"name":` right after the opening brace.
                let first = i == 1
                while true {
                    guard field < declared else { return false }
                    let start = field == 0 ? 0 : storage.encodedKeyEnds[field - 1]
                    let skip = first ? 1 : 0  // the key's comma, when the brace stands for it
                    let length = storage.encodedKeyEnds[field] - start - skip
                    if i + length < close,
                        memcmp(line.baseAddress! + i, keys.baseAddress! + start + skip, length) == 0
                    {
                        i += length
                        break
                    }
                    guard storage.omittable[field] else { return false }
                    field += 1
                }
                // The value: checked as the parser checks it, and stored as
                // read when the writer writes it so.
                let start = i
                let form: JSONToken.Form
                var verbatim: VerbatimJSON?
                switch line[i] {
                case UInt8(ascii: "\""):
                    guard WritersForm.skipPlainString(line, at: &i, before: close) else { return false }
                    form = .string
                    if storage.fieldTypes[field].kind != .timestamp {
                        verbatim = .plainString
                    } else if VerbatimJSON.isCanonicalTimestamp(UnsafeRawBufferPointer(rebasing: line[start..<i])) {
                        verbatim = .canonicalTimestamp
                    }
                case UInt8(ascii: "-"), 0x30...0x39:
                    do {
                        verbatim = try NDJSONParser.scanNumber(in: line, at: &i)
                    } catch {
                        return false
                    }
                    form = .number
                case UInt8(ascii: "t"):
                    guard WritersForm.literal("true", in: line, at: &i, before: close) else { return false }
                    form = .trueLiteral
                    verbatim = .boolean
                case UInt8(ascii: "f"):
                    guard WritersForm.literal("false", in: line, at: &i, before: close) else { return false }
                    form = .falseLiteral
                    verbatim = .boolean
                default:
                    return false  // null, an object or an array: the general path's
                }
                if verbatim.map({ !storage.fieldTypes[field].storesVerbatim($0) }) ?? true {
                    // Written again as the writer writes it, as the as-read
                    // path does; a value the field does not take is the
                    // general path's to refuse.
                    let token = JSONToken(form: form, start: start, count: i - start, numberForm: nil)
                    guard let raw = try? NDJSONParser.value(of: token, in: line),
                        let value = try? type.convert(raw, toFieldAt: field)
                    else { return false }
                    rewrites.append(AsReadRewrite(start: start, end: i, replacement: .value(value)))
                }
                field += 1
                values += 1
            }
            while field < declared {
                guard storage.omittable[field] else { return false }
                field += 1
            }
            // `{}` is the general path's (a generated `_id` needs a field after it).
            return i == close && (values > 0 || ownID != nil)
        }
        guard matched else { return nil }
        if let ownID {
            batch.appendAsRead(type: type, id: ownID, line: line, rewrites: rewrites)
            return true
        }
        let id = ObjectId.generate()
        rewrites.insert(AsReadRewrite(start: 0, end: 1, replacement: .generatedID(id)), at: 0)
        batch.appendAsRead(type: type, id: id, line: line, rewrites: rewrites)
        return false
    }
}

private enum WritersForm {
    /// What a line with its own `_id` starts with, up to the id's string.
    static let idKey: StaticString = #"{"_id":"#

    /// No `A`–`F`: the writer writes ids in lowercase (the digits themselves are checked when parsed).
    static func isLowercaseHex(_ hex: UnsafeRawBufferPointer) -> Bool {
        for c in hex where c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F") { return false }
        return true
    }

    /// Moves past the string at `i` (a quote) when it closes before
    /// `end` with no escape or control character and is valid UTF-8;
    /// false (`i` unspecified) otherwise.
    @inline(__always)
    static func skipPlainString(_ line: UnsafeRawBufferPointer, at i: inout Int, before end: Int) -> Bool {
        let contentStart = i + 1
        let k = NDJSONParser.firstEndOrEscape(in: line, from: contentStart, before: end)
        guard k < end, line[k] == UInt8(ascii: "\"") else { return false }
        guard firstInvalidUTF8(UnsafeRawBufferPointer(rebasing: line[contentStart..<k])) == nil else { return false }
        i = k + 1
        return true
    }

    /// Moves past `word` at `i` when it is there and ends before `end`.
    static func literal(_ word: StaticString, in line: UnsafeRawBufferPointer, at i: inout Int, before end: Int) -> Bool
    {
        let n = word.utf8CodeUnitCount
        guard i + n <= end, memcmp(line.baseAddress! + i, word.utf8Start, n) == 0 else { return false }
        i += n
        return true
    }
}

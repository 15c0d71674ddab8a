#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The as-read path: most sensor lines are already the record the queue
/// stores, byte for byte — `{"_id":"<24 lowercase hex digits>","a":1,"b":"x"}`
/// with the type's fields in declaration order, no spaces, every value in
/// a form stored verbatim (``VerbatimJSON``). Such a line is validated
/// field by field like any other, but appended as it was read (one copy)
/// instead of being taken apart into a ``RecordBuilder`` and written again
/// (issue 22: building and re-encoding were over 40 % of the realistic
/// ingest's CPU).
///
/// A line in that shape whose values are not all in the writer's own form
/// (`55.0` for a double, which the writer writes `55`; a timestamp with an
/// offset; an `_id` in capitals; no `_id`) is still copied, with just those
/// values converted and written again in place.
///
/// Every check compares the line with what ``Record``'s writer would
/// write, not a guess at it: the bytes between two values must be the
/// writer's own `,"name":` for the next declared field. Anything else —
/// another order, spaces, `_type`, a default to fill in, a null, a value
/// that does not convert — returns nil before anything is appended, and the
/// general path takes the line (with its errors). Tests and the NDJSON fuzz
/// target compare both paths.
extension ReadingRouter {
    /// A part of an as-read line written otherwise: bytes `start..<end` of
    /// the line replaced by a converted value, or (an `_id` to generate) the
    /// line's opening `{` by `{"_id":"<id>",`.
    struct AsReadRewrite {
        enum Replacement {
            case value(FieldValue)
            case generatedID(ObjectId)
        }
        var start: Int
        var end: Int
        var replacement: Replacement
    }

    /// Appends `line` as read (with `rewrites`, emptied first, for values
    /// in another form) when it is the record it stands for; nil (nothing
    /// appended) when it is not. Else whether it carried its own `_id`.
    static func appendAsRead(
        _ line: ParsedLine,
        type: RecordType,
        requireID: Bool,
        rewrites: inout [AsReadRewrite],
        into batch: inout EncodedBatch
    ) -> Bool? {
        let text = line.line
        let fieldCount = line.fields.count
        guard fieldCount > 0, text.count > 2, text[text.count - 1] == UInt8(ascii: "}") else { return nil }
        rewrites.removeAll(keepingCapacity: true)
        let id: ObjectId
        var ownID = false
        var next = 0  // the next line field
        var end = 0  // where the bytes not yet compared start
        if case .json(let token) = line.fields[0].value, token.start == 7, token.count == 26,
            token.form == .string, memcmp(text.baseAddress!, AsRead.idKey.utf8Start, 7) == 0
        {
            let hex = UnsafeRawBufferPointer(rebasing: text[8..<32])
            guard let own = ObjectId(hexUTF8: hex), !own.isZero else { return nil }
            if !AsRead.isLowercaseHex(hex) {
                rewrites.append(AsReadRewrite(start: 7, end: 33, replacement: .value(.objectId(own))))
            }
            id = own
            ownID = true
            next = 1
            end = 33
        } else {
            guard !requireID else { return nil }
            id = ObjectId.generate()
            rewrites.append(AsReadRewrite(start: 0, end: 1, replacement: .generatedID(id)))
        }
        let storage = type.storage
        let declared = storage.fieldTypes.count
        let matched = storage.encodedKeyBytes.withUnsafeBytes { keys -> Bool in
            var field = 0  // the next declared field
            while next < fieldCount {
                guard case .json(let token) = line.fields[next].value, token.start > end else { return false }
                // What lies between the last value and this one: `,"name":`,
                // or `{"name":` for a line's first field.
                let between = UnsafeRawBufferPointer(rebasing: text[end..<token.start])
                while true {
                    guard field < declared else { return false }
                    if AsRead.matches(between, key: field, in: keys, ends: storage.encodedKeyEnds, first: end == 0) {
                        break
                    }
                    guard storage.omittable[field] else { return false }
                    field += 1
                }
                if !AsRead.isStoredAsRead(token, in: text, as: storage.fieldTypes[field]) {
                    // Written again as the writer writes it; a null or a value
                    // the field does not take is the general path's to refuse.
                    guard let raw = try? NDJSONParser.value(of: token, in: text), raw != .null,
                        let value = try? type.convert(raw, toFieldAt: field)
                    else { return false }
                    rewrites.append(
                        AsReadRewrite(start: token.start, end: token.start + token.count, replacement: .value(value))
                    )
                }
                end = token.start + token.count
                field += 1
                next += 1
            }
            while field < declared {
                guard storage.omittable[field] else { return false }
                field += 1
            }
            return end == text.count - 1
        }
        guard matched else { return nil }
        batch.appendAsRead(type: type, id: id, line: text, rewrites: rewrites)
        return ownID
    }
}

private enum AsRead {
    /// What a line with its own `_id` starts with, up to the id's string.
    static let idKey: StaticString = #"{"_id":"#

    /// Whether `between` is field `key`'s `,"name":` (with `{` for a comma when `first`).
    @inline(__always)
    static func matches(
        _ between: UnsafeRawBufferPointer,
        key: Int,
        in keys: UnsafeRawBufferPointer,
        ends: [Int],
        first: Bool
    ) -> Bool {
        let start = key == 0 ? 0 : ends[key - 1]
        let count = ends[key] - start
        guard between.count == count else { return false }
        if first {
            return between[0] == UInt8(ascii: "{")
                && memcmp(between.baseAddress! + 1, keys.baseAddress! + start + 1, count - 1) == 0
        }
        return memcmp(between.baseAddress!, keys.baseAddress! + start, count) == 0
    }

    /// Whether the writer writes the value exactly as the line has it.
    @inline(__always)
    static func isStoredAsRead(_ token: JSONToken, in text: UnsafeRawBufferPointer, as type: FieldType) -> Bool {
        guard let form = token.verbatimForm else { return false }
        // A timestamp's string is stored as read only in the writer's own form.
        guard type.kind == .timestamp else { return type.storesVerbatim(form) }
        return form == .plainString
            && VerbatimJSON.isCanonicalTimestamp(
                UnsafeRawBufferPointer(rebasing: text[token.start..<token.start + token.count])
            )
    }

    /// No `A`–`F`: the writer writes ids in lowercase (the digits themselves are checked when parsed).
    static func isLowercaseHex(_ hex: UnsafeRawBufferPointer) -> Bool {
        for c in hex where c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F") { return false }
        return true
    }
}

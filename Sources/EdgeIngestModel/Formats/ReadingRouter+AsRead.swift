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
/// Every check compares the line with what ``Record``'s writer would
/// write, not a guess at it: the bytes between two values must be the
/// writer's own `,"name":` for the next declared field. Anything else —
/// another order, spaces, `_type`, escapes, an uppercase or all-zero
/// `_id`, a default to fill in, a value the writer would write otherwise —
/// returns nil before anything is appended, and the general path takes
/// the line (with its errors). Tests and the NDJSON fuzz target compare
/// both paths.
extension ReadingRouter {
    /// Appends `line` as read when it is the record it stands for; nil
    /// (nothing appended) when it is not. Else whether it carried its own
    /// `_id` (false: one was generated, and the line had none).
    static func appendAsRead(
        _ line: ParsedLine,
        type: RecordType,
        requireID: Bool,
        into batch: inout EncodedBatch
    ) -> Bool? {
        let text = line.line
        let fieldCount = line.fields.count
        guard fieldCount > 0, text.count > 2, text[text.count - 1] == UInt8(ascii: "}") else { return nil }
        var ownID: ObjectId?
        var next = 0  // the next line field
        var end = 0  // where the bytes not yet compared start
        if case .json(let token) = line.fields[0].value, token.start == 7, token.count == 26,
            token.form == .string, memcmp(text.baseAddress!, AsRead.idKey.utf8Start, 7) == 0
        {
            let hex = UnsafeRawBufferPointer(rebasing: text[8..<32])
            guard AsRead.isLowercaseHex(hex), let id = ObjectId(hexUTF8: hex), !id.isZero else { return nil }
            ownID = id
            next = 1
            end = 33
        } else if requireID {
            return nil
        }
        let storage = type.storage
        let declared = storage.fieldTypes.count
        let matched = storage.encodedKeyBytes.withUnsafeBytes { keys -> Bool in
            var field = 0  // the next declared field
            while next < fieldCount {
                guard case .json(let token) = line.fields[next].value, let form = token.verbatimForm,
                    token.start > end
                else { return false }
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
                let fieldType = storage.fieldTypes[field]
                // A timestamp's string is stored as read only in the writer's own form.
                let storedAsRead =
                    fieldType.kind == .timestamp
                    ? form == .plainString
                        && VerbatimJSON.isCanonicalTimestamp(
                            UnsafeRawBufferPointer(rebasing: text[token.start..<token.start + token.count])
                        )
                    : fieldType.storesVerbatim(form)
                guard storedAsRead else { return false }
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
        batch.appendAsRead(type: type, ownID: ownID, line: text)
        return ownID != nil
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

    /// No `A`–`F`: the writer writes ids in lowercase (the digits themselves are checked when parsed).
    static func isLowercaseHex(_ hex: UnsafeRawBufferPointer) -> Bool {
        for c in hex where c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F") { return false }
        return true
    }
}

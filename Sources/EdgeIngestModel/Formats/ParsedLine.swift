/// The fields of one parsed line: key bytes in a shared scratch buffer and
/// values — a CSV cell's text, or where a JSON value sits in the line.
/// Reused from line to line, so parsing allocates nothing per line.
///
/// JSON values are converted only when asked (``value(_:)``); values whose
/// text the queue stores as it is are never converted (``verbatim(_:)``).
package struct ParsedLine {
    package init() {}

    /// A trivial value (no reference inside): emptying the list per line costs nothing.
    package struct Field {
        /// Where the key's bytes are: in ``ParsedLine/line`` (a JSON key
        /// without escapes) or in ``ParsedLine/keys``.
        var keyStart: Int
        var keyCount: Int
        var keyInLine: Bool
        var value: Value
    }

    package enum Value {
        /// A value a parser already converted: ``ParsedLine/cells``[index] (a CSV cell).
        case cell(Int)
        /// A JSON value in ``ParsedLine/line``.
        case json(JSONToken)
    }

    /// Key bytes not found as such in the line (decoded escapes, CSV header names).
    var keys: [UInt8] = []
    var cells: [RawFieldValue] = []
    package var fields: [Field] = []
    /// The bytes the JSON values are in: the caller's line, valid only
    /// while the caller holds it (use the fields before the next line).
    var line = UnsafeRawBufferPointer(start: nil, count: 0)

    package mutating func removeAll() {
        keys.removeAll(keepingCapacity: true)
        if !cells.isEmpty { cells.removeAll(keepingCapacity: true) }
        fields.removeAll(keepingCapacity: true)
        line = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    package func withKey<R>(_ field: Field, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if field.keyInLine {
            return try body(UnsafeRawBufferPointer(rebasing: line[field.keyStart..<field.keyStart + field.keyCount]))
        }
        return try keys.withUnsafeBytes {
            try body(UnsafeRawBufferPointer(rebasing: $0[field.keyStart..<field.keyStart + field.keyCount]))
        }
    }

    func keyBytes(_ field: Field) -> [UInt8] { withKey(field) { Array($0) } }

    package func keyString(_ field: Field) -> String { withKey(field) { String(decoding: $0, as: UTF8.self) } }

    /// The field's value, converted.
    package func value(_ field: Field) throws(LineRejection) -> RawFieldValue {
        switch field.value {
        case .cell(let index): return cells[index]
        case .json(let token): return try NDJSONParser.value(of: token, in: line)
        }
    }

    /// What kind of JSON value the field holds; nil for a CSV cell.
    package func jsonForm(_ field: Field) -> JSONToken.Form? {
        guard case .json(let token) = field.value else { return nil }
        return token.form
    }

    /// The field's JSON text (quotes included); nil for a CSV cell.
    package func jsonText(_ field: Field) -> UnsafeRawBufferPointer? {
        guard case .json(let token) = field.value else { return nil }
        return UnsafeRawBufferPointer(rebasing: line[token.start..<token.start + token.count])
    }

    /// The field's JSON text and its form, when the queue may store that
    /// text as it is (see ``VerbatimJSON``).
    package func verbatim(_ field: Field) -> (text: UnsafeRawBufferPointer, form: VerbatimJSON)? {
        guard case .json(let token) = field.value, let form = token.verbatimForm else { return nil }
        return (UnsafeRawBufferPointer(rebasing: line[token.start..<token.start + token.count]), form)
    }
}

/// Where one JSON value is in a line and what kind of text it is; the
/// NDJSON reader checks the syntax and converts only when asked.
package struct JSONToken {
    package enum Form {
        /// A string literal without escapes.
        case string
        case escapedString
        case number
        case trueLiteral
        case falseLiteral
        case null
        case object
        case array
    }

    var form: Form
    /// Byte offset in the line and length of the value's text (quotes included).
    var start: Int
    var count: Int
    /// For numbers: the form the queue stores verbatim, if any.
    var numberForm: VerbatimJSON?

    var verbatimForm: VerbatimJSON? {
        switch form {
        case .string: return .plainString
        case .number: return numberForm
        case .trueLiteral, .falseLiteral: return .boolean
        default: return nil
        }
    }
}

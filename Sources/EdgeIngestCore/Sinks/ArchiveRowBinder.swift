/// Binds one queued JSON line as the SQLite archive's insert parameters:
/// `_id` as ?1, declared field k as ?(k + 2), each as `json_extract` would
/// give it (a string's text, an integer, a real, a boolean as 0/1, null or
/// missing as NULL; the owner field missing or null as ''), from our own
/// parse of the line: SQLite does not parse the JSON again per column.
struct ArchiveRowBinder {
    let type: RecordType
    /// The owner field's index in `type.fields`, when the table is keyed on it.
    let ownerIndex: Int?
    private var parser = NDJSONParser()
    private var parsed = ParsedLine()

    init(type: RecordType, ownerField: String?) {
        self.type = type
        ownerIndex = ownerField.flatMap { type.fieldIndex(named: $0) }
    }

    /// Binds `line` to `insert`; false when the line is not a JSON object
    /// with a string `_id` (nothing is bound then). `line` must outlive
    /// the insert's step: strings without escapes are bound in place.
    mutating func bind(_ line: UnsafeRawBufferPointer, to insert: SQLiteStatement) -> Bool {
        let bound = bindFields(line, to: insert)
        if !bound { insert.reset() }  // no half-bound row left for the next line
        return bound
    }

    private mutating func bindFields(_ line: UnsafeRawBufferPointer, to insert: SQLiteStatement) -> Bool {
        do throws(LineRejection) {
            try parser.parse(line, into: &parsed)
        } catch {
            return false
        }
        var hasID = false
        var ownerBound = false
        var hint = 0
        for field in parsed.fields {
            let parameter: Int32
            if let index = parsed.withKey(field, { type.fieldIndex(utf8: $0, hint: hint) }) {
                hint = index + 1
                parameter = Int32(index + 2)
                if index == ownerIndex {
                    ownerBound = bindOwner(field, to: insert, parameter)
                } else {
                    bind(field, to: insert, parameter)
                }
            } else if parsed.withKey(field, { Self.isID($0) }) {
                guard let form = parsed.jsonForm(field), form == .string || form == .escapedString else { return false }
                bind(field, to: insert, 1)
                hasID = true
            }
            // Other keys (none in a validated record) are not columns: ignored, as json_extract ignores them.
        }
        guard hasID else { return false }
        if let ownerIndex, !ownerBound { insert.bind(Int32(ownerIndex + 2), "") }
        return true
    }

    private static func isID(_ key: UnsafeRawBufferPointer) -> Bool {
        key.count == 3 && key[0] == UInt8(ascii: "_") && key[1] == UInt8(ascii: "i") && key[2] == UInt8(ascii: "d")
    }

    /// The owner field: bound unless null (then '' is bound at the end).
    private func bindOwner(_ field: ParsedLine.Field, to insert: SQLiteStatement, _ parameter: Int32) -> Bool {
        if parsed.jsonForm(field) == .null { return false }
        bind(field, to: insert, parameter)
        return true
    }

    private func bind(_ field: ParsedLine.Field, to insert: SQLiteStatement, _ parameter: Int32) {
        if let (text, form) = parsed.verbatim(field), form == .plainString {
            // A string without escapes: its bytes between the quotes, in place.
            insert.bind(parameter, text: UnsafeRawBufferPointer(rebasing: text[1..<text.count - 1]))
            return
        }
        switch try? parsed.value(field) {
        case .string(let text)?: insert.bind(parameter, text)
        case .int(let value)?: insert.bind(parameter, value)
        case .double(let value)?: insert.bind(parameter, value)
        case .bool(let value)?: insert.bind(parameter, Int64(value ? 1 : 0))
        case .unsupported?:
            // An object or array (no field type holds one): its JSON text, as json_extract gives it.
            if let text = parsed.jsonText(field) { insert.bind(parameter, String(decoding: text, as: UTF8.self)) }
        default: break  // null: left NULL
        }
    }
}

extension RecordType {
    /// Checks a reading's fields against this type and converts them to a
    /// ``Record``.
    ///
    /// - `_id` may be an ``ObjectId`` or its 24-character text; when absent
    ///   (or zero) a new id is generated.
    /// - `_type` is accepted and ignored (inputs use it to pick the type).
    /// - A field this type does not declare, a field given twice, a
    ///   required field absent or null, or a value that does not convert to
    ///   the field's type is refused.
    ///
    /// - Parameter pairs: field name and value, in input order.
    /// - Throws: ``EdgeIngestError`` with code ``EdgeIngestError/Code/invalidRecord``
    ///   and a ``ValidationFailure`` naming the field, for example
    ///   `field 'windSpeedInMph' must be an integer, got "fast"`.
    public func validate<S: Sequence>(pairs: S) throws -> Record where S.Element == (String, RawFieldValue) {
        var builder = RecordBuilder(type: self)
        for (key, raw) in pairs {
            if let i = fieldIndex[key] {
                try builder.set(field: i, raw)
            } else if key == RecordType.primaryKey {
                try builder.setID(raw)
            } else if key != RecordType.typeField {
                throw RecordBuilder.unknownField(key, in: self)
            }
        }
        return try builder.finish()
    }

    /// Validates a dictionary of raw values; see ``validate(pairs:)``.
    ///
    /// ```swift
    /// let record = try sensor.validate(["deviceId": "WX1278UIT", "windSpeedInMph": 2, …])
    /// ```
    public func validate(_ values: [String: RawFieldValue]) throws -> Record {
        try validate(pairs: values.lazy.map { ($0.key, $0.value) })
    }

    /// Validates a Realm-style `[String: Any]` dictionary; each value is
    /// converted with ``RawFieldValue/init(any:)``.
    public func validate(anyValues values: [String: Any]) throws -> Record {
        try validate(pairs: values.lazy.map { ($0.key, RawFieldValue(any: $0.value)) })
    }

    func primaryKey(from raw: RawFieldValue) throws -> ObjectId? {
        switch raw {
        case .null: return nil
        case .objectId(let id): return id
        case .string(let text), .text(let text):
            guard let id = try? ObjectId(string: text) else {
                throw EdgeIngestError.invalidRecord(
                    .invalidObjectId,
                    field: RecordType.primaryKey,
                    "field '_id' must be a 24-character hexadecimal ObjectId, got \(quoted(text))"
                )
            }
            return id
        default:
            throw EdgeIngestError.invalidRecord(
                .invalidObjectId,
                field: RecordType.primaryKey,
                "field '_id' must be a 24-character hexadecimal ObjectId, got \(raw.errorDescription)"
            )
        }
    }

    /// Converts a raw value to the type of field `index`. Reads the field
    /// in place: copying a ``Field`` per value costs retains on the hot path.
    func convert(_ raw: RawFieldValue, toFieldAt index: Int) throws -> FieldValue {
        func mismatch(_ reason: ValidationFailure.Reason = .typeMismatch, _ expected: String? = nil) -> EdgeIngestError
        {
            let field = storage.fields[index]
            return EdgeIngestError.invalidRecord(
                reason,
                field: field.name,
                "field '\(field.name)' must be \(expected ?? field.type.expectation), got \(raw.errorDescription)"
            )
        }
        switch storage.fieldTypes[index].kind {
        case .string:
            switch raw {
            case .string(let s), .text(let s): return .string(s)
            default: throw mismatch()
            }
        case .int:
            switch raw {
            case .int(let i): return .int(i)
            case .double(let d):
                guard d.isFinite, d.rounded(.towardZero) == d else { throw mismatch() }
                guard let i = Int64(exactly: d) else {
                    throw mismatch(.outOfRange, "an integer within 64 bits (±9223372036854775807)")
                }
                return .int(i)
            case .text(let s):
                if let i = Int64(s) { return .int(i) }
                if isPlainInteger(s) { throw mismatch(.outOfRange, "an integer within 64 bits (±9223372036854775807)") }
                throw mismatch()
            default: throw mismatch()
            }
        case .double:
            switch raw {
            case .int(let i): return .double(Double(i))
            case .double(let d):
                guard d.isFinite else { throw mismatch(.outOfRange, "a finite number") }
                return .double(d)
            case .text(let s):
                guard let d = Double(s) else { throw mismatch() }
                guard d.isFinite else { throw mismatch(.outOfRange, "a finite number") }
                return .double(d)
            default: throw mismatch()
            }
        case .bool:
            switch raw {
            case .bool(let b): return .bool(b)
            case .text(let s):
                switch s.lowercased() {
                case "true": return .bool(true)
                case "false": return .bool(false)
                default: throw mismatch()
                }
            default: throw mismatch()
            }
        case .timestamp:
            switch raw {
            case .timestamp(let ms): return .timestamp(milliseconds: ms)
            case .int(let ms): return .timestamp(milliseconds: ms)
            case .double(let d):
                guard d.isFinite, d.rounded(.towardZero) == d, let ms = Int64(exactly: d) else {
                    throw mismatch(.invalidTimestamp)
                }
                return .timestamp(milliseconds: ms)
            case .string(let s), .text(let s):
                if let ms = Timestamp.parseISO8601(s) { return .timestamp(milliseconds: ms) }
                if case .text = raw, let ms = Int64(s) { return .timestamp(milliseconds: ms) }
                throw mismatch(.invalidTimestamp)
            default: throw mismatch(.invalidTimestamp)
            }
        case .objectId:
            switch raw {
            case .objectId(let id): return .objectId(id)
            case .string(let s), .text(let s):
                guard let id = try? ObjectId(string: s) else { throw mismatch(.invalidObjectId) }
                return .objectId(id)
            default: throw mismatch(.invalidObjectId)
            }
        }
    }
}

private func isPlainInteger(_ s: String) -> Bool {
    var digits = Substring(s)
    if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
    return !digits.isEmpty && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber)
}

extension RawFieldValue {
    /// How an error message shows this value: strings quoted and truncated.
    var errorDescription: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return d.description
        case .string(let s), .text(let s): return quoted(s)
        case .objectId(let id): return quoted(id.hexString)
        case .timestamp(let ms): return "\(ms) ms"
        case .unsupported(let what): return what
        }
    }
}

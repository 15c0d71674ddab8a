#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds one ``Record`` field by field, for parsers that find fields by
/// position or by raw bytes and should not allocate a `String` per key.
///
/// ```swift
/// var builder = RecordBuilder(type: sensor)
/// if let i = sensor.fieldIndex(utf8: keyBytes) { try builder.set(field: i, .int(2)) }
/// let record = try builder.finish()
/// ```
///
/// Errors are the same as ``RecordType/validate(pairs:)``'s.
public struct RecordBuilder: Sendable {
    /// The type being built.
    public let type: RecordType
    private var values: [FieldValue?]
    private var seen: [Bool]
    private var id: ObjectId?
    private var idSeen = false
    /// Text of the fields set by ``setVerbatim(field:_:form:)``, one after
    /// the other, and where each field's is: count 0 for fields set otherwise.
    private var verbatim = VerbatimFields()

    public init(type: RecordType) {
        self.type = type
        values = [FieldValue?](repeating: nil, count: type.fields.count)
        seen = [Bool](repeating: false, count: type.fields.count)
        verbatim.spans = [VerbatimFields.Span](repeating: VerbatimFields.Span(), count: type.fields.count)
    }

    /// Sets field `index` (of ``RecordType/fields``) from a raw value.
    public mutating func set(field index: Int, _ raw: RawFieldValue) throws {
        try markSeen(index)
        if case .null = raw { return }
        values[index] = try type.convert(raw, toFieldAt: index)
    }

    /// Records that field `index` was given; refuses a second time.
    private mutating func markSeen(_ index: Int) throws {
        if seen[index] {
            let name = type.storage.fields[index].name
            throw EdgeIngestError.invalidRecord(.duplicateField, field: name, "field '\(name)' appears more than once")
        }
        seen[index] = true
    }

    /// Sets field `index` to JSON text of `form` to be stored as it is,
    /// when the field's type stores that form verbatim (see ``VerbatimJSON``);
    /// returns false, setting nothing, when it does not (convert the value
    /// and call ``set(field:_:)`` instead). The text is copied.
    ///
    /// The caller guarantees `json` is valid JSON of that form: this is
    /// the NDJSON reader's way to skip converting and re-encoding values
    /// whose text is already what the queue stores.
    package mutating func setVerbatim(
        field index: Int,
        _ json: UnsafeRawBufferPointer,
        form: VerbatimJSON
    ) throws -> Bool {
        guard type.storage.fieldTypes[index].storesVerbatim(form) else { return false }
        try markSeen(index)
        let start = verbatim.bytes.count
        verbatim.bytes.append(contentsOf: type.storage.encodedKeys[index])
        verbatim.bytes.append(contentsOf: json)
        verbatim.spans[index] = VerbatimFields.Span(
            start: start,
            count: verbatim.bytes.count - start,
            valueStart: verbatim.bytes.count - json.count,
            form: form
        )
        return true
    }

    /// Sets `_id` from a raw value (an ObjectId or its text; null generates one).
    public mutating func setID(_ raw: RawFieldValue) throws {
        guard !idSeen else {
            throw EdgeIngestError.invalidRecord(
                .duplicateField,
                field: RecordType.primaryKey,
                "field '_id' appears more than once"
            )
        }
        idSeen = true
        id = try type.primaryKey(from: raw)
    }

    /// Whether `_id` was set to a usable id (not null, not all zeros):
    /// ``finish()`` generates one otherwise.
    public var hasID: Bool { id.map { !$0.isZero } ?? false }

    /// Applies defaults, checks required fields, generates `_id` if needed.
    public func finish() throws -> Record {
        var values = values
        for i in values.indices where values[i] == nil {
            let span = verbatim.spans[i]
            let converted =
                span.count == 0
                ? nil
                : verbatim.bytes.withUnsafeBytes { bytes in
                    type.storage.fields[i].type.value(
                        verbatim: UnsafeRawBufferPointer(rebasing: bytes[span.valueStart..<span.start + span.count]),
                        form: span.form
                    )
                }
            values[i] = try converted ?? valueOrDefault(i)
        }
        return Record(type: type, id: finalID, values: values)
    }

    /// Finishes the record as ``finish()`` does and appends it, encoded,
    /// to `batch`, then empties the builder for the next record of the same
    /// type. No ``Record`` is made: this is the agent's path for readings.
    ///
    /// ```swift
    /// var batch = EncodedBatch()
    /// var builder = RecordBuilder(type: sensor)
    /// for line in lines {
    ///     try builder.set(field: 0, .string(line.device))  // …
    ///     try builder.finish(into: &batch)
    /// }
    /// try await queue.append(batch)
    /// ```
    ///
    /// If it throws (a required field missing), nothing is appended and
    /// the builder is emptied all the same.
    public mutating func finish(into batch: inout EncodedBatch) throws {
        defer { reset() }
        for i in values.indices where values[i] == nil && verbatim.spans[i].count == 0 {
            values[i] = try valueOrDefault(i)
        }
        batch.append(type: type, id: finalID, values: values, verbatim: verbatim)
    }

    /// Forgets every value set, keeping the storage, for the next record.
    public mutating func reset() {
        for i in values.indices {
            values[i] = nil
            seen[i] = false
            verbatim.spans[i].count = 0
        }
        verbatim.bytes.removeAll(keepingCapacity: true)
        id = nil
        idSeen = false
    }

    private var finalID: ObjectId { id.flatMap { $0.isZero ? nil : $0 } ?? ObjectId.generate() }

    /// The default of absent field `i`, nil for an optional one; throws for a required one.
    private func valueOrDefault(_ i: Int) throws -> FieldValue? {
        let field = type.storage.fields[i]
        if let fallback = field.defaultValue { return fallback }
        guard field.isRequired else { return nil }
        let how = seen[i] ? "got null" : "but it is missing"
        throw EdgeIngestError.invalidRecord(
            .missingField,
            field: field.name,
            "field '\(field.name)' is required (\(field.type.expectation)), \(how)"
        )
    }

    /// The error for a key the type does not declare.
    public static func unknownField(_ key: String, in type: RecordType) -> EdgeIngestError {
        EdgeIngestError.invalidRecord(
            .unknownField,
            field: key,
            "field \(quoted(key)) is not declared in record type '\(type.name)'"
        )
    }
}

/// The fields of one record given as verbatim JSON text (see
/// ``RecordBuilder/setVerbatim(field:_:form:)``), each stored as the
/// record's JSON holds it: `,"name":text`. Fields set in declaration
/// order lie one after the other and are written with one copy.
struct VerbatimFields: Sendable {
    struct Span: Sendable {
        /// Where `,"name":text` starts in ``VerbatimFields/bytes``.
        var start = 0
        /// 0: the field is not verbatim.
        var count = 0
        /// Where `text` starts.
        var valueStart = 0
        var form = VerbatimJSON.integer
    }
    var bytes: [UInt8] = []
    /// One per field of the type.
    var spans: [Span] = []
}

extension RecordType {
    /// The index in ``fields`` of the field whose name is these UTF-8 bytes,
    /// without allocating. `hint` is tried first (parsers pass the index
    /// after the previous field, as readings usually keep field order).
    public func fieldIndex(utf8 key: UnsafeRawBufferPointer, hint: Int = 0) -> Int? {
        let names = fieldNamesUTF8
        let count = names.count
        guard count > 0 else { return nil }
        var i = hint < count ? hint : 0
        for _ in 0..<count {
            if names[i].count == key.count,
                names[i].withUnsafeBytes({ memcmp($0.baseAddress!, key.baseAddress!, key.count) == 0 })
            {
                return i
            }
            i = i + 1 == count ? 0 : i + 1
        }
        return nil
    }

    /// The index of a field by name.
    public func fieldIndex(named name: String) -> Int? { fieldIndex[name] }
}

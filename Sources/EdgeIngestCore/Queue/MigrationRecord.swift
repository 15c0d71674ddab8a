/// One queued record during a schema migration: its type, its `_id` (which
/// a migration cannot change) and its field values as stored.
///
/// ```swift
/// configuration.schemaVersion = 2
/// configuration.migrationBlock = { record, oldSchemaVersion in
///     if oldSchemaVersion < 1 { record.renameField("windSpeedInMph", to: "windSpeed") }
///     if oldSchemaVersion < 2, record["unit"] == nil { record["unit"] = "imperial" }
/// }
/// ```
///
/// After the block, the record must validate against the configured (new)
/// record type, or the whole migration fails and the file is left as it was.
public struct MigrationRecord: Sendable {
    /// The record's type name.
    public let typeName: String
    /// The record's `_id`.
    public let id: ObjectId
    /// Field values by name (without `_id`).
    public var values: [String: RawFieldValue]

    /// A field's value, or nil if the record has none. Set nil to drop a field.
    public subscript(field: String) -> RawFieldValue? {
        get { values[field] }
        set { values[field] = newValue }
    }

    /// Moves a field's value to a new name (nothing happens if it is absent).
    public mutating func renameField(_ old: String, to new: String) {
        if let value = values.removeValue(forKey: old) { values[new] = value }
    }
}

/// Rewrites a queued record written with `oldSchemaVersion` for the
/// configured schema version (the seeds' `migrationBlock`, called once per
/// record rather than once per realm: a queue can be larger than memory).
public typealias MigrationBlock = @Sendable (_ record: inout MigrationRecord, _ oldSchemaVersion: Int64) throws -> Void

/// A stored JSON line → its values. Records are flat objects of strings,
/// numbers, booleans and nulls (what ``JSONWriter`` writes).
enum StoredRecordDecoder {
    struct NotFlat: Error, CustomStringConvertible {
        var description: String { "a stored record is not a flat JSON object of strings, numbers, booleans and nulls" }
    }

    static func decode(_ line: UnsafeRawBufferPointer) throws -> [String: RawFieldValue] {
        guard let members = try JSONValue.parse(Array(line)).members else { throw NotFlat() }
        var values: [String: RawFieldValue] = [:]
        for (name, value) in members {
            switch value {
            case .null: values[name] = .null
            case .bool(let b): values[name] = .bool(b)
            case .int(let i): values[name] = .int(i)
            case .double(let d): values[name] = .double(d)
            case .string(let s): values[name] = .string(s)
            case .array, .object: throw NotFlat()
            }
        }
        return values
    }
}

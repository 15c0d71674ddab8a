import EdgeIngest

/// Realm's migration block: called with a ``Migration`` and the schema
/// version the records were written with.
///
/// ```swift
/// config.schemaVersion = 2
/// config.migrationBlock = { migration, oldSchemaVersion in
///     if oldSchemaVersion < 1 {
///         migration.enumerateObjects(ofType: WeatherSensor.className()) { oldObject, newObject in
///             newObject!["windSpeedInMph"] = (oldObject!["windSpeedInKph"] as! Int) * 10 / 16
///         }
///     }
///     migration.renameProperty(onType: WeatherSensor.className(), from: "deviceName", to: "deviceId")
/// }
/// ```
///
/// One difference: a write-only realm holds only queued records, and may
/// hold more than fit in memory, so the block is called **once per queued
/// record** written with an older schema version, its `enumerateObjects`
/// visiting that one record. A block that only calls the migration's
/// methods (as Realm's samples do) behaves the same either way. As in
/// Realm, fields the new type no longer declares are dropped afterwards,
/// and new required fields get their type's default.
public typealias MigrationBlock = @Sendable (_ migration: Migration, _ oldSchemaVersion: UInt64) -> Void

/// What a ``MigrationBlock`` works on: Realm's `Migration`, for the queued
/// record being migrated (see ``MigrationBlock``).
public final class Migration {
    private let old: MigrationRecord
    fileprivate(set) var record: MigrationRecord

    init(_ record: MigrationRecord) {
        self.old = record
        self.record = record
    }

    /// Calls `block` with the record as written (`oldObject`) and as it
    /// will be stored (`newObject`, whose fields can be set), if it is of
    /// type `typeName`.
    public func enumerateObjects(
        ofType typeName: String,
        _ block: (_ oldObject: MigrationObject?, _ newObject: MigrationObject?) -> Void
    ) {
        guard record.typeName == typeName else { return }
        let newObject = MigrationObject(record)
        block(MigrationObject(old), newObject)
        record = newObject.record
    }

    /// Moves a field's value to a new name in records of type `typeName`.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) {
        guard record.typeName == typeName else { return }
        record.renameField(oldName, to: newName)
    }

    @available(
        *,
        unavailable,
        message: "Queued records are not deleted by a migration: map them to the new schema instead."
    )
    public func deleteData(forType typeName: String) -> Bool { false }

    /// The primary API's per-record block for a Realm-style `block`. As in
    /// Realm, after the block a field the record's type no longer declares
    /// is dropped, and a new required field the block did not set gets its
    /// type's default (`""`, `0`, `false`; timestamps and ids have none).
    static func perRecord(_ block: @escaping MigrationBlock, types: [RecordType]) -> EdgeIngestCore.MigrationBlock {
        let declared = Dictionary(types.map { ($0.name, $0.fields) }, uniquingKeysWith: { first, _ in first })
        return { record, oldSchemaVersion in
            let migration = Migration(record)
            block(migration, UInt64(clamping: oldSchemaVersion))
            record = migration.record
            guard let fields = declared[record.typeName] else { return }
            let names = Set(fields.map(\.name))
            for name in record.values.keys where !names.contains(name) { record[name] = nil }
            for field in fields where field.isRequired && field.defaultValue == nil && record[field.name] == nil {
                switch field.type {
                case .string: record[field.name] = .string("")
                case .int: record[field.name] = .int(0)
                case .double: record[field.name] = .double(0)
                case .bool: record[field.name] = .bool(false)
                default: break
                }
            }
        }
    }
}

/// One record in a migration: Realm's `MigrationObject`, with its fields
/// by name as `String`, `Int`, `Double`, `Bool`, ``ObjectId`` or nil.
public final class MigrationObject {
    fileprivate(set) var record: MigrationRecord

    init(_ record: MigrationRecord) { self.record = record }

    /// A field's value (`_id` included), or nil. Setting nil removes the
    /// field; `_id` cannot be changed.
    public subscript(key: String) -> Any? {
        get {
            if key == RecordType.primaryKey { return record.id }
            switch record[key] {
            case nil, .null?: return nil
            case .bool(let b)?: return b
            case .int(let i)?: return Int(exactly: i) ?? i
            case .double(let d)?: return d
            case .string(let s)?, .text(let s)?: return s
            case .objectId(let id)?: return id
            case .timestamp(let milliseconds)?: return milliseconds
            case .unsupported?: return nil
            }
        }
        set {
            guard key != RecordType.primaryKey else { return }
            record[key] = newValue.map { RawFieldValue(any: $0) }
        }
    }
}

extension AsymmetricObject {
    /// The record type's name, as Realm's migrations spell it (`WeatherSensor.className()`).
    public class func className() -> String { recordTypeName }
}

/// A record type declared at run time: its name and its fields.
///
/// This is how the agent knows its readings without recompiling: the
/// configuration declares each type, and every reading is checked against
/// it. Swift code usually declares types as ``AsymmetricObject`` subclasses
/// instead, which produce a `RecordType` through ``AsymmetricObject/recordType``.
///
/// Every record type has the primary key `_id`, an ``ObjectId``, generated
/// when a reading has none. It may be declared explicitly (it must then be
/// of type `objectId`) or left implicit.
///
/// ```swift
/// let sensor = try RecordType(name: "WeatherSensor", fields: [
///     .init(name: "deviceId", type: .string),
///     .init(name: "temperatureInFahrenheit", type: .double),
///     .init(name: "barometricPressureInHg", type: .double),
///     .init(name: "windSpeedInMph", type: .int),
///     .init(name: "note", type: .string, isRequired: false),
/// ])
/// let record = try sensor.validate(["deviceId": "WX1278UIT", "temperatureInFahrenheit": 66.7,
///                                   "barometricPressureInHg": 29.65, "windSpeedInMph": 2])
/// ```
public struct RecordType: Hashable, Sendable, CustomStringConvertible {
    /// One declared field.
    public struct Field: Hashable, Sendable {
        /// The field's name as it appears in readings.
        public var name: String
        /// The field's type.
        public var type: FieldType
        /// Whether a reading must have a non-null value. The default is true.
        public var isRequired: Bool
        /// The value used when a reading has none. A field with a default is
        /// never missing. The default is none.
        public var defaultValue: FieldValue?

        public init(name: String, type: FieldType, isRequired: Bool = true, defaultValue: FieldValue? = nil) {
            self.name = name
            self.type = type
            self.isRequired = isRequired
            self.defaultValue = defaultValue
        }
    }

    /// The name of the primary key field.
    public static let primaryKey = "_id"
    /// The reserved field a reading may use to name its own type.
    public static let typeField = "_type"

    /// The type's name, as records and the backend know it.
    public var name: String { storage.name }
    /// The declared fields, without `_id`, in declaration order.
    public var fields: [Field] { storage.fields }

    var fieldIndex: [String: Int] { storage.fieldIndex }
    /// Each field's name as UTF-8, for byte-level lookups.
    var fieldNamesUTF8: [[UInt8]] { storage.fieldNamesUTF8 }
    /// `,"name":` for each field, pre-encoded for the JSON writer.
    var encodedKeys: [[UInt8]] { storage.encodedKeys }

    /// Everything a type holds, in one object: copying a `RecordType` (into
    /// every record and builder) retains once instead of once per array.
    /// Shared by every copy of one declaration, so the same object means the
    /// same type without comparing fields (the queue checks each batch's).
    final class Storage: Sendable {
        let name: String
        let fields: [Field]
        let fieldIndex: [String: Int]
        let fieldNamesUTF8: [[UInt8]]
        let encodedKeys: [[UInt8]]
        /// Each field's type, read per value without copying its ``Field``.
        let fieldTypes: [FieldType]
        /// ``encodedKeys`` one after the other (field `i`'s are
        /// `encodedKeyBytes[encodedKeyEnds[i - 1]..<encodedKeyEnds[i]]`), and
        /// whether each field may be absent with nothing written for it
        /// (optional, no default): what ``ReadingRouter``'s as-read path
        /// compares a line with, without an array per field.
        let encodedKeyBytes: [UInt8]
        let encodedKeyEnds: [Int]
        let omittable: [Bool]

        init(name: String, fields: [Field], fieldIndex: [String: Int]) {
            self.name = name
            self.fields = fields
            self.fieldIndex = fieldIndex
            fieldTypes = fields.map(\.type)
            fieldNamesUTF8 = fields.map { Array($0.name.utf8) }
            encodedKeys = fields.map { field in
                var key: [UInt8] = [UInt8(ascii: ",")]
                JSONWriter.appendString(field.name, to: &key)
                key.append(UInt8(ascii: ":"))
                return key
            }
            encodedKeyBytes = encodedKeys.flatMap { $0 }
            var end = 0
            encodedKeyEnds = encodedKeys.map { key in
                end += key.count
                return end
            }
            omittable = fields.map { !$0.isRequired && $0.defaultValue == nil }
        }
    }
    let storage: Storage

    /// Declares a type.
    ///
    /// - Throws: ``EdgeIngestError`` with code ``EdgeIngestError/Code/invalidSchema``
    ///   when the name is empty, a field name is empty, repeated or reserved
    ///   (`_type`), `_id` is declared with another type than `objectId`, or a
    ///   default value does not match its field's type.
    public init(name: String, fields: [Field]) throws {
        guard !name.isEmpty, !name.contains(where: { $0.isNewline || $0 == "\"" }) else {
            throw EdgeIngestError(
                .invalidSchema,
                "A record type needs a non-empty name without quotes or newlines, got \(quoted(name))."
            )
        }
        var kept: [Field] = []
        var index: [String: Int] = [:]
        for field in fields {
            guard !field.name.isEmpty else {
                throw EdgeIngestError(.invalidSchema, "Record type '\(name)' has a field with an empty name.")
            }
            if field.name == RecordType.primaryKey {
                guard field.type == .objectId else {
                    throw EdgeIngestError(
                        .invalidSchema,
                        "Record type '\(name)': the primary key '_id' must be of type objectId, not \(field.type)."
                    )
                }
                continue
            }
            guard field.name != RecordType.typeField else {
                throw EdgeIngestError(
                    .invalidSchema,
                    "Record type '\(name)': '_type' is reserved for naming a reading's type and cannot be a field."
                )
            }
            guard index[field.name] == nil else {
                throw EdgeIngestError(.invalidSchema, "Record type '\(name)' declares field '\(field.name)' twice.")
            }
            if let value = field.defaultValue, value.type != field.type {
                throw EdgeIngestError(
                    .invalidSchema,
                    "Record type '\(name)': the default of field '\(field.name)' must be of type \(field.type), not \(value.type)."
                )
            }
            index[field.name] = kept.count
            kept.append(field)
        }
        storage = Storage(name: name, fields: kept, fieldIndex: index)
    }

    public var description: String {
        "\(name)(" + fields.map { "\($0.name): \($0.type)\($0.isRequired ? "" : "?")" }.joined(separator: ", ") + ")"
    }

    public static func == (a: RecordType, b: RecordType) -> Bool {
        a.storage === b.storage || (a.name == b.name && a.fields == b.fields)
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(fields)
    }
}

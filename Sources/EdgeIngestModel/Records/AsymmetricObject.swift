/// The base class of write-only record types declared in Swift, shaped like
/// Realm's `AsymmetricObject`.
///
/// Declare properties with ``Persisted``; the record type's name is the
/// class name and its fields are the persisted properties, in declaration
/// order. The primary key is `_id`, an ``ObjectId``.
///
/// ```swift
/// class WeatherSensor: AsymmetricObject {
///     @Persisted(primaryKey: true) var _id: ObjectId
///     @Persisted var deviceId: String
///     @Persisted var temperatureInFahrenheit: Float
///     @Persisted var barometricPressureInHg: Float
///     @Persisted var windSpeedInMph: Int
/// }
///
/// let type = try WeatherSensor.recordType()      // the declared RecordType
/// let record = try WeatherSensor.makeRecord(value: [
///     "_id": ObjectId.generate(), "deviceId": "WX1278UIT",
///     "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
/// ])
/// ```
///
/// Instances are plain Swift objects: nothing reads them back from a queue.
open class AsymmetricObject {
    public required init() {}

    /// The name records of this class carry. The default is the class name;
    /// override it to map a Swift class onto a differently named type.
    open class var recordTypeName: String { String(describing: self) }

    /// The record type this class declares, derived once per class by
    /// reflecting a fresh instance.
    ///
    /// - Throws: ``EdgeIngestError`` with code ``EdgeIngestError/Code/invalidSchema``
    ///   if a property other than `_id` is marked as primary key, or `_id`
    ///   is not an ``ObjectId``.
    public static func recordType() throws -> RecordType {
        let key = ObjectIdentifier(self)
        if let cached = recordTypeCache.withLock({ $0[key] }) { return cached }
        var fields: [RecordType.Field] = []
        for property in self.init().persistedProperties() {
            if property.isPrimaryKey && property.name != RecordType.primaryKey {
                throw EdgeIngestError(
                    .invalidSchema,
                    "\(recordTypeName): only '_id' (an ObjectId) can be the primary key, not '\(property.name)'."
                )
            }
            fields.append(
                RecordType.Field(name: property.name, type: property.fieldType, isRequired: !property.isOptional)
            )
        }
        let type = try RecordType(name: recordTypeName, fields: fields)
        recordTypeCache.withLock { $0[key] = type }
        return type
    }

    /// Validates a Realm-style dictionary against this class's record type
    /// (the body of `create(WeatherSensor.self, value: […])`).
    public static func makeRecord(value: [String: Any]) throws -> Record {
        try recordType().validate(anyValues: value)
    }

    /// Converts this instance into a record. A zero `_id` gets a generated id.
    public func makeRecord() throws -> Record {
        try Self.recordType().validate(pairs: persistedProperties().map { ($0.name, $0.value) })
    }

    /// The persisted properties of this instance, base classes first.
    func persistedProperties() -> [(
        name: String, fieldType: FieldType, isOptional: Bool, isPrimaryKey: Bool, value: RawFieldValue
    )] {
        var mirrors: [Mirror] = []
        var mirror: Mirror? = Mirror(reflecting: self)
        while let current = mirror {
            mirrors.append(current)
            mirror = current.superclassMirror
        }
        var out: [(String, FieldType, Bool, Bool, RawFieldValue)] = []
        for m in mirrors.reversed() {
            for child in m.children {
                guard let property = child.value as? any PersistedProperty, var label = child.label else { continue }
                if label.hasPrefix("_") { label.removeFirst() }  // the wrapper's storage is `_name`
                out.append((label, property.fieldType, property.isOptional, property.isPrimaryKey, property.rawValue))
            }
        }
        return out
    }
}

private let recordTypeCache = PlainMutex<[ObjectIdentifier: RecordType]>([:])

/// Marks a stored property of an ``AsymmetricObject`` as a record field.
///
/// ```swift
/// @Persisted(primaryKey: true) var _id: ObjectId
/// @Persisted var deviceId: String
/// @Persisted var note: String?          // optional field
/// ```
@propertyWrapper
public struct Persisted<Value: PersistableValue> {
    public var wrappedValue: Value
    let isPrimaryKey: Bool

    /// A field holding the type's default value until set.
    public init() {
        wrappedValue = Value.persistedDefault
        isPrimaryKey = false
    }

    public init(wrappedValue: Value) {
        self.wrappedValue = wrappedValue
        isPrimaryKey = false
    }

    /// `@Persisted(primaryKey: true) var _id: ObjectId`.
    public init(primaryKey: Bool) {
        wrappedValue = Value.persistedDefault
        isPrimaryKey = primaryKey
    }

    public init(wrappedValue: Value, primaryKey: Bool) {
        self.wrappedValue = wrappedValue
        isPrimaryKey = primaryKey
    }
}

protocol PersistedProperty {
    var fieldType: FieldType { get }
    var isOptional: Bool { get }
    var isPrimaryKey: Bool { get }
    var rawValue: RawFieldValue { get }
}

extension Persisted: PersistedProperty {
    var fieldType: FieldType { Value.persistedFieldType }
    var isOptional: Bool { Value.persistedIsOptional }
    var rawValue: RawFieldValue { wrappedValue.persistedRawValue }
}

/// A Swift type that can be the value of a ``Persisted`` property:
/// `String`, `Int`, `Int64`, `Int32`, `Double`, `Float`, `Bool`,
/// ``ObjectId``, and optionals of these.
public protocol PersistableValue {
    /// The field type the property declares.
    static var persistedFieldType: FieldType { get }
    /// Whether the property is optional (the field is not required).
    static var persistedIsOptional: Bool { get }
    /// The value of a property declared without an initial value.
    static var persistedDefault: Self { get }
    /// The property's value for validation.
    var persistedRawValue: RawFieldValue { get }
}

extension PersistableValue {
    public static var persistedIsOptional: Bool { false }
}

extension String: PersistableValue {
    public static var persistedFieldType: FieldType { .string }
    public static var persistedDefault: String { "" }
    public var persistedRawValue: RawFieldValue { .string(self) }
}

extension Int: PersistableValue {
    public static var persistedFieldType: FieldType { .int }
    public static var persistedDefault: Int { 0 }
    public var persistedRawValue: RawFieldValue { .int(Int64(self)) }
}

extension Int64: PersistableValue {
    public static var persistedFieldType: FieldType { .int }
    public static var persistedDefault: Int64 { 0 }
    public var persistedRawValue: RawFieldValue { .int(self) }
}

extension Int32: PersistableValue {
    public static var persistedFieldType: FieldType { .int }
    public static var persistedDefault: Int32 { 0 }
    public var persistedRawValue: RawFieldValue { .int(Int64(self)) }
}

extension Double: PersistableValue {
    public static var persistedFieldType: FieldType { .double }
    public static var persistedDefault: Double { 0 }
    public var persistedRawValue: RawFieldValue { .double(self) }
}

extension Float: PersistableValue {
    public static var persistedFieldType: FieldType { .double }
    public static var persistedDefault: Float { 0 }
    public var persistedRawValue: RawFieldValue { .double(Double(decimalFaithful: self)) }
}

extension Bool: PersistableValue {
    public static var persistedFieldType: FieldType { .bool }
    public static var persistedDefault: Bool { false }
    public var persistedRawValue: RawFieldValue { .bool(self) }
}

extension ObjectId: PersistableValue {
    public static var persistedFieldType: FieldType { .objectId }
    public static var persistedDefault: ObjectId { ObjectId() }
    public var persistedRawValue: RawFieldValue { .objectId(self) }
}

extension Optional: PersistableValue where Wrapped: PersistableValue {
    public static var persistedFieldType: FieldType { Wrapped.persistedFieldType }
    public static var persistedIsOptional: Bool { true }
    public static var persistedDefault: Wrapped? { nil }
    public var persistedRawValue: RawFieldValue { self?.persistedRawValue ?? .null }
}

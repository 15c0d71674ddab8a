/// The records of one ``IngestRealm/write(_:)``: created together, stored
/// together (all or none). Records are validated as they are created.
///
/// ```swift
/// try realm.write {
///     try $0.create(WeatherSensor.self, value: [
///         "_id": ObjectId.generate(), "deviceId": "WX1278UIT",
///         "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
///     ])
/// }
/// ```
public final class IngestTransaction {
    let types: [String: RecordType]
    private(set) var records: [Record] = []

    init(types: [String: RecordType]) { self.types = types }

    /// Creates a record of `type` from a dictionary, as in the seeds. A
    /// missing `_id` is generated. Returns the record's `_id`.
    ///
    /// - Throws: ``EdgeIngestError/Code/unknownObjectType`` if the realm
    ///   does not accept `type`; ``EdgeIngestError/Code/invalidRecord`` with
    ///   the field and what was expected.
    @discardableResult
    public func create<T: AsymmetricObject>(_ type: T.Type, value: [String: Any]) throws -> ObjectId {
        try append(T.recordType().validate(anyValues: value))
    }

    /// Creates a record from a typed object (its `@Persisted` properties).
    @discardableResult
    public func create<T: AsymmetricObject>(_ object: T) throws -> ObjectId {
        try append(object.makeRecord())
    }

    /// Creates a record of a type declared at run time (``IngestConfiguration/recordTypes``).
    @discardableResult
    public func create(typeName: String, value: [String: Any]) throws -> ObjectId {
        guard let type = types[typeName] else { throw unknown(typeName) }
        return try append(type.validate(anyValues: value))
    }

    private func append(_ record: Record) throws -> ObjectId {
        guard types[record.type.name] == record.type else { throw unknown(record.type.name) }
        records.append(record)
        return record.id
    }

    private func unknown(_ name: String) -> EdgeIngestError {
        EdgeIngestError(
            .unknownObjectType,
            "'\(name)' is not among this realm's object types (\(types.keys.sorted().joined(separator: ", "))): add it to the configuration's objectTypes."
        )
    }
}

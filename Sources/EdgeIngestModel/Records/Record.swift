/// A reading that passed validation against its ``RecordType``: ready to be
/// queued.
///
/// Records are write-only: they are created, appended to a queue, uploaded
/// and deleted. Nothing in EdgeIngest reads them back from a queue as
/// records; the uploader sends their encoded form.
public struct Record: Hashable, Sendable {
    /// The record's type.
    public let type: RecordType
    /// The primary key.
    public let id: ObjectId
    /// One value per field of ``type``, in declaration order; nil for an
    /// optional field that the reading did not have.
    public let values: [FieldValue?]

    init(type: RecordType, id: ObjectId, values: [FieldValue?]) {
        self.type = type
        self.id = id
        self.values = values
    }

    /// This record with the named field set to `value`; nil when the type
    /// has no such field or `value` is not of its type.
    package func setting(_ field: String, to value: FieldValue) -> Record? {
        guard let i = type.fieldIndex[field], type.fields[i].type.kind == value.type.kind else { return nil }
        var values = values
        values[i] = value
        return Record(type: type, id: id, values: values)
    }

    /// The value of the named field, if it has one.
    public subscript(field: String) -> FieldValue? {
        if field == RecordType.primaryKey { return .objectId(id) }
        guard let i = type.fieldIndex[field] else { return nil }
        return values[i]
    }
}

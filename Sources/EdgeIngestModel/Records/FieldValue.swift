/// A validated value of one field, of exactly the field's ``FieldType``.
public enum FieldValue: Hashable, Sendable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    /// Milliseconds since the Unix epoch, UTC.
    case timestamp(milliseconds: Int64)
    case objectId(ObjectId)

    /// The type of this value.
    public var type: FieldType {
        switch self {
        case .string: return .string
        case .int: return .int
        case .double: return .double
        case .bool: return .bool
        case .timestamp: return .timestamp
        case .objectId: return .objectId
        }
    }
}

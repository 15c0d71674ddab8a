/// The type of one field of a record type.
///
/// A struct over a private enum, so that new types can be added without
/// breaking code that uses these.
///
/// | type | accepts | stored as (JSON) |
/// | --- | --- | --- |
/// | ``string`` | a string | a string |
/// | ``int`` | an integer (or a float with no fraction) within 64 bits | an integer |
/// | ``double`` | any number | a number |
/// | ``bool`` | `true` / `false` | a boolean |
/// | ``timestamp`` | ISO 8601 text with a zone (`2026-11-21T11:41:55.120Z`), or integer milliseconds since the epoch | ISO 8601 UTC text with milliseconds |
/// | ``objectId`` | 24 hexadecimal characters | 24 lowercase hexadecimal characters |
public struct FieldType: Hashable, Sendable, CustomStringConvertible {
    package enum Kind: String, Hashable, Sendable, CaseIterable {
        case string, int, double, bool, timestamp, objectId
    }
    package let kind: Kind

    /// UTF-8 text.
    public static let string = FieldType(kind: .string)
    /// A signed 64-bit integer.
    public static let int = FieldType(kind: .int)
    /// A 64-bit floating-point number (Swift `Float` fields are stored as this).
    public static let double = FieldType(kind: .double)
    /// A boolean.
    public static let bool = FieldType(kind: .bool)
    /// A point in time with millisecond precision.
    public static let timestamp = FieldType(kind: .timestamp)
    /// A 12-byte ObjectId.
    public static let objectId = FieldType(kind: .objectId)

    /// Every field type, for documentation and configuration errors.
    public static let all: [FieldType] = Kind.allCases.map(FieldType.init(kind:))

    /// Parses the configuration name of a type: `string`, `int`, `double`,
    /// `bool`, `timestamp` or `objectId` (aliases: `integer`, `float`,
    /// `boolean`, `objectid`).
    public init?(name: String) {
        switch name {
        case "string": kind = .string
        case "int", "integer": kind = .int
        case "double", "float": kind = .double
        case "bool", "boolean": kind = .bool
        case "timestamp": kind = .timestamp
        case "objectId", "objectid": kind = .objectId
        default: return nil
        }
    }

    init(kind: Kind) { self.kind = kind }

    /// The configuration name: `int`, `objectId`, …
    public var description: String { kind.rawValue }

    /// How an error message names what a field of this type expects.
    var expectation: String {
        switch kind {
        case .string: return "a string"
        case .int: return "an integer"
        case .double: return "a number"
        case .bool: return "true or false"
        case .timestamp: return "an ISO 8601 timestamp or epoch milliseconds"
        case .objectId: return "a 24-character hexadecimal ObjectId"
        }
    }
}

/// A value as an input delivered it, before it is checked against a field's
/// declared type.
///
/// Parsers produce these: a JSON parser yields ``string(_:)``, ``int(_:)``,
/// ``double(_:)``…; a CSV parser yields ``text(_:)``, untyped text that is
/// converted according to the field's type (`"12"` becomes an `int` for an
/// `int` field). Literals make hand-written values short:
///
/// ```swift
/// let value: [String: RawFieldValue] = ["deviceId": "WX1278UIT", "windSpeedInMph": 2]
/// ```
public enum RawFieldValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// A typed string (a JSON string): only `string`, `timestamp` and
    /// `objectId` fields accept it.
    case string(String)
    /// Untyped text (a CSV cell): converted according to the field's type.
    case text(String)
    case objectId(ObjectId)
    /// Milliseconds since the Unix epoch.
    case timestamp(milliseconds: Int64)
    /// A value with no field type (a nested object or array, say). The
    /// payload names what it was, for the error message: `"an object"`.
    case unsupported(String)
}

extension RawFieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension RawFieldValue {
    /// Converts a Swift value as found in `[String: Any]` dictionaries (the
    /// Realm-style `create(_:value:)`): `String`, any integer, `Double`,
    /// `Float`, `Bool`, ``ObjectId``, `nil`/`Optional.none`, and values that
    /// are already ``RawFieldValue`` or ``FieldValue``.
    public init(any value: Any) {
        switch value {
        case let v as RawFieldValue: self = v
        case let v as FieldValue: self = RawFieldValue(v)
        case let v as String: self = .string(v)
        case let v as Substring: self = .string(String(v))
        case let v as Bool: self = .bool(v)
        case let v as Int: self = .int(Int64(v))
        case let v as Int64: self = .int(v)
        case let v as Int32: self = .int(Int64(v))
        case let v as Int16: self = .int(Int64(v))
        case let v as Int8: self = .int(Int64(v))
        case let v as UInt8: self = .int(Int64(v))
        case let v as UInt16: self = .int(Int64(v))
        case let v as UInt32: self = .int(Int64(v))
        case let v as UInt: self = v <= UInt(Int64.max) ? .int(Int64(v)) : .double(Double(v))
        case let v as UInt64: self = v <= UInt64(Int64.max) ? .int(Int64(v)) : .double(Double(v))
        case let v as Double: self = .double(v)
        case let v as Float: self = .double(Double(decimalFaithful: v))
        case let v as ObjectId: self = .objectId(v)
        default:
            if case Optional<Any>.none = value as Any? {
                self = .null
                return
            }
            let mirror = Mirror(reflecting: value)
            if mirror.displayStyle == .optional {
                if let wrapped = mirror.children.first?.value {
                    self = RawFieldValue(any: wrapped)
                } else {
                    self = .null
                }
                return
            }
            self = .unsupported("a value of type \(type(of: value))")
        }
    }

    /// The raw form of an already valid value.
    public init(_ value: FieldValue) {
        switch value {
        case .string(let s): self = .string(s)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .bool(let b): self = .bool(b)
        case .timestamp(let ms): self = .timestamp(milliseconds: ms)
        case .objectId(let id): self = .objectId(id)
        }
    }
}

extension Double {
    /// Widens a `Float` through its shortest decimal text, so that the
    /// `Float` 66.7 becomes the `Double` 66.7 rather than 66.69999694824219:
    /// what the sensor meant, not the binary noise of the narrower type.
    init(decimalFaithful value: Float) {
        self = Double(value.description) ?? Double(value)
    }
}

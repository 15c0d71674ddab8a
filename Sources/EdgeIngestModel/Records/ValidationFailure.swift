/// Why a reading was refused: the field it concerns, a stable reason code
/// for counting, and a sentence for the operator.
///
/// ```swift
/// do { _ = try sensorType.validate(["windSpeedInMph": "fast"]) }
/// catch let error as EdgeIngestError {
///     print(error.validationFailure!.reason)   // type_mismatch
///     print(error.message)  // field 'windSpeedInMph' must be an integer, got "fast"
/// }
/// ```
public struct ValidationFailure: Hashable, Sendable {
    /// A stable, payload-free reason, safe as a metric label or counter key.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// A required field is absent or null.
        public static let missingField = Reason(name: "missing_field")
        /// The reading has a field its type does not declare.
        public static let unknownField = Reason(name: "unknown_field")
        /// The same field appears twice in one reading.
        public static let duplicateField = Reason(name: "duplicate_field")
        /// A value is not of the field's type.
        public static let typeMismatch = Reason(name: "type_mismatch")
        /// A number does not fit the field (too large, or not finite).
        public static let outOfRange = Reason(name: "out_of_range")
        /// An `_id` or objectId field is not 24 hexadecimal characters.
        public static let invalidObjectId = Reason(name: "invalid_object_id")
        /// A timestamp field is neither ISO 8601 with a zone nor epoch milliseconds.
        public static let invalidTimestamp = Reason(name: "invalid_timestamp")
        /// The reading names a record type that is not declared.
        public static let unknownType = Reason(name: "unknown_type")
        public var description: String { name }
    }

    /// The field concerned, if the failure is about one field.
    public let field: String?
    /// Why the reading was refused.
    public let reason: Reason
    /// A sentence naming the field, what was expected and what was found
    /// (quoted and truncated).
    public let message: String
}

extension EdgeIngestError {
    static func invalidRecord(
        _ reason: ValidationFailure.Reason,
        field: String?,
        _ message: String,
        file: String = #fileID,
        line: Int = #line
    ) -> EdgeIngestError {
        EdgeIngestError(
            .invalidRecord,
            message,
            validationFailure: ValidationFailure(field: field, reason: reason, message: message),
            file: file,
            line: line
        )
    }
}

/// One record that was refused: by the backend (kept as a dead letter) or
/// at write time (a repeated `_id`). Carries no payload.
///
/// ```swift
/// SyncManager.errorHandler = { error, _ in
///     if let record = error.rejectedRecord {
///         print("\(record.type) \(record.id) refused: \(record.reason)")
///     }
/// }
/// ```
public struct RejectedRecord: Hashable, Sendable, CustomStringConvertible {
    /// The record's `_id`.
    public var id: ObjectId
    /// Its record type's name.
    public var type: String
    /// Why it was refused, as the backend (or the queue) said it.
    public var reason: String
    /// Its number in the dead-letter list (``deadLetters()``), when it was
    /// kept as a dead letter; nil for a refusal at write time.
    public var deadLetterNumber: Int64?

    public init(id: ObjectId, type: String, reason: String, deadLetterNumber: Int64? = nil) {
        self.id = id
        self.type = type
        self.reason = reason
        self.deadLetterNumber = deadLetterNumber
    }

    public var description: String { "\(type) \(id): \(reason)" }
}

/// The one error type thrown by the EdgeIngest library.
///
/// Every error carries a ``code`` that callers can match on, a ``message``
/// written as a sentence that says what happened and how to fix it, an
/// optional underlying ``cause``, and the source location that threw it.
///
/// Messages never contain record payloads, tokens or passwords. Validation
/// errors quote the offending value truncated to 32 characters, so an
/// operator can see *why* a reading was refused without the log becoming a
/// copy of the data.
///
/// ```swift
/// do {
///     try queue.append(batch)
/// } catch let error as EdgeIngestError where error.code == .queueFull {
///     print(error.message)
/// }
/// ```
public struct EdgeIngestError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in any release.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Kind: String, Sendable {
            case invalidRecord = "invalid_record"
            case unknownObjectType = "unknown_object_type"
            case invalidObjectId = "invalid_object_id"
            case invalidConfiguration = "invalid_configuration"
            case invalidSchema = "invalid_schema"
            case queueCorrupt = "queue_corrupt"
            case queueUnavailable = "queue_unavailable"
            case queueFull = "queue_full"
            case queueFormatTooNew = "queue_format_too_new"
            case storage = "storage"
            case diskFull = "disk_full"
            case leaseMisuse = "lease_misuse"
            case authenticationFailed = "authentication_failed"
            case offline = "offline"
            case uploadFailed = "upload_failed"
            case uploadHeld = "upload_held"
            case clientResetRequired = "client_reset_required"
            case encryption = "encryption"
            case migrationFailed = "migration_failed"
            case duplicateID = "duplicate_id"
            case recordRejected = "record_rejected"
            case notUploaded = "not_uploaded"
        }
        fileprivate let kind: Kind

        /// A reading did not match its declared record type.
        public static let invalidRecord = Code(kind: .invalidRecord)
        /// A record names a type that is not among the queue's object types.
        public static let unknownObjectType = Code(kind: .unknownObjectType)
        /// Text that should be a 24-character hexadecimal ObjectId is not.
        public static let invalidObjectId = Code(kind: .invalidObjectId)
        /// A configuration value is missing, contradictory or out of range.
        public static let invalidConfiguration = Code(kind: .invalidConfiguration)
        /// A record type declaration is not usable (duplicate or reserved field names, …).
        public static let invalidSchema = Code(kind: .invalidSchema)
        /// The queue file exists but is not a readable EdgeIngest queue.
        public static let queueCorrupt = Code(kind: .queueCorrupt)
        /// The queue file or its directory cannot be created or opened.
        public static let queueUnavailable = Code(kind: .queueUnavailable)
        /// The queue is at its bound and its overflow policy refused the records.
        public static let queueFull = Code(kind: .queueFull)
        /// The queue file was written by a newer EdgeIngest with a format this one cannot read.
        public static let queueFormatTooNew = Code(kind: .queueFormatTooNew)
        /// SQLite reported an error while reading or writing the queue (an I/O error, …).
        public static let storage = Code(kind: .storage)
        /// The file system holding the queue is full; nothing of the failed
        /// write was stored, and the same write can be tried again later.
        public static let diskFull = Code(kind: .diskFull)
        /// A lease was acknowledged twice, out of order, or by another queue.
        public static let leaseMisuse = Code(kind: .leaseMisuse)
        /// The backend refused a login or a token refresh, or no user is logged in.
        public static let authenticationFailed = Code(kind: .authenticationFailed)
        /// The backend could not be reached (in time) when it had to be:
        /// a first login, or opening with ``OpenBehavior/always``.
        public static let offline = Code(kind: .offline)
        /// A batch failed in passing and is being retried (network, 5xx, 429).
        public static let uploadFailed = Code(kind: .uploadFailed)
        /// Uploading stopped until a configuration problem is fixed (403, 404, …).
        public static let uploadHeld = Code(kind: .uploadHeld)
        /// The backend demanded a client reset and the mode left it to the
        /// application (``ClientResetMode/manual(errorHandler:)``).
        public static let clientResetRequired = Code(kind: .clientResetRequired)
        /// The encryption key is missing, wrong, or not 64 bytes.
        public static let encryption = Code(kind: .encryption)
        /// A schema migration failed; the queue was left as it was.
        public static let migrationFailed = Code(kind: .migrationFailed)
        /// A record was created with an `_id` this queue already holds, or
        /// took recently: like a primary-key violation, nothing of the
        /// write was stored (``EdgeIngestError/rejectedRecord`` names it).
        public static let duplicateID = Code(kind: .duplicateID)
        /// The backend refused one record (a per-record rejection, or a
        /// dead letter found by bisecting a refused batch): it is kept as a
        /// dead letter, named by ``EdgeIngestError/rejectedRecord``.
        public static let recordRejected = Code(kind: .recordRejected)
        /// Records left the queue without reaching the backend while an app
        /// waited for them: dropped by the overflow policy or a maximum
        /// age, discarded by a client reset, or quarantined as damaged (the
        /// message counts them by reason; ``QueueStatistics`` keeps the counts).
        public static let notUploaded = Code(kind: .notUploaded)

        /// A short, stable, payload-free name, safe as a metric label: `queue_full`.
        public var description: String { kind.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// A sentence saying what happened and, where possible, how to fix it.
    public let message: String
    /// The underlying error, if another layer failed first.
    public let cause: (any Error & Sendable)?
    /// Details of a record validation failure (only for ``Code/invalidRecord``).
    public let validationFailure: ValidationFailure?
    /// The record a ``Code/duplicateID`` or ``Code/recordRejected`` is about.
    public let rejectedRecord: RejectedRecord?
    /// Where in EdgeIngest the error was thrown.
    public let location: SourceLocation

    /// A source location inside EdgeIngest.
    public struct SourceLocation: Sendable, CustomStringConvertible {
        public let file: String
        public let line: Int
        public var description: String { "\(file):\(line)" }
    }

    package init(
        _ code: Code,
        _ message: String,
        cause: (any Error & Sendable)? = nil,
        validationFailure: ValidationFailure? = nil,
        rejectedRecord: RejectedRecord? = nil,
        file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.cause = cause
        self.validationFailure = validationFailure
        self.rejectedRecord = rejectedRecord
        self.location = SourceLocation(file: file, line: line)
    }

    public var description: String {
        if let cause { return "\(message) (cause: \(cause))" }
        return message
    }
}

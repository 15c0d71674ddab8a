import EdgeIngest
import Foundation

extension Realm {
    /// What the Realm-shaped API throws when EdgeIngest fails: an
    /// `NSError`, so the seeds' `catch let error as NSError` works on
    /// Linux too (Swift errors are not bridged to NSError there), carrying
    /// the ``EdgeIngestError`` it came from.
    ///
    /// ```swift
    /// do {
    ///     let realm = try Realm()
    /// } catch let error as NSError {
    ///     print(error.localizedDescription)          // what happened and how to fix it
    /// }
    /// ```
    ///
    /// `domain` is `io.edgeingest`; `code` numbers the ``EdgeIngestError/Code``;
    /// ``ingestError`` is the error itself (its `code`, `message`, cause).
    /// Errors thrown by the application's own blocks pass through unchanged.
    // Unchecked: NSError is immutable once made; this adds only a `let`.
    public final class Error: NSError, @unchecked Sendable {
        /// The EdgeIngest error this reports.
        public let ingestError: EdgeIngestError

        init(_ ingestError: EdgeIngestError) {
            self.ingestError = ingestError
            var userInfo: [String: Any] = [
                NSLocalizedDescriptionKey: ingestError.message, "code": "\(ingestError.code)",
            ]
            if let record = ingestError.rejectedRecord {
                userInfo["objectType"] = record.type
                userInfo["primaryKey"] = record.id.hexString
                userInfo["reason"] = record.reason
            }
            super.init(domain: "io.edgeingest", code: Error.number(of: ingestError.code), userInfo: userInfo)
        }

        /// For a record the backend refused (`recordRejected`) or a write
        /// that repeated an `_id` (`duplicateID`): which record and why, as
        /// Realm's compensating-write errors name them. Nil otherwise.
        ///
        /// ```swift
        /// app.syncManager.errorHandler = { error, _ in
        ///     for info in (error as? Realm.Error)?.compensatingWriteInfo ?? [] {
        ///         print("\(info.objectType) \(info.primaryKey) refused: \(info.reason)")
        ///     }
        /// }
        /// ```
        public var compensatingWriteInfo: [CompensatingWriteInfo]? {
            ingestError.rejectedRecord.map {
                [CompensatingWriteInfo(objectType: $0.type, primaryKey: $0.id, reason: $0.reason)]
            }
        }

        required init?(coder: NSCoder) { nil }

        /// The kind of failure (``EdgeIngestError/Code``).
        public var ingestCode: EdgeIngestError.Code { ingestError.code }

        private static let codes: [EdgeIngestError.Code] = [
            .invalidRecord, .unknownObjectType, .invalidObjectId, .invalidConfiguration, .invalidSchema,
            .queueCorrupt, .queueUnavailable, .queueFull, .queueFormatTooNew, .storage, .diskFull, .leaseMisuse,
            .authenticationFailed, .offline, .uploadFailed, .uploadHeld, .clientResetRequired, .encryption,
            .migrationFailed, .duplicateID, .recordRejected, .notUploaded,
        ]

        /// 1, 2, … in the order of ``EdgeIngestError/Code``'s declarations; 0 for a newer code.
        static func number(of code: EdgeIngestError.Code) -> Int {
            codes.firstIndex(of: code).map { $0 + 1 } ?? 0
        }
    }
}

/// Realm's description of one refused write: the object's type, its
/// primary key (`_id`) and the backend's reason.
public struct CompensatingWriteInfo: Sendable, Hashable {
    public let objectType: String
    public let primaryKey: ObjectId
    public let reason: String
}

/// Runs `body`, reporting an ``EdgeIngestError`` as a ``Realm/Error``.
func reportingRealmErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as EdgeIngestError {
        throw Realm.Error(error)
    }
}

/// ``reportingRealmErrors(_:)`` for async work.
func reportingRealmErrorsAsync<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as EdgeIngestError {
        throw Realm.Error(error)
    }
}

/// An error for a handler: an ``EdgeIngestError`` as a ``Realm/Error``.
func realmError(_ error: Swift.Error) -> Swift.Error {
    (error as? EdgeIngestError).map(Realm.Error.init) ?? error
}

import EdgeIngest
import Foundation

/// The records the backend refused one by one (Realm has no counterpart:
/// there a refused write is undone by the server). Each refusal also
/// reaches `app.syncManager.errorHandler` as it happens, with
/// ``Realm/Error/compensatingWriteInfo``.
///
/// ```swift
/// for letter in try realm.deadLetters() {
///     print("#\(letter.number) \(letter.type) \(letter.recordID): \(letter.reason)")
/// }
/// try realm.replayDeadLetters()       // after fixing the backend, or:
/// try realm.exportDeadLetters(to: URL(fileURLWithPath: "/var/lib/myapp/refused.ndjson"))
/// try realm.discardDeadLetters()
/// ```
extension Realm {
    /// The dead letters, oldest first (at most `limit`), with their data.
    public func deadLetters(limit: Int = .max) throws -> [DeadLetter] {
        try reportingRealmErrors { try ingestRealm.deadLetters(limit: limit) }
    }

    /// Sends dead letters again (same `_id`s); nil: all. Returns how many.
    @discardableResult
    public func replayDeadLetters(_ numbers: Set<Int64>? = nil) throws -> Int {
        try reportingRealmErrors { try ingestRealm.replayDeadLetters(numbers) }
    }

    /// Deletes dead letters for good; nil: all. Returns how many.
    @discardableResult
    public func discardDeadLetters(_ numbers: Set<Int64>? = nil) throws -> Int {
        try reportingRealmErrors { try ingestRealm.discardDeadLetters(numbers) }
    }

    /// Writes the dead letters with their data to `url` as NDJSON (mode
    /// 0600), in `ingestd dead-letter export`'s format. Returns how many.
    @discardableResult
    public func exportDeadLetters(to url: URL) throws -> Int {
        try reportingRealmErrors { try ingestRealm.exportDeadLetters(toFile: url.path) }
    }
}

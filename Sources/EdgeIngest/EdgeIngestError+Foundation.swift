import FoundationEssentials

/// `error.localizedDescription` is the message, and `error as NSError`
/// carries the code, as apps written for Realm expect:
///
/// ```swift
/// do {
///     let realm = try Realm()
/// } catch let error as NSError {
///     print(error.domain, error.code, error.localizedDescription)   // io.edgeingest 4 The configuration …
/// }
/// ```
extension EdgeIngestError: LocalizedError {
    public var errorDescription: String? { message }
    public var failureReason: String? { message }
}

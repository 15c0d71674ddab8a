// Realm's read side, which a write-only realm does not have: declared
// unavailable so that the seeds' code fails to compile with a message that
// names the write-only alternative, instead of "cannot find 'Object' in scope".

/// Realm's `Object`: unavailable; write-only realms take `AsymmetricObject`.
@available(
    *,
    unavailable,
    message:
        "A write-only realm holds AsymmetricObject types only: declare the class as `: AsymmetricObject` (its records upload and leave the device; nothing reads them back)."
)
open class Object {}

/// Realm's `EmbeddedObject`: unavailable; records are flat.
@available(
    *,
    unavailable,
    message:
        "A write-only realm stores flat records: put the embedded object's fields into the AsymmetricObject itself."
)
open class EmbeddedObject {}

/// Realm's `QuerySubscription`: unavailable; Data Ingest subscribes to nothing.
@available(
    *,
    unavailable,
    message:
        "Data Ingest uses no subscriptions: use user.flexibleSyncConfiguration() and set objectTypes to the AsymmetricObject types."
)
public struct QuerySubscription<T> {
    public init(name: String? = nil) {}
    public init(name: String? = nil, query: (T) -> Bool) {}
}

/// Realm's `SyncSubscriptionSet`: unavailable; Data Ingest subscribes to nothing.
@available(
    *,
    unavailable,
    message:
        "Data Ingest uses no subscriptions: use user.flexibleSyncConfiguration() and set objectTypes to the AsymmetricObject types."
)
public final class SyncSubscriptionSet {
    public func append<T>(_ subscriptions: QuerySubscription<T>...) {}
    public func update(_ block: () -> Void) async throws {}
}

extension Realm {
    @available(
        *,
        unavailable,
        message: "Data Ingest uses no subscriptions: a write-only realm uploads every record of its objectTypes."
    )
    public var subscriptions: SyncSubscriptionSet { fatalError() }
}

// EdgeIngestRealm: the Realm Swift SDK's spellings for write-only data
// (Data Ingest), so that an app written for Realm moves over by changing
// `import RealmSwift` to `import EdgeIngestRealm` and telling its `App`
// where the backend is (docs/MIGRATING-FROM-REALM.md).
//
// A thin mapping onto the primary API (IngestRealm, IngestConfiguration,
// the core App): no second implementation. Types declared here (Realm,
// App, ClientResetMode, SyncManager, AsyncOpenState, MigrationBlock) shadow
// the EdgeIngest types of the same name for code that imports this module;
// everything else of EdgeIngest (AsymmetricObject, @Persisted, ObjectId,
// Credentials, User, OpenBehavior, EdgeIngestError) is re-exported as is.
//
// Foundation is re-exported as RealmSwift does: the seeds' code uses
// `NSError`, `URL`, `Date` and `Data` with nothing but `import RealmSwift`.
@_exported import EdgeIngest
@_exported import Foundation

// swift-tools-version:6.0
// Tools version 6.0, not this machine's 6.3: the arm64 package is built by
// Debian 13's Swift 6.0.3 (scripts/arm64/, docs/ARM64.md), which reads this
// manifest as it is. CI builds and tests with Swift 6.3 on Debian 12 (amd64)
// and cross-builds the arm64 package with 6.0.3. Keep the manifest to
// 6.0's API; ingestd's executors fall back to the platform's before 6.3.
import PackageDescription

import class Foundation.ProcessInfo

/// ingestd runs on executors of its own (Sources/IngestAgent/Runtime), built
/// on Swift 6.3's experimental executor SPI, which a toolchain release may
/// rename. `INGESTD_EXECUTORS=platform swift build` builds it on the
/// platform's executors instead (libdispatch; also what a Swift before 6.3
/// gets). CI builds and tests both: scripts/test-platform-executors.sh.
let platformExecutors = ProcessInfo.processInfo.environment["INGESTD_EXECUTORS"] == "platform"
let executorSettings: [SwiftSetting] = platformExecutors ? [.define("PLATFORM_EXECUTORS")] : []

let package = Package(
    name: "EdgeIngest",
    products: [
        .library(name: "EdgeIngest", targets: ["EdgeIngest"]),
        // Realm's spellings for write-only data: apps written for Realm's
        // Data Ingest change `import RealmSwift` to `import EdgeIngestRealm`.
        .library(name: "EdgeIngestRealm", targets: ["EdgeIngestRealm"]),
        .executable(name: "ingestd", targets: ["ingestd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // C libraries enter through tiny system-library targets; variadic C
        // functions get typed `static inline` wrappers in each shim.h.
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // libzstd: queue segments compressed when committed (docs/QUEUE.md,
        // "Compressed segments"); Debian's apt and dpkg use it already.
        .systemLibrary(
            name: "CZstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // libcrypto (OpenSSL, already linked by libcurl): AES-256-GCM for
        // queues opened with an encryption key.
        .systemLibrary(
            name: "CCrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CSystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // <sys/epoll.h> (the HTTP server's event loop): Linux's, so not in
        // Swift's Glibc module. A header, no library.
        .systemLibrary(name: "CEpoll"),
        // <sys/timex.h> (adjtimex: whether the wall clock is synchronised,
        // for each segment's acceptance, docs/QUEUE.md). A header, no library.
        .systemLibrary(name: "CClock"),
        // The pure model: records, record types and validation, ObjectId,
        // JSON, timestamps, the NDJSON/CSV framing and parsers, TOML. No C
        // library, no I/O; the fuzz targets (scripts/fuzz.sh) build this
        // target's files as they are.
        .target(name: "EdgeIngestModel"),
        // The library without Foundation: everything but `fileURL: URL`.
        // ingestd links only this (Foundation, even FoundationEssentials,
        // adds megabytes to the binary: docs/BENCHMARKS.md, "Binary size").
        .target(
            name: "EdgeIngestCore",
            dependencies: [
                "EdgeIngestModel",
                "CSQLite",
                "CCurl",
                "CZlib",
                "CZstd",
                "CCrypto",
                "CClock",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The library's product: EdgeIngestCore re-exported, plus the
        // Foundation-typed API (IngestConfiguration.fileURL).
        .target(
            name: "EdgeIngest",
            dependencies: ["EdgeIngestCore"]
        ),
        // The Realm-shaped layer (docs/MIGRATING-FROM-REALM.md): a thin
        // mapping onto EdgeIngest, with Foundation and Dispatch as in Realm.
        .target(
            name: "EdgeIngestRealm",
            dependencies: ["EdgeIngest", .product(name: "Logging", package: "swift-log")]
        ),
        // The gateway: the HTTP server (event loop, connections, admission,
        // request framing, TLS) and the ingest protocol's server side
        // (accounts, tokens, quotas, login throttling, batches stored before
        // the answer). The agent's HTTP input and /metrics serve through it.
        .target(
            name: "IngestGateway",
            dependencies: [
                "EdgeIngestCore",
                "CEpoll",
                "CCrypto",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "IngestAgent",
            dependencies: [
                "EdgeIngestCore",
                "IngestGateway",
                "CSystemd",
                "CCrypto",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: executorSettings
        ),
        .executableTarget(
            name: "ingestd",
            dependencies: [
                "EdgeIngestCore",
                "IngestAgent",
                "IngestGateway",
            ],
            swiftSettings: executorSettings
        ),
        // A child process for crash tests: appends batches and is killed with
        // SIGKILL by the tests. Not a product; never installed.
        .executableTarget(
            name: "queue-crash-probe",
            dependencies: ["EdgeIngestCore"],
            path: "Tests/Support/queue-crash-probe"
        ),
        // A short-lived app with only `import EdgeIngestRealm`: writes,
        // waits for the upload and exits (EdgeIngestRealmTests run it).
        .executableTarget(
            name: "realm-upload-example",
            dependencies: ["EdgeIngestRealm"],
            path: "Tests/Support/realm-upload-example"
        ),
        .executableTarget(
            name: "queue-bench",
            dependencies: ["EdgeIngestCore"],
            path: "bench/queue-bench"
        ),
        // bench/mqtt.sh: libmosquitto's own QoS 1 rate, the MQTT sink's yardstick.
        .executableTarget(
            name: "mqtt-raw-publish",
            dependencies: ["EdgeIngestCore"],
            path: "bench/mqtt-raw-publish"
        ),
        // bench/fleet.sh: a fleet of ingest-protocol clients (and a slowloris) for one gateway.
        .executableTarget(
            name: "fleet-load",
            path: "bench/fleet-load",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // bench/wakeup-floor.sh: a task that only sleeps, on ingestd's executors.
        .executableTarget(
            name: "wakeup-floor-agent",
            dependencies: ["IngestAgent"],
            path: "bench/wakeup-floor-agent",
            swiftSettings: executorSettings
        ),
        // Helpers shared by the test targets (temporary directories).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // scripts/test-powercut-replay.sh: dm-log-writes logs read, and the
        // crash states they allow replayed and checked.
        .target(name: "WriteLogReplay", path: "Tests/Support/WriteLogReplay"),
        .executableTarget(
            name: "write-log-replay",
            dependencies: ["WriteLogReplay", "TestSupport"],
            path: "Tests/Support/write-log-replay"
        ),
        .testTarget(
            name: "WriteLogReplayTests",
            dependencies: ["WriteLogReplay", "TestSupport", "write-log-replay"]
        ),
        .testTarget(
            name: "EdgeIngestModelTests",
            dependencies: ["EdgeIngestModel", "TestSupport"]
        ),
        .testTarget(
            name: "EdgeIngestTests",
            dependencies: ["EdgeIngest", "EdgeIngestCore", "EdgeIngestModel", "TestSupport", "queue-crash-probe"]
        ),
        // The seeds' samples for write-only data, compiled with only the
        // import and the backend line changed, run against a gateway
        // (the built ingestd) the tests start.
        .testTarget(
            name: "EdgeIngestRealmTests",
            dependencies: ["EdgeIngestRealm", "TestSupport", "ingestd"]
        ),
        // Every ```swift block of README.md and docs/, compiled
        // (generated by scripts/doc-snippets.py; a test checks they are current).
        .testTarget(
            name: "DocSnippetTests",
            dependencies: ["EdgeIngest", "EdgeIngestRealm"]
        ),
        .testTarget(
            name: "IngestAgentTests",
            dependencies: ["IngestAgent", "EdgeIngestCore", "EdgeIngestModel", "TestSupport"],
            swiftSettings: executorSettings
        ),
        // The gateway in-process: every exit of the batch handler, the
        // HTTP server's framing, admission and connections on loopback.
        .testTarget(
            name: "IngestGatewayTests",
            dependencies: ["IngestGateway", "EdgeIngest", "EdgeIngestCore", "TestSupport"]
        ),
        .testTarget(
            name: "ingestdTests",
            dependencies: ["ingestd", "EdgeIngest", "EdgeIngestCore", "TestSupport"]
        ),
    ]
)

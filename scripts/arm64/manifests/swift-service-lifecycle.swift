// swift-tools-version:6.0
// Added by EdgeIngest's arm64 build (scripts/arm64/build-root.sh): the same
// library targets as Package.swift (which needs tools 6.2), for Swift 6.0.
import PackageDescription

let package = Package(
    name: "swift-service-lifecycle",
    products: [
        .library(name: "ServiceLifecycle", targets: ["ServiceLifecycle"]),
        .library(name: "ServiceLifecycleTestKit", targets: ["ServiceLifecycleTestKit"]),
        .library(name: "UnixSignals", targets: ["UnixSignals"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.14.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.3"),
    ],
    targets: [
        .target(
            name: "ServiceLifecycle",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .target(name: "UnixSignals"),
                .target(name: "ConcurrencyHelpers"),
            ]
        ),
        .target(name: "ServiceLifecycleTestKit", dependencies: [.target(name: "ServiceLifecycle")]),
        .target(name: "UnixSignals", dependencies: [.target(name: "ConcurrencyHelpers")]),
        .target(name: "ConcurrencyHelpers"),
    ],
    swiftLanguageModes: [.v5]
)

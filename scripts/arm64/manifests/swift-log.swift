// swift-tools-version:6.0
// Added by EdgeIngest's arm64 build (scripts/arm64/build-root.sh): the same
// targets as Package.swift, without what Swift 6.0's manifests lack (traits;
// the extra compiler settings). No trait enabled = every log level, as upstream's default.
import PackageDescription

let package = Package(
    name: "swift-log",
    products: [
        .library(name: "Logging", targets: ["Logging"]),
        .library(name: "InMemoryLogging", targets: ["InMemoryLogging"]),
    ],
    targets: [
        .target(name: "Logging", dependencies: [], exclude: ["CMakeLists.txt"]),
        .target(name: "InMemoryLogging", dependencies: ["Logging"], exclude: ["CMakeLists.txt"]),
    ]
)

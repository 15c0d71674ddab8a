import Foundation

/// The path of an executable of this package built beside the running
/// tests (`swift test` runs …/debug/EdgeIngestPackageTests.xctest; the
/// package's executables are in …/debug).
///
///     let replay = builtExecutable("write-log-replay")
public func builtExecutable(_ name: String) -> String {
    var dir = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path), dir.path != "/" {
        dir.deleteLastPathComponent()
    }
    return dir.appendingPathComponent(name).path
}

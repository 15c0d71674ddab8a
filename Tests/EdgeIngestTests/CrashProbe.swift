import Foundation

/// Runs the `queue-crash-probe` executable built beside the tests, or the
/// one `QUEUE_CRASH_PROBE` names (scripts/test-arm64.sh: the arm64 probe
/// under qemu-user).
enum CrashProbe {
    static var executable: URL {
        if let probe = ProcessInfo.processInfo.environment["QUEUE_CRASH_PROBE"], !probe.isEmpty {
            return URL(fileURLWithPath: probe)
        }
        let tests = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var dir = tests.deletingLastPathComponent()
        // swift test runs …/debug/EdgeIngestPackageTests.xctest; the probe is in …/debug.
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("queue-crash-probe").path),
            dir.path != "/"
        {
            dir.deleteLastPathComponent()
        }
        return dir.appendingPathComponent("queue-crash-probe")
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self)
        )
    }
}

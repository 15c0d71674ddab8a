import Foundation

/// What a tool run by ``runTool(_:_:environment:)`` left behind.
public struct ToolResult: Sendable {
    public var status: Int32
    /// stdout and stderr together, in the order written.
    public var output: String
}

/// Runs `executable` with `arguments` to completion and returns its exit
/// status and combined output (one pipe, read to the end before waiting, so
/// a chatty tool never stalls). For the short helper tools tests call:
/// sqlite3, openssl, systemd-analyze, the test scripts in Tests/Support.
///
///     let result = try runTool("/usr/bin/sqlite3", [path, "PRAGMA integrity_check"])
///     #expect(result.status == 0, "\(result.output)")
public func runTool(
    _ executable: String,
    _ arguments: [String],
    environment: [String: String]? = nil
) throws -> ToolResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe()
    process.standardOutput = out
    process.standardError = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ToolResult(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
}

/// What a tool run by ``sqlite3(_:_:)`` said when it failed.
public struct ToolFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// Runs `sql` on the database at `path` with the sqlite3 tool an operator
/// would use and returns its output without the final newline; throws
/// when sqlite3 fails.
///
///     #expect(try sqlite3(path, "SELECT count(*) FROM WeatherSensor") == "10")
public func sqlite3(_ path: String, _ sql: String) throws -> String {
    let result = try runTool("/usr/bin/sqlite3", [path, sql])
    guard result.status == 0 else { throw ToolFailure("sqlite3 exited \(result.status): \(result.output)") }
    return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
}

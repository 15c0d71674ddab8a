import Foundation

/// Runs the built `ingestd` binary, as an operator would.
enum IngestdBinary {
    /// The `ingestd` built beside the tests, or the one `INGESTD_BINARY`
    /// names (scripts/test-platform-executors.sh runs binary tests against
    /// a build on the platform's executors).
    static var url: URL {
        if let path = ProcessInfo.processInfo.environment["INGESTD_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        var dir = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("ingestd").path), dir.path != "/" {
            dir.deleteLastPathComponent()
        }
        return dir.appendingPathComponent("ingestd")
    }

    /// This process's environment without what would make an agent under test
    /// behave as if a service manager, a proxy or a credential store were
    /// there: CI may itself run under systemd (NOTIFY_SOCKET, JOURNAL_STREAM,
    /// CREDENTIALS_DIRECTORY…) or behind a proxy. Tests that want one of
    /// these set it explicitly. scripts/fault-suite.py (HERMETIC_DROP) keeps
    /// the same list: change both together.
    static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in [
            "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "INVOCATION_ID",
            "CREDENTIALS_DIRECTORY", "STATE_DIRECTORY", "RUNTIME_DIRECTORY", "LISTEN_FDS", "LISTEN_PID",
            "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
        ] {
            environment[name] = nil
        }
        return environment
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs ingestd with `arguments`, feeding `stdin`, and waits for it.
    /// Output goes to temporary files, so neither pipe can fill and stall.
    /// Runs ingestd with a pseudo-terminal as its stdin, stdout and stderr
    /// (through script(1), from util-linux) and returns what it printed there.
    static func runOnTerminal(_ arguments: [String]) throws -> String {
        let quoted = ([url.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            .joined(separator: " ")
        let result = try run(["-q", "-e", "-c", quoted, "/dev/null"], wrapper: ["/usr/bin/script"], bare: true)
        return result.stdout
    }

    static func run(
        _ arguments: [String],
        stdin: Data? = nil,
        environment: [String: String]? = nil,
        wrapper: [String] = [],
        bare: Bool = false
    ) throws -> Result {
        let process = Process()
        if let tool = wrapper.first {
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = Array(wrapper.dropFirst()) + (bare ? [] : [url.path]) + arguments
        } else {
            process.executableURL = url
            process.arguments = arguments
        }
        process.environment = environment ?? Self.environment
        let outURL = FileManager.default.temporaryDirectory.appendingPathComponent("ingestd-out-\(UUID())")
        let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("ingestd-err-\(UUID())")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        // stdin from a file: a test never blocks writing to an agent that exited early.
        let inURL = FileManager.default.temporaryDirectory.appendingPathComponent("ingestd-in-\(UUID())")
        FileManager.default.createFile(atPath: inURL.path, contents: stdin ?? Data())
        defer { try? FileManager.default.removeItem(at: inURL) }
        process.standardInput = try FileHandle(forReadingFrom: inURL)
        try process.run()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
        )
    }
}

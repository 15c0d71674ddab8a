import EdgeIngestCore
import IngestAgent

/// Exit codes, after sysexits.h, so scripts and systemd can tell failures apart.
enum ExitCodes {
    static let unhealthy = ExitCode(1)
    static let notRunning = ExitCode(3)
    static let usageError = ExitCode(64)
    static let dataError = ExitCode(65)
    /// The agent did not answer in time (`send --timeout`: frozen, stopped).
    static let unavailable = ExitCode(69)
    static let ioError = ExitCode(74)
    /// Try again later (`send`: the agent stopped before confirming everything).
    static let tempFail = ExitCode(75)
    static let configError = ExitCode(78)

    /// The exit code for an error that ends `run`.
    static func forError(_ error: any Error) -> ExitCode {
        switch error {
        case is ConfigurationError: return configError
        case let e as EdgeIngestError:
            switch e.code {
            case .queueCorrupt, .queueFormatTooNew: return dataError
            // A migration that cannot convert the queue is the configuration's to fix.
            case .invalidConfiguration, .invalidSchema, .encryption, .migrationFailed: return configError
            default: return ioError
            }
        default: return ioError
        }
    }
}

/// Prints to standard error.
func printError(_ text: String) {
    var stderr = StandardError()
    print(text, to: &stderr)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var text = string
        text.withUTF8 { _ = fwriteStderr($0) }
    }
}

#if canImport(Glibc)
import Glibc
func fwriteStderr(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    write(2, bytes.baseAddress, bytes.count)
}
#endif

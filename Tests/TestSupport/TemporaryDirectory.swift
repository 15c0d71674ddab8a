import Foundation

/// A fresh directory per test, removed when the test ends (GRDB's
/// GRDBTestCase does the same): real files, never shared between tests.
public final class TemporaryDirectory {
    public let path: String

    public init() throws {
        var template = Array((NSTemporaryDirectory() + "edgeingest-test-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        path = String(cString: made)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

import CSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A swift-log backend that writes structured entries to the systemd
/// journal with `sd_journal_sendv`.
///
/// Each entry carries MESSAGE, PRIORITY (syslog levels), SYSLOG_IDENTIFIER,
/// CODE_FILE/CODE_LINE/CODE_FUNC, and every metadata value as its own field.
/// journald drops field names that are not `[A-Z0-9_]` (sd_journal_print(3)),
/// so `ingest.input` becomes `INGEST_INPUT`.
///
/// ```swift
/// LoggingSystem.bootstrap { label in JournalLogHandler(label: label, identifier: "ingestd") }
/// ```
package struct JournalLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    package var metadataProvider: Logger.MetadataProvider?
    package let label: String
    package let identifier: String

    package init(label: String, identifier: String) {
        self.label = label
        self.identifier = identifier
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields: [String] = [
            "MESSAGE=\(event.message)",
            "PRIORITY=\(JournalLogHandler.priority(event.level))",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "CODE_FILE=\(event.file)",
            "CODE_LINE=\(event.line)",
            "CODE_FUNC=\(event.function)",
            "LOGGER_LABEL=\(label)",
        ]
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        if let error = event.error { merged["error"] = "\(error)" }
        for (key, value) in merged {
            fields.append(JournalLogHandler.fieldName(key) + "=" + "\(value)")
        }
        JournalLogHandler.send(fields)
    }

    /// Maps swift-log levels to syslog priorities (0 emerg … 7 debug).
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// `ingest.input` → `INGEST_INPUT`: uppercase, anything outside
    /// `[A-Z0-9_]` becomes `_`, and a leading `_` or digit gets an `F`
    /// prefix (leading `_` is reserved for journald's trusted fields).
    static func fieldName(_ key: String) -> String {
        var out = ""
        for scalar in key.unicodeScalars {
            switch scalar {
            case "a"..."z": out.unicodeScalars.append(Unicode.Scalar(scalar.value - 32)!)
            case "A"..."Z", "0"..."9", "_": out.unicodeScalars.append(scalar)
            default: out.append("_")
            }
        }
        if out.isEmpty || out.first == "_" || out.first!.isNumber { out = "F" + out }
        return String(out.prefix(64))
    }

    /// Copies every field into one allocation, points an iovec at each,
    /// and sends them as one entry.
    private static func send(_ fields: [String]) {
        let total = fields.reduce(0) { $0 + $1.utf8.count }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 1)
        defer { storage.deallocate() }
        var vectors: [iovec] = []
        vectors.reserveCapacity(fields.count)
        var offset = 0
        for field in fields {
            let start = offset
            for byte in field.utf8 {
                storage[offset] = byte
                offset += 1
            }
            vectors.append(iovec(iov_base: storage.baseAddress! + start, iov_len: offset - start))
        }
        _ = vectors.withUnsafeBufferPointer { edgeingest_sd_journal_sendv($0.baseAddress, Int32($0.count)) }
    }
}

/// Whether stderr is connected to the journal: systemd sets
/// `$JOURNAL_STREAM` to the device and inode of that stream.
package func stderrIsJournal(environment: [String: String]) -> Bool {
    guard let value = environment["JOURNAL_STREAM"] else { return false }
    let parts = value.split(separator: ":")
    guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
    var info = stat()
    guard fstat(2, &info) == 0 else { return false }
    return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
}

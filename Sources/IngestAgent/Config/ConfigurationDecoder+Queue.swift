import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// `[queue]`: the file, its bounds and overflow policy, durability, the
/// schema version, group commit, and the encryption key
/// (``QueueSettings`` holds the defaults).
extension ConfigurationDecoder {
    static let queueKeys: Set<String> = [
        "path", "max_bytes", "max_records", "overflow_policy", "durability", "schema_version", "commit_max_records",
        "commit_interval_ms",
        "encryption_key_file", "compression",
    ]

    mutating func decodeQueue(_ queue: TOMLTable?, into c: inout AgentConfiguration, environment: [String: String]) {
        c.queuePath = string(queue?["path"], "queue.path")
        if let v = queue?["max_bytes"] { c.queue.maxBytes = integer(v, "queue.max_bytes", min: 1024) }
        if let v = queue?["max_records"] { c.queue.maxRecords = integer(v, "queue.max_records", min: 1) }
        let policies = ["block", "drop_newest", "drop_oldest"]
        if let policy = choice(
            queue?["overflow_policy"],
            "queue.overflow_policy",
            "must be one of \(policies.joined(separator: ", "))",
            choices: policies,
            OverflowPolicy.init(name:)
        ) {
            c.queue.overflowPolicy = policy
        }
        if let durability = choice(
            queue?["durability"],
            "queue.durability",
            "must be power_loss_safe or crash_safe",
            choices: ["power_loss_safe", "crash_safe"],
            Durability.init(name:)
        ) {
            c.queue.durability = durability
        }
        if let compression = choice(
            queue?["compression"],
            "queue.compression",
            "must be zstd or none",
            choices: QueueCompression.allCases.map(\.rawValue),
            QueueCompression.init(rawValue:)
        ) {
            c.queue.compression = compression
        }
        if let v = queue?["schema_version"], let n = integer(v, "queue.schema_version", min: 0) {
            c.queue.schemaVersion = n
        }
        if let v = queue?["commit_max_records"], let n = integer(v, "queue.commit_max_records", min: 1) {
            c.commitMaxRecords = Int(n)
        }
        if let v = queue?["commit_interval_ms"], let n = integer(v, "queue.commit_interval_ms", min: 1) {
            c.commitIntervalMilliseconds = Int(n)
        }
        c.queue.encryptionKey = encryptionKey(queue?["encryption_key_file"], environment: environment)
    }

    /// The queue key: 64 raw bytes or 128 hexadecimal digits, from
    /// `queue.encryption_key_file`, else the systemd credential `queue-key`.
    mutating func encryptionKey(_ value: TOMLValue?, environment: [String: String]) -> [UInt8]? {
        var path = string(value, "queue.encryption_key_file")
        if path == nil, let directory = environment["CREDENTIALS_DIRECTORY"],
            let credential = try? readSmallFile(directory + "/queue-key", limit: FileLimits.small),
            !credential.allSatisfy({ $0 == 0x0A || $0 == 0x20 })
        {
            path = directory + "/queue-key"  // the unit's SetCredential= default (a newline) means "no key"
        }
        guard let path else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try readSmallFile(path, limit: FileLimits.small)
        } catch {
            problem(value, "queue.encryption_key_file", "'\(path)' cannot be read: \(error.reason)")
            return nil
        }
        if bytes.count == 64 { return bytes }
        var text = bytes
        while let last = text.last, last == 0x0A || last == 0x0D || last == 0x20 { text.removeLast() }
        if text.count == 128, let key = Secrets.bytes(hex: Substring(decoding: text, as: UTF8.self)) { return key }
        problem(
            value,
            "queue.encryption_key_file",
            "'\(path)' must hold exactly 64 bytes, or 128 hexadecimal digits (make one with: head -c 64 /dev/urandom > FILE); it holds \(bytes.count) bytes"
        )
        return nil
    }
}

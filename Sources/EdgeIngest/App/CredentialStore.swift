import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// The metadata file that caches logged-in users beside the queues
/// (`<metadata directory>/users.json`, mode 0600 in a 0700 directory), so
/// ``App/currentUser`` is there after a restart with no network.
///
/// Written atomically (temporary file, fsync, rename, fsync of the
/// directory): a power cut leaves the old or the new file, never half of
/// one. Tokens are kept here and nowhere else; nothing logs them.
struct CredentialStore: Sendable {
    struct Contents: Codable, Sendable, Equatable {
        var version = 1
        var users: [StoredUser] = []
        /// The user ``App/currentUser`` returns: the last one to log in.
        var currentUserID: String?
    }

    let directory: String
    var path: String { directory + "/users.json" }

    func load() throws -> Contents {
        guard let bytes = readFileBytes(path) else {
            if errno == ENOENT { return Contents() }
            throw EdgeIngestError(.storage, "Cannot read the credential cache '\(path)': \(errnoText()).")
        }
        do {
            return try JSONDecoder().decode(Contents.self, from: Data(bytes))
        } catch {
            throw EdgeIngestError(
                .storage,
                "The credential cache '\(path)' is not readable JSON. Remove it and log in again (queued records are not affected)."
            )
        }
    }

    func save(_ contents: Contents) throws {
        try QueueFile.makeDirectories(directory)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(contents)
        if let reason = writeFileAtomically(path, Array(data), durable: true) {
            throw EdgeIngestError(.storage, "Cannot write the credential cache '\(path)': \(reason).")
        }
    }
}

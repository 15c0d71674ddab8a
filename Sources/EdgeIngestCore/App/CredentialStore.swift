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
        let bytes: [UInt8]
        do {
            bytes = try readSmallFile(path, limit: FileLimits.small)
        } catch {
            if error.isMissing { return Contents() }
            throw EdgeIngestError(.storage, "Cannot read the credential cache \(error).")
        }
        guard let json = try? JSONValue.parse(bytes), let contents = Contents(json: json) else {
            throw EdgeIngestError(
                .storage,
                "The credential cache '\(path)' is not readable JSON. Remove it and log in again (queued records are not affected)."
            )
        }
        return contents
    }

    func save(_ contents: Contents) throws {
        try QueueFile.makeDirectories(directory)
        var data: [UInt8] = []
        contents.json.write(to: &data)
        do {
            try writeFileAtomically(path, data, durable: true)
        } catch {
            throw EdgeIngestError(.storage, "Cannot write the credential cache '\(path)': \(error.reason).")
        }
    }
}

/// The cache's JSON, with the member names Swift's Codable gives these
/// types (files written by earlier versions read the same).
extension CredentialStore.Contents {
    var json: JSONValue {
        .object(omittingNils: [
            ("currentUserID", currentUserID.map(JSONValue.string)),
            ("users", .array(users.map(\.json))),
            ("version", .int(Int64(version))),
        ])
    }

    init?(json: JSONValue) {
        guard let version = json["version"]?.int64, let users = json["users"]?.array else { return nil }
        self.version = Int(version)
        self.users = []
        for user in users {
            guard let stored = StoredUser(json: user) else { return nil }
            self.users.append(stored)
        }
        switch json["currentUserID"] {
        case nil, .null?: currentUserID = nil
        case .string(let id)?: currentUserID = id
        default: return nil
        }
    }
}

extension StoredUser {
    var json: JSONValue {
        .object([
            ("accessExpiresAt", .int(accessExpiresAt)),
            ("accessToken", .string(accessToken)),
            ("id", .string(id)),
            ("loggedInAt", .int(loggedInAt)),
            ("provider", .string(provider)),
            ("refreshRefused", .bool(refreshRefused)),
            ("refreshToken", .string(refreshToken)),
        ])
    }

    init?(json: JSONValue) {
        guard let id = json["id"]?.string, let provider = json["provider"]?.string,
            let accessToken = json["accessToken"]?.string, let accessExpiresAt = json["accessExpiresAt"]?.int64,
            let refreshToken = json["refreshToken"]?.string, let loggedInAt = json["loggedInAt"]?.int64
        else { return nil }
        // Absent (files from before the flag) is false; any other value is damage.
        let refreshRefused: Bool
        switch json["refreshRefused"] {
        case nil: refreshRefused = false
        case .bool(let b)?: refreshRefused = b
        default: return nil
        }
        self.init(
            id: id,
            provider: provider,
            accessToken: accessToken,
            accessExpiresAt: accessExpiresAt,
            refreshToken: refreshToken,
            loggedInAt: loggedInAt,
            refreshRefused: refreshRefused
        )
    }
}

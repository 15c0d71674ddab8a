/// Why a JetStream delivery did not succeed, sorted the way the uploader
/// acts on it: `configuration` and `refused` hold (nothing to gain from
/// trying at once), `transient` retries after a backoff, `tooLarge` and
/// `badRecord` split the batch down to the record.
package struct JetStreamError: Error, CustomStringConvertible, Sendable {
    package enum Kind: Sendable { case configuration, refused, transient, tooLarge, badRecord }
    package let kind: Kind
    package let message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }

    /// The error for a server's `-ERR` line.
    static func fromServerError(_ text: String, server: NATSServerAddress) -> JetStreamError {
        let lower = text.lowercased()
        if lower.contains("permissions violation") {
            return JetStreamError(
                .refused,
                "the NATS server \(server) does not allow this user that subject (\(text)): check the user's publish permissions"
            )
        }
        if lower.contains("authorization") || lower.contains("authentication") || lower.contains("user") {
            return JetStreamError(
                .refused,
                "the NATS server \(server) refused the credentials (\(text)): check username/password_file, token_file, nkey_seed_file or credentials_file"
            )
        }
        if lower.contains("maximum payload") {
            return JetStreamError(.tooLarge, "the NATS server \(server) refused a message as too large (\(text))")
        }
        if lower.contains("maximum control line") || lower.contains("invalid subject") {
            return JetStreamError(.badRecord, "the NATS server \(server) refused a message's subject (\(text))")
        }
        return JetStreamError(.transient, "the NATS server \(server) said: \(text)")
    }
}

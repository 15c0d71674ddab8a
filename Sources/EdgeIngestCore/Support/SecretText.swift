/// A secret as a file, a systemd credential or a pipe holds it — one rule
/// for every reader (tokens, API keys, passwords, `ingestd hash-secret`), so
/// what is hashed on one side is what is sent from the other:
///
/// - surrounding whitespace goes (the newline `echo` and editors add);
/// - nothing left means no secret (the unit's empty `SetCredential=`
///   default is a bare newline);
/// - a secret of several lines is refused, not joined or cut at its first
///   line (`base64` wraps at 76 characters: use `base64 -w0`).
///
/// ```swift
/// SecretText("s3cret\n")      // .secret("s3cret")
/// SecretText("\n")            // .absent
/// SecretText("abc\ndef\n")    // .severalLines
/// ```
package enum SecretText: Equatable {
    case absent
    case secret(String)
    case severalLines

    package init(_ text: String) {
        let trimmed = text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()
        let secret = String(trimmed)
        if secret.isEmpty {
            self = .absent
        } else if secret.contains(where: \.isNewline) {
            self = .severalLines
        } else {
            self = .secret(secret)
        }
    }

    /// What to tell the operator about `source` holding no usable secret.
    package func problem(_ source: String) -> String? {
        switch self {
        case .secret: return nil
        case .absent: return "'\(source)' is empty"
        case .severalLines:
            return
                "'\(source)' holds more than one line: a secret is one line (for a key made with base64, use `base64 -w0`)"
        }
    }
}

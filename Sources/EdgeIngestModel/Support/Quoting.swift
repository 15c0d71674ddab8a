/// The longest excerpt of an offending value that an error message quotes.
package let quotedValueLimit = 32

/// Quotes `text` for an error message, truncated to ``quotedValueLimit``
/// Unicode scalars with an ellipsis (scalars, not characters: one character
/// can carry any number of combining marks), control characters escaped, so
/// that a message names what was wrong without copying a payload into the log.
package func quoted(_ text: some StringProtocol) -> String {
    var out = "\""
    var count = 0
    for scalar in text.unicodeScalars {
        if count == quotedValueLimit {
            out += "…"
            break
        }
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            out += "\\u{\(String(scalar.value, radix: 16))}"
        default: out.unicodeScalars.append(scalar)
        }
        count += 1
    }
    return out + "\""
}

/// An SQL identifier in double quotes, inner quotes doubled (SQLite and
/// PostgreSQL alike): `we"ird` → `"we""ird"`.
package func sqlIdentifier(_ name: String) -> String {
    "\"" + name.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
}

/// An SQL string literal in single quotes, inner quotes doubled:
/// `A'x` → `'A''x'`.
package func sqlStringLiteral(_ text: String) -> String {
    "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
}

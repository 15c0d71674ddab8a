import Foundation
import Testing

/// `ingestd hash-secret` reads a secret by the same rule as the agent reads
/// its secret files (surrounding whitespace dropped, several lines refused),
/// so the hash on the server matches what the edge sends.
@Suite struct HashSecretTests {
    @Test func surroundingWhitespaceIsNotPartOfTheSecret() throws {
        let key = "k3y-0123456789-abcdefghij"
        let plain = try IngestdBinary.run(["hash-secret", "--api-key"], stdin: Data(key.utf8))
        let padded = try IngestdBinary.run(["hash-secret", "--api-key"], stdin: Data("  \(key) \n\n".utf8))
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout.hasPrefix("sha256$"), "\(plain.stdout)")
        #expect(padded.stdout == plain.stdout)
    }

    @Test func aSecretOfSeveralLinesIsRefusedNotCutAtItsFirstLine() throws {
        // `base64` wraps at 76 characters: what `head -c 64 /dev/urandom | base64` prints.
        let wrapped = String(repeating: "A", count: 76) + "\n" + String(repeating: "B", count: 12) + "==\n"
        let result = try IngestdBinary.run(["hash-secret", "--api-key"], stdin: Data(wrapped.utf8))
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("more than one line: a secret is one line"), "\(result.stderr)")
        #expect(result.stderr.contains("base64 -w0"))
    }
}

import EdgeIngest
import Foundation
import Testing

@Suite struct CommandLineTests {
    @Test func versionPrintsTheLibraryVersion() throws {
        let result = try IngestdBinary.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == EdgeIngestVersion.current + "\n")
    }

    @Test func helpDescribesTheAgent() throws {
        let result = try IngestdBinary.run(["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE: ingestd"))
        #expect(result.stdout.contains("--version"))
    }

    @Test func unknownOptionIsAUsageErrorWithExitCode64() throws {
        let result = try IngestdBinary.run(["--no-such-option"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("Unknown option '--no-such-option'"))
    }
}

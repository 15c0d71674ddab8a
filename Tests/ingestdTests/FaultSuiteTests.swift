import Foundation
import TestSupport
import Testing

/// The short run of the fault-injection suite (scripts/fault-suite.py)
/// against the binary built beside the tests: kill -9 rounds, power cuts
/// below the agent, kill -9 over the SQLite archive sink, kill -9 of either
/// side of an edge → gateway relay (two ingestd), a backend that is
/// down, a flapping network. The full run
/// (100 rounds, 10 minutes down) is `scripts/fault-suite.sh --full`;
/// docs/RELIABILITY.md has its last results.
@Suite(.serialized) struct FaultSuiteTests {
    static let script = repositoryRoot.appendingPathComponent("scripts/fault-suite.py").path

    @Test(arguments: ["kill9", "powercut", "archive", "relay", "down", "flapping"])
    func everyReadingArrivesExactlyOnce(scenario: String) throws {
        let result = try IngestdBinary.run(
            ["python3", Self.script, "--binary", IngestdBinary.url.path, "--only", scenario],
            wrapper: ["/usr/bin/env"],
            bare: true
        )
        // The table row for the scenario: "| kill9 | rounds | readings | received | lost | duplicates | …".
        let row = result.stdout.split(separator: "\n").first { $0.hasPrefix("| \(scenario) |") }
        let cells = row.map { $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr.suffix(3000))")
        #expect(
            cells.count >= 9 && cells[4] == "0" && cells[5] == "0" && cells[8] == "pass",
            "\(row ?? "no result row")"
        )
        #expect(
            cells.count >= 4 && Int(cells[3]) ?? 0 > 0 && cells[2] == cells[3],
            "received must equal readings: \(row ?? "")"
        )
    }
}

import Foundation
import TestSupport
import Testing

/// The shipped unit file must stay hardened and valid: scored and verified
/// by the real systemd-analyze, with the built binary as ExecStart (verify
/// checks that the command exists).
@Suite struct UnitFileTests {
    static let root = repositoryRoot
    static var analyzeAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") }

    func unitText(withDropIn dropIn: String? = nil) throws -> String {
        var unit = try String(contentsOf: Self.root.appendingPathComponent("systemd/ingestd.service"), encoding: .utf8)
        unit = unit.replacingOccurrences(of: "/usr/bin/ingestd", with: IngestdBinary.url.path)
        if let dropIn {
            let lines = try String(contentsOf: Self.root.appendingPathComponent("systemd/\(dropIn)"), encoding: .utf8)
                .split(separator: "\n").filter { !$0.hasPrefix("#") && $0 != "[Service]" }
            unit = unit.replacingOccurrences(of: "[Install]", with: lines.joined(separator: "\n") + "\n\n[Install]")
        }
        return unit
    }

    func analyze(_ arguments: [String]) throws -> ToolResult {
        try runTool("/usr/bin/systemd-analyze", arguments)
    }

    func exposure(of unit: String) throws -> Double {
        let dir = try TemporaryDirectory()
        let path = dir.file("ingestd.service")
        try unit.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try analyze(["security", "--offline=true", "--no-pager", path])
        let line = try #require(result.output.split(separator: "\n").last { $0.contains("Overall exposure level") })
        let number = line.split(separator: ":").last!.split(separator: " ").first!
        return try #require(Double(number))
    }

    @Test(.enabled(if: analyzeAvailable)) func securityExposureIsAtMostTwo() throws {
        #expect(try exposure(of: unitText()) <= 2.0)
    }

    @Test(.enabled(if: analyzeAvailable)) func serialDropInKeepsExposureAtMostTwo() throws {
        #expect(try exposure(of: unitText(withDropIn: "ingestd-serial.conf")) <= 2.0)
    }

    @Test(.enabled(if: analyzeAvailable), arguments: [nil, "ingestd-serial.conf"])
    func verifyIsClean(dropIn: String?) throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("ingestd.service")
        try unitText(withDropIn: dropIn).write(toFile: path, atomically: true, encoding: .utf8)
        // The service requires its socket unit: verified together, as installed.
        let socket = dir.file("ingestd.socket")
        try String(contentsOf: Self.root.appendingPathComponent("systemd/ingestd.socket"), encoding: .utf8)
            .write(toFile: socket, atomically: true, encoding: .utf8)
        let result = try analyze(["verify", path, socket])
        #expect(result.status == 0)
        #expect(result.output.isEmpty, "\(result.output)")
    }

    @Test func unitIsANotifyServiceWithWatchdogAndState() throws {
        let unit = try unitText()
        for line in [
            "Type=notify", "WatchdogSec=30s", "Restart=on-failure", "DynamicUser=yes", "StateDirectory=ingestd",
            "ConfigurationDirectory=ingestd", "LoadCredential=upload-token:/etc/ingestd/credentials/upload-token",
            #"SetCredential=upload-token:\n"#, "ExecReload=/bin/kill -HUP $MAINPID", "Requires=ingestd.socket",
        ] {
            #expect(unit.contains("\n" + line + "\n"), "missing \(line)")
        }
    }
}

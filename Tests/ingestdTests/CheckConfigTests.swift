import Foundation
import TestSupport
import Testing

@Suite struct CheckConfigTests {
    @Test func theExampleConfigurationIsValid() throws {
        let root = repositoryRoot
        let result = try IngestdBinary.run([
            "check-config", "--config", root.appendingPathComponent("etc/ingestd.toml").path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "WeatherSensor(deviceId: string, temperatureInFahrenheit: double, barometricPressureInHg: double, windSpeedInMph: int)"
            )
        )
        // What MemoryMax= it needs (no HTTP input: the agent's own floor).
        #expect(
            result.stdout.contains("  memory: a limit (systemd's MemoryMax=) of at least 16 MiB"),
            "\(result.stdout)"
        )
        let backend = try IngestdBinary.run([
            "check-config", "--config", root.appendingPathComponent("etc/backend.toml").path,
        ])
        #expect(
            backend.stdout.contains("  memory: a limit (systemd's MemoryMax=) of at least 32 MiB"),
            "\(backend.stdout)"
        )
    }

    @Test func everyProblemIsReportedWithItsLineAndKey() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("bad.toml")
        try """
        [queue]
        overflow_policy = "drop"
        max_bytes = "lots"

        [types.WeatherSensor]
        deviceId = "text"
        windSpeedInMph = "int"

        [[inputs]]
        kind = "stdin"
        type = "DoorSensor"
        colour = "red"
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try IngestdBinary.run(["check-config", "--config", path])
        #expect(result.status == 78)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == "The configuration '\(path)' has 5 problems:")
        #expect(
            lines.contains(
                "  \(path):line 2: queue.overflow_policy: must be one of block, drop_newest, drop_oldest, got \"drop\""
            )
        )
        #expect(lines.contains("  \(path):line 3: queue.max_bytes: must be an integer, got a string"))
        #expect(
            lines.contains(
                "  \(path):line 6: types.WeatherSensor.deviceId: unknown field type \"text\": use string, int, double, bool, timestamp or objectId (add '?' for optional)"
            )
        )
        #expect(
            lines.contains(
                "  \(path):line 11: inputs[0].type: names no declared type: declare [types.DoorSensor] or use one of WeatherSensor"
            )
        )
        #expect(lines.contains { $0.hasPrefix("  \(path):line 12: inputs[0].colour: unknown key: expected one of") })
    }

    @Test func aSyntaxErrorNamesItsLine() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("broken.toml")
        try "[agent]\nlog_level = info\n".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try IngestdBinary.run(["check-config", "--config", path])
        #expect(result.status == 78)
        #expect(result.stderr.contains("line 2: 'info' is not a value: quote strings"))
    }

    @Test func aMissingFileSaysSo() throws {
        let result = try IngestdBinary.run(["check-config", "--config", "/nonexistent/ingestd.toml"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("'/nonexistent/ingestd.toml'"))
        #expect(result.stderr.contains("cannot be read: No such file or directory"))
    }
}

@Suite struct EveryInputKindConfigTests {
    @Test func theCommentedExamplesInTheExampleConfigAreValidWhenUncommented() throws {
        let root = repositoryRoot
        let example = try String(contentsOf: root.appendingPathComponent("etc/ingestd.toml"), encoding: .utf8)
        // Uncomment the example [[inputs]] blocks (lines "# key = value" after "# [[inputs]]").
        var out: [String] = []
        var inBlock = false
        for line in example.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "# [[inputs]]" || line == "# [upload]" {
                inBlock = true
                out.append(String(line.dropFirst(2)))
            } else if inBlock, line.hasPrefix("# ") {
                // Keys naming files this machine does not have stay commented,
                // owner_field (the example's type has no owner field), and
                // urls (instead of url, not with it).
                let needsAFile =
                    line.contains("_file =") || line.hasPrefix("# client_certificate") || line.hasPrefix("# client_key")
                    || line.hasPrefix("# tls_") || line.hasPrefix("# owner_field") || line.hasPrefix("# urls")
                out.append(needsAFile ? String(line) : String(line.dropFirst(2)))
            } else {
                inBlock = false
                out.append(String(line))
            }
        }
        let dir = try TemporaryDirectory()
        let path = dir.file("all.toml")
        try out.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try IngestdBinary.run(["check-config", "--config", path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "inputs: socket:ingestd.sock (ndjson, type WeatherSensor), stdin (ndjson, type WeatherSensor), file:/var/log/sensors/*.ndjson (ndjson, type WeatherSensor), serial:/dev/ttyUSB0 (ndjson, type WeatherSensor), http:127.0.0.1:8480 (ndjson, type WeatherSensor)"
            )
        )
        #expect(
            result.stdout.contains(
                "upload: https://backend.example/ingest/v1/batches, 4000 records per batch, gzip false, token none"
            )
        )
        #expect(out.contains("headers = { \"X-Site\" = \"north\" }"), "the last example key was uncommented too")
    }
}

@Suite struct UploadTokenCredentialTests {
    func check(credential: String?, tokenFile: String? = nil) throws -> IngestdBinary.Result {
        let dir = try TemporaryDirectory()
        let credentials = dir.file("credentials")
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        if let credential {
            try credential.write(toFile: credentials + "/upload-token", atomically: true, encoding: .utf8)
        }
        let config = dir.file("c.toml")
        try """
        [upload]
        url = "https://backend.example/ingest"
        \(tokenFile.map { "token_file = \"\($0)\"" } ?? "")
        [types.T]
        v = "int"
        """.write(toFile: config, atomically: true, encoding: .utf8)
        var environment = IngestdBinary.environment
        environment["CREDENTIALS_DIRECTORY"] = credentials
        return try IngestdBinary.run(["check-config", "--config", config], environment: environment)
    }

    @Test func theSystemdCredentialIsTheToken() throws {
        let result = try check(credential: "s3cr3t\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("token set"))
        #expect(!result.stdout.contains("s3cr3t"))
    }

    @Test func theUnitsDefaultCredentialMeansNoToken() throws {
        let result = try check(credential: "\n")  // SetCredential=upload-token:\n
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("token none"))
    }

    @Test func anEmptyExplicitTokenFileIsStillAnError() throws {
        let dir = try TemporaryDirectory()
        try "".write(toFile: dir.file("token"), atomically: true, encoding: .utf8)
        let result = try check(credential: nil, tokenFile: dir.file("token"))
        #expect(result.status == 78)
        #expect(result.stderr.contains("upload.token_file: '\(dir.file("token"))' is empty"))
    }
}

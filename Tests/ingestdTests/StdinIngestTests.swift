import Foundation
import Testing

@Suite struct StdinIngestTests {
    @Test func goodLinesAroundBadOnesAreAllQueuedAndEveryBadLineIsReported() throws {
        let fixture = try AgentFixture()
        var input = Data()
        func line(_ s: String) { input.append(Data((s + "\n").utf8)) }
        line(reading(1))  // 1
        // 2 type_mismatch
        line(#"{"deviceId":"WX1","windSpeedInMph":"fast","temperatureInFahrenheit":1,"barometricPressureInHg":2}"#)
        line(reading(2))  // 3
        line(#"{"deviceId":"WX1", "#)  // 4 malformed_json
        input.append(Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D, 0x0A]))  // 5 invalid_utf8
        line(String(repeating: "x", count: 1000))  // 6 line_too_long (max 256)
        line("")  // 7 blank: skipped
        line(reading(3) + "\r")  // 8 CRLF tolerated
        line(#"{"deviceId":"WX1","temperatureInFahrenheit":1,"barometricPressureInHg":2}"#)  // 9 missing_field
        line(#"{"_type":"Nope","deviceId":"WX1"}"#)  // 10 unknown_type
        input.append(Data(reading(4).utf8))  // 11, no final newline
        let result = try fixture.run(["run"], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")

        // Every good line is queued, in order.
        let queued = try fixture.queuedLines()
        #expect(queued.count == 4)
        #expect(queued.map { $0.contains(#""windSpeedInMph":"#) } == [true, true, true, true])
        #expect(zip(queued, [1, 2, 3, 4]).allSatisfy { $0.hasSuffix(#""windSpeedInMph":\#($1)}"#) })

        // Status counts match.
        let status = try fixture.status()
        #expect(status["accepted_total"] as? Int == 4)
        #expect(status["rejected_total"] as? Int == 6)
        #expect(status["queued_records"] as? Int == 4)
        #expect(
            status["rejected_by_reason"] as? [String: Int]
                == [
                    "type_mismatch": 1, "malformed_json": 1, "invalid_utf8": 1, "line_too_long": 1, "missing_field": 1,
                    "unknown_type": 1,
                ]
        )
        #expect(status["state"] as? String == "stopped")

        // Each rejection is logged with input, line number and reason…
        for (lineNumber, reason) in [
            (2, "type_mismatch"), (4, "malformed_json"), (5, "invalid_utf8"), (6, "line_too_long"),
            (9, "missing_field"), (10, "unknown_type"),
        ] {
            #expect(
                result.stderr.contains("ingest.input=stdin ingest.line=\(lineNumber) ingest.reason=\(reason)"),
                "line \(lineNumber) not logged as \(reason)"
            )
        }
        #expect(result.stderr.contains(#"field 'windSpeedInMph' must be an integer, got "fast""#))
        // …and kept in the rejects file with the line itself.
        let rejects = try fixture.rejects()
        #expect(rejects.map { $0["line"] as? Int } == [2, 4, 5, 6, 9, 10])
        try #require(rejects.count == 6)
        #expect(
            rejects[0]["raw"] as? String
                == #"{"deviceId":"WX1","windSpeedInMph":"fast","temperatureInFahrenheit":1,"barometricPressureInHg":2}"#
        )
        #expect(rejects[2]["raw_hex"] as? String == "7b22fffe227d")
        #expect(rejects[3]["raw_bytes"] as? Int == 1000)
        #expect(rejects[3]["raw"] == nil)
    }

    @Test func csvWithAHeaderRowIsQueued() throws {
        let fixture = try AgentFixture()
        let csv = """
            deviceId,temperatureInFahrenheit,barometricPressureInHg,windSpeedInMph
            WX1,66.7,29.65,2
            "WX,2",70,29.9,3
            WX3,warm,29.9,4
            WX4,71.5,29.9
            WX5,72,30,5

            """
        let result = try fixture.run(["run", "--format", "csv"], stdin: Data(csv.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let queued = try fixture.queuedLines()
        try #require(queued.count == 3)
        #expect(queued[1].contains(#""deviceId":"WX,2","temperatureInFahrenheit":70,"#))
        let status = try fixture.status()
        #expect(status["rejected_by_reason"] as? [String: Int] == ["type_mismatch": 1, "malformed_csv": 1])
        #expect(result.stderr.contains("ingest.line=4 ingest.reason=type_mismatch"))
        #expect(result.stderr.contains("expected 4 columns as in the header, got 3"))
    }

    @Test func countsAccumulateAcrossRunsAndTheQueueKeepsEverything() throws {
        let fixture = try AgentFixture()
        _ = try fixture.run(["run"], stdin: Data((reading(1) + "\nbad\n").utf8))
        _ = try fixture.run(["run"], stdin: Data((reading(2) + "\n").utf8))
        let status = try fixture.status()
        #expect(status["accepted_total"] as? Int == 2)
        #expect(status["rejected_total"] as? Int == 1)
        #expect(try fixture.queuedLines().count == 2)
    }

    @Test func readingsMayNameTheirTypeWithUnderscoreType() throws {
        let fixture = try AgentFixture(inputs: "[[inputs]]\nkind = \"stdin\"\n")
        let line =
            #"{"_type":"WeatherSensor","_id":"507f1f77bcf86cd799439011","deviceId":"WX","temperatureInFahrenheit":1,"barometricPressureInHg":2,"windSpeedInMph":3}"#
        let result = try fixture.run(["run"], stdin: Data((line + "\n").utf8))
        #expect(result.status == 0)
        #expect(
            try fixture.queuedLines() == [
                #"{"_id":"507f1f77bcf86cd799439011","deviceId":"WX","temperatureInFahrenheit":1,"barometricPressureInHg":2,"windSpeedInMph":3}"#
            ]
        )
    }

    /// An unattended box never stays down on a damaged file: one that is
    /// not even SQLite cannot be rebuilt, so it is moved aside, byte for
    /// byte, and collecting goes on in a new queue.
    @Test func aQueueFileBeyondRepairIsMovedAsideAndCollectingGoesOn() throws {
        let fixture = try AgentFixture()
        try FileManager.default.createDirectory(atPath: fixture.stateDirectory, withIntermediateDirectories: true)
        let garbage = Data(repeating: 0x5A, count: 4096)
        try garbage.write(to: URL(fileURLWithPath: fixture.stateDirectory + "/queue.sqlite"))
        let result = try fixture.run(["run"], stdin: Data((reading(1) + "\n").utf8))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("is damaged or not a database"), "\(result.stderr)")
        #expect(result.stderr.contains("moved aside and an empty queue started"), "\(result.stderr)")
        let copies = try FileManager.default.contentsOfDirectory(atPath: fixture.stateDirectory)
            .filter { $0.hasPrefix("queue.sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
        #expect(copies.count == 1, "\(copies)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.stateDirectory + "/" + copies[0])) == garbage)
        #expect(try fixture.status()["accepted_total"] as? Int == 1)
    }
}

@Suite struct StdinDevNullTests {
    @Test func stdinFromDevNullExplainsWhyTheAgentStops() throws {
        let fixture = try AgentFixture()
        let process = Process()
        process.executableURL = IngestdBinary.url
        process.arguments = ["run", "--config", fixture.configPath]
        process.environment = IngestdBinary.environment
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        let err = Pipe()
        process.standardError = err
        try process.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text.contains("stdin is /dev/null (as under systemd), so this input ends at once"))
    }
}

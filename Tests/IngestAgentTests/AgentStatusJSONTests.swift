import EdgeIngestCore
import Foundation
import TestSupport
import Testing

@testable import IngestAgent

/// The status file is written without Foundation; Foundation's JSONEncoder
/// (what wrote it before, and what AgentStatus's Codable conformance gives
/// an embedding app) is the reference for its members.
@Suite struct AgentStatusJSONTests {
    static func full() -> AgentStatus {
        var input = InputCounters.Snapshot(name: "files", kind: "file")
        input.linesRead = 10
        input.accepted = 8
        input.rejected = 2
        input.rejectedByReason = ["bad_json": 1, "missing_field": 1]
        input.position = "offset 42"
        input.files = ["/var/log/a.ndjson": 42, "/var/log/b.ndjson": 0]
        input.heartbeatAt = 1_700_000_000_123
        input.waitingForSpace = true
        input.finished = true
        input.disconnected = true
        input.problem = "disk full"
        input.listen = "127.0.0.1:8080"
        input.duplicates = 3
        input.throttledBatches = 4
        input.tlsCertificateExpiresAt = "2099-01-01T00:00:00.000Z"
        var status = AgentStatus(
            state: .backingOff,
            statistics: .empty,
            inputs: [input, InputCounters.Snapshot(name: "stdin", kind: "stdin")],
            pid: 4242,
            problem: "held: \"403\"\n"
        )
        status.openState = "connecting"
        status.queuedRecords = 5
        status.queuedBytes = 500
        status.oldestAgeSeconds = 12.345
        status.acceptedTotal = 9
        status.rejectedTotal = 2
        status.rejectedByReason = ["bad_json": 2]
        status.uploadedTotal = 4
        status.droppedTotal = 1
        status.droppedByReason = ["exported": 1]
        status.lastUpload = .init(at: "2026-11-22T10:00:00.000Z", outcome: "stored 4")
        status.deadLetterRecords = 1
        status.uploadReason = "HTTP 503"
        status.backingOffUntil = "2026-11-22T10:00:05.000Z"
        status.uploadRequests = 7
        status.uploadResends = 2
        status.uploadDuplicatesDropped = 5
        status.uploadPotentialDuplicates = 1
        status.receivedDuplicatesTotal = 6
        status.receivedConflictsTotal = 2
        status.gatewayMemoryForgottenAt = "2026-11-28T08:00:00.000Z"
        status.refreshMilliseconds = 5000
        status.quarantinedRecords = 7
        status.reloadRefused = "at 2026-11-28T05:00:00Z: line 3: queue.overflow_policy: must be block or drop_oldest"
        status.clock = "synchronised"
        status.clockForSeconds = 600
        status.clockSinceBoot = true
        status.clockJumpsTotal = 1
        status.clockLastJumpMilliseconds = 50_492_160_000
        var latency = UploadLatency()
        latency.record(seconds: 0.02)
        latency.record(seconds: 1.5)
        status.uploadLatency = latency
        var sink = SinkSnapshot(name: "site")
        sink.state = "backing_off"
        sink.reason = "Could not connect to 127.0.0.1:9: connection refused"
        sink.queuedRecords = 12
        sink.queuedBytes = 2_048
        sink.uploaded = 30
        sink.deadLettered = 1
        sink.dropped = ["sink_lagged": 4]
        sink.lastUploadAt = "2026-11-28T05:00:00.000Z"
        sink.lastOutcome = "stored 30"
        var idle = SinkSnapshot(name: "upload")
        idle.state = "idle"
        status.sinks = [sink, idle]
        return status
    }

    func foundation(_ text: String) throws -> NSDictionary {
        try JSONSerialization.jsonObject(with: Data(text.utf8)) as! NSDictionary
    }

    func codable(_ status: AgentStatus) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(status), as: UTF8.self)
    }

    @Test(arguments: [true, false])
    func theStatusIsTheDocumentCodableWrites(sparse: Bool) throws {
        let status = sparse ? AgentStatus(state: .idle, statistics: .empty, inputs: [], pid: 1) : Self.full()
        for pretty in [true, false] {
            #expect(try foundation(status.json(pretty: pretty)) == (try foundation(codable(status))))
        }
        #expect(try AgentStatus.decode(status.json()) == status)
        #expect(try AgentStatus.decode(codable(status)) == status)
        #expect(try JSONDecoder().decode(AgentStatus.self, from: Data(status.json().utf8)) == status)
    }

    /// The comparison with Codable above covers every member only if
    /// `full()` leaves no optional unset: a new property must be set there
    /// (and so written by `jsonValue`) or this fails.
    @Test func theFullStatusSetsEveryProperty() {
        func unset(_ value: Any) -> [String] {
            Mirror(reflecting: value).children.compactMap { child in
                let mirror = Mirror(reflecting: child.value)
                return mirror.displayStyle == .optional && mirror.children.isEmpty ? child.label : nil
            }
        }
        let status = Self.full()
        #expect(unset(status).isEmpty)
        #expect(unset(status.inputs[0]).isEmpty)
        #expect(unset(status.sinks![0]).isEmpty)
    }

    @Test func membersAreSortedByName() throws {
        let text = Self.full().json(pretty: false)
        let value = try JSONValue.parse(Array(text.utf8))
        let names = value.members!.map(\.0)
        #expect(names == names.sorted())
        #expect(names.first == "accepted_total" && names.last == "uploaded_total")
    }

    @Test func aDamagedStatusFileSaysWhichMember() throws {
        var text = Self.full().json(pretty: false)
        text = text.replacingOccurrences(of: #""queued_records":5"#, with: #""queued_records":"five""#)
        #expect { try AgentStatus.decode(text) } throws: { error in
            "\(error)"
                == "the status file is not what ingestd writes: 'queued_records' in the status should be an integer"
        }
        #expect { try AgentStatus.decode("{\"state\":") } throws: { error in
            "\(error)".contains("invalid JSON at byte 9")
        }
        #expect { try AgentStatus.decode("[]") } throws: { error in
            "\(error)".contains("the status is not a JSON object")
        }
        for pid in ["0", "-1", "4294967295", "1.5"] {
            let badPid = Self.full().json(pretty: false).replacingOccurrences(
                of: #""pid":4242"#,
                with: #""pid":"# + pid
            )
            #expect { try AgentStatus.decode(badPid) } throws: { error in
                "\(error)".contains("'pid' in the status should be")
            }
        }
        let badInput = Self.full().json(pretty: false).replacingOccurrences(
            of: #""linesRead":10"#,
            with: #""linesRead":null"#
        )
        #expect { try AgentStatus.decode(badInput) } throws: { error in
            "\(error)".contains("'linesRead' in an input should be an integer")
        }
    }

    @Test func anyAgeInADamagedFileIsShownWithoutTrapping() throws {
        var status = Self.full()
        for (age, whole) in [(1e19, Int64.max), (-1e19, Int64.min), (12.9, 12), (-0.5, 0)] {
            status.oldestAgeSeconds = age
            #expect(status.oldestAgeWholeSeconds == whole)
            #expect(status.summary.contains("oldest \(whole)s"))
        }
    }

    /// One table drives the writer, the reader and the text: it must hold
    /// each coding key (each member Codable writes) once.
    @Test func theFieldTableHasEveryMemberOnce() {
        let keys = AgentStatus.fields.map(\.key)
        #expect(keys.count == Set(keys).count)
        #expect(Set(keys) == Set(AgentStatus.CodingKeys.allCases.map(\.stringValue)))
        let inputKeys = InputCounters.Snapshot.fields.map(\.key)
        #expect(inputKeys.count == Set(inputKeys).count)
    }

    @Test func theStatusTextShowsEveryCounterThatHasSomethingToSay() {
        let lines = Self.full().textLines
        #expect(
            lines == [
                "  problem:  held: \"403\"\n",
                "  queued:   5 records, 500 bytes, oldest 12 s",
                "  accepted: 9",
                "  rejected: 2 (bad_json 2)",
                "  uploaded: 4",
                "  dropped:  1 (exported 1)",
                "  dead letters: 1 (ingestd dead-letter list)",
                "  quarantined: 7 damaged in the queue file, not sent (ingestd verify)",
                "  duplicates: 6 received again and not stored",
                "  conflicts: 2 received under a known _id with other content, refused (duplicate_id)",
                "  received: ids or sessions lost to damage at 2026-11-28T08:00:00.000Z (repair): a batch received before and sent again within the deduplication window may be stored twice",
                "  upload:   retrying at 2026-11-22T10:00:05.000Z after: HTTP 503",
                "  reload:   refused at 2026-11-28T05:00:00Z: line 3: queue.overflow_policy: must be block or drop_oldest",
                "  clock:    synchronised; last jump +1.6 years",
                "  re-sent:  5 the backend already had, dropped by its deduplication",
                "  re-sent late: 1 after the backend's duplicate window: they may be stored twice (see the journal)",
                "  last upload: stored 4 at 2026-11-22T10:00:00.000Z",
                "  input files: 10 lines, 8 accepted, 2 rejected, position offset 42, device disconnected, disk full, 4 batches over an account's quota (429)"
                    + "\n    /var/log/a.ndjson: offset 42\n    /var/log/b.ndjson: offset 0"
                    + "\n  input stdin: 0 lines, 0 accepted, 0 rejected",
                "  sink site: backing_off, 12 queued (2048 bytes), 30 uploaded, 1 dead letters, dropped (sink_lagged 4): Could not connect to 127.0.0.1:9: connection refused"
                    + "\n  sink upload: idle, 0 queued (0 bytes), 0 uploaded",
            ]
        )
        let quiet = AgentStatus(state: .idle, statistics: .empty, inputs: [], pid: 1).textLines
        #expect(
            quiet == [
                "  queued:   0 records, 0 bytes", "  accepted: 0", "  rejected: 0", "  uploaded: 0", "  dropped:  0",
            ]
        )
    }

    /// /metrics of a status with every member set: Prometheus's own checker
    /// accepts it (histogram included), when it is installed.
    @Test func theFullStatusIsValidPrometheusText() throws {
        let text = Self.full().prometheusText
        let lines = Set(text.split(separator: "\n").map(String.init))
        for expected in [
            "# TYPE ingestd_upload_duration_seconds histogram",
            #"ingestd_upload_duration_seconds_bucket{le="0.01"} 0"#,
            #"ingestd_upload_duration_seconds_bucket{le="0.025"} 1"#,
            #"ingestd_upload_duration_seconds_bucket{le="2.5"} 2"#,
            #"ingestd_upload_duration_seconds_bucket{le="+Inf"} 2"#,
            "ingestd_upload_duration_seconds_sum 1.52",
            "ingestd_upload_duration_seconds_count 2",
            #"ingestd_dropped_records_total{reason="exported"} 1"#,
            "ingestd_received_duplicates_total 6",
            "ingestd_received_conflicts_total 2",
        ] {
            #expect(lines.contains(expected), "\(expected) missing from:\n\(text)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") else { return }
        let dir = try TemporaryDirectory()
        try text.write(toFile: dir.file("metrics.txt"), atomically: true, encoding: .utf8)
        let check = try runTool("/bin/sh", ["-c", "/usr/bin/promtool check metrics < '\(dir.file("metrics.txt"))'"])
        #expect(check.status == 0, "\(check.output)")
    }
}

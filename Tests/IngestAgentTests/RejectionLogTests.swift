import EdgeIngestCore
import Logging
import Synchronization
import Testing

@testable import IngestAgent

/// What the journal gets for rejected lines: readable messages, floods cut
/// to a summary per reason and window.
@Suite struct RejectionLogTests {
    /// Keeps every message logged through it.
    final class Capture: Sendable {
        let messages = Mutex<[String]>([])

        var logger: Logger {
            Logger(label: "test") { _ in Handler(capture: self) }
        }

        struct Handler: LogHandler {
            let capture: Capture
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) { capture.messages.withLock { $0.append("\(event.message)") } }
        }
    }

    static let malformed = LineRejection(reason: "malformed_json", message: "malformed JSON at byte 1: expected '{'")
    static let mismatch = LineRejection(reason: "type_mismatch", message: "field 'x' must be an integer, got \"a\"")

    @Test func theMessageSaysWhichLineWhyAndWhat() {
        let capture = Capture()
        let log = RejectionLog(input: "stdin", logger: capture.logger)
        log.rejected(Self.malformed, line: 5020, now: 0)
        #expect(
            capture.messages.withLock { $0 } == [
                "Rejected line 5020 of stdin: malformed_json: malformed JSON at byte 1: expected '{'"
            ]
        )
    }

    @Test func aFloodOfOneReasonIsCutToTenAndASummaryPerWindow() {
        let capture = Capture()
        let log = RejectionLog(input: "stdin", logger: capture.logger)
        for line in 1...5_000 { log.rejected(Self.malformed, line: line, now: Double(line) / 1000) }
        // Another reason has its own ten.
        for line in 1...12 { log.rejected(Self.mismatch, line: line, now: 5) }
        var messages = capture.messages.withLock { $0 }
        #expect(messages.count == 20)
        #expect(messages.prefix(10).allSatisfy { $0.hasPrefix("Rejected line ") && $0.contains("malformed_json") })
        log.flushExpired(now: 59)  // no window has ended
        #expect(capture.messages.withLock { $0 }.count == 20)
        log.flushExpired(now: 61)  // the malformed_json window (from 0.001 s) has
        messages = capture.messages.withLock { $0 }
        #expect(messages.last == "… and 4,990 more malformed_json rejections from stdin in the last 60 s")
        log.flushAll(now: 62)
        #expect(
            capture.messages.withLock { $0 }.last == "… and 2 more type_mismatch rejections from stdin in the last 57 s"
        )
        // A new window logs one by one again.
        log.rejected(Self.malformed, line: 9_000, now: 70)
        #expect(capture.messages.withLock { $0 }.last?.hasPrefix("Rejected line 9000 of stdin") == true)
    }

    @Test func aRejectionAfterTheWindowSummarizesTheOldOne() {
        let capture = Capture()
        let log = RejectionLog(input: "file:/a", logger: capture.logger)
        for line in 1...11 { log.rejected(Self.malformed, line: line, now: 0) }
        log.rejected(Self.malformed, line: 12, now: 60)
        #expect(
            capture.messages.withLock { Array($0.suffix(2)) } == [
                "… and 1 more malformed_json rejections from file:/a in the last 60 s",
                "Rejected line 12 of file:/a: malformed_json: malformed JSON at byte 1: expected '{'",
            ]
        )
    }

    @Test func nothingSuppressedNeedsNoSummary() {
        let capture = Capture()
        let log = RejectionLog(input: "stdin", logger: capture.logger)
        for line in 1...10 { log.rejected(Self.malformed, line: line, now: 0) }
        log.flushAll(now: 100)
        #expect(capture.messages.withLock { $0 }.count == 10)
    }

    @Test(
        arguments: [
            (0, "0s"), (999, "0s"), (45_200, "45s"), (134_000, "2m14s"), (3_600_000, "1h00m"), (3_720_000, "1h02m"),
            (90_000_000, "1d01h"),
        ] as [(Int64, String)]
    )
    func durationsReadLikeAPersonWouldSayThem(milliseconds: Int64, text: String) {
        #expect(LogText.duration(milliseconds: milliseconds) == text)
    }

    @Test func largeNumbersAreGroupedByThousands() {
        #expect(
            [0, 7, 999, 1_000, 21_521, 1_234_567, -4_990].map { LogText.grouped($0) } == [
                "0", "7", "999", "1,000", "21,521", "1,234,567", "-4,990",
            ]
        )
    }

    @Test(arguments: [
        ("overflow-policy", ["overflow_policy", "durability"], "overflow_policy" as String?),
        ("path", ["paths", "name", "kind"], "paths"),
        ("drop_olderst", ["block", "drop_newest", "drop_oldest"], "drop_oldest"),
        ("Journal", ["auto", "journal", "stderr"], "journal"),
        ("colour", ["log_level", "log_target", "rejects_file"], nil),
        ("kafka", ["ingest", "sqlite", "clickhouse", "postgresql", "influxdb"], nil),
    ])
    func didYouMeanOnlyWhenOneChoiceIsClose(word: String, choices: [String], expected: String?) {
        #expect(Suggestion.closest(to: word, among: choices) == expected)
    }
}

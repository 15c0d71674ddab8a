// libFuzzer target: bytes from an NDJSON input (stdin, a file, a serial
// port) through the agent's pipeline as LineIngestor runs it: LineFramer,
// then NDJSONParser, then ReadingRouter (WeatherSensor by default, Probe by
// "_type"). Built and run by scripts/fuzz.sh.
//
// Checks (a failure is a crash the fuzzer reports):
// - nothing traps (bounds, overflow, force unwraps) and ASan sees no bad access or leak;
// - framing: the same lines as a reference split, in one chunk, byte by byte
//   or in input-chosen chunks, with a large and a tiny line limit; memory
//   held for a partial line stays under the limit;
// - UTF-8: firstInvalidUTF8 agrees with String(validating:);
// - parsing: a reused parser (scratch buffer) gives what a fresh one gives;
//   a parsed line written back as JSON parses to the same keys and values;
// - every non-blank line ends as a record or as a rejection with a known
//   reason and a short, non-empty message;
// - a record is well formed and its JSON (JSONWriter) reads back as the
//   same _id and values; timestamps are written as the instant they hold;
// - the agent's as-read path and its general path store the same bytes and
//   refuse the same lines; the in-place timestamp check agrees with the parser;
// - the writer's-form path (before any parsing) takes only lines the parser
//   and the as-read path store unchanged, and stores what they store.

@testable import EdgeIngestModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNDJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var parser = NDJSONParser()  // reused from line to line, as LineIngestor does
    var parsed = ParsedLine()
    forEachLine(UnsafeRawBufferPointer(start: data, count: size), checkingFraming: true) {
        ingest($0, &parser, &parsed)
    }
    return 0
}

private func ingest(_ line: UnsafeRawBufferPointer, _ parser: inout NDJSONParser, _ parsed: inout ParsedLine) {
    checkUTF8(line)
    let result = ParseResult(&parsed) { (out: inout ParsedLine) throws(LineRejection) in
        try parser.parse(line, into: &out)
    }
    var fresh = NDJSONParser()
    var freshParsed = ParsedLine()
    let again = ParseResult(&freshParsed) { (out: inout ParsedLine) throws(LineRejection) in
        try fresh.parse(line, into: &out)
    }
    precondition(result.matches(again), "a reused NDJSONParser and a fresh one disagree")

    checkWritersFormPath(line, parsedAs: result, parsed)
    switch result {
    case .rejected(let rejection):
        checkRejection(rejection)
    case .fields(let fields):
        checkRewrite(fields)
        checkTimestampChecks(parsed)
        do throws(LineRejection) {
            let record = try inputRouter.route(parsed)
            checkRecord(record)
            checkAgentPath(parsed, accepted: record)
        } catch {
            checkRejection(error)
            checkAgentPath(parsed, accepted: nil)
        }
    }
}

/// The writer's-form path takes a line only when the parser reads it and the
/// as-read path stores it with nothing written again but a generated `_id`,
/// and then stores the same bytes; a line it leaves gets nothing appended.
private func checkWritersFormPath(_ line: UnsafeRawBufferPointer, parsedAs result: ParseResult, _ parsed: ParsedLine) {
    for n in agentRouters.indices {
        var batch = EncodedBatch()
        guard let ownID = agentRouters[n].asRead.appendIfWritersForm(line, into: &batch) else {
            precondition(batch.count == 0, "the writer's-form path left a line but appended to the batch")
            continue
        }
        guard case .fields = result else {
            preconditionFailure("the writer's-form path took a line the parser refused")
        }
        let asRead = AgentResult(parsed, &agentRouters[n].asRead)
        precondition(asRead.reason == nil, "the writer's-form path took a line the as-read path refused")
        precondition(ownID == asRead.ownID, "the writer's-form and as-read paths disagree on the line's own _id")
        let stored = batch.runs[0].payload
        precondition(
            ownID
                ? stored == asRead.stored
                : stored.dropFirst(AgentResult.idEnd) == asRead.stored.dropFirst(AgentResult.idEnd),
            "the writer's-form path stored other bytes than the as-read path"
        )
    }
}

/// The in-place canonical-timestamp check agrees with the general parser's
/// on every string value of the right length.
private func checkTimestampChecks(_ parsed: ParsedLine) {
    for field in parsed.fields {
        guard let (text, form) = parsed.verbatim(field), form == .plainString, text.count == 26 else { continue }
        precondition(
            VerbatimJSON.isCanonicalTimestamp(text) == VerbatimJSON.isCanonicalTimestampByParsing(text),
            "the in-place timestamp check and the parser disagree on \(String(decoding: text, as: UTF8.self))"
        )
    }
}

/// The agent's routers, kept from line to line as an input keeps them:
/// their builders are reused, so a refused line must leave nothing for the
/// next. One per default type (Probe's fields are all optional, one with a
/// default), each with the as-read path (what the agent runs) and without.
nonisolated(unsafe) private var agentRouters = ["WeatherSensor", "Probe"].map { type in
    var general = ReadingRouter(types: declaredTypes, defaultType: type, inputName: "fuzz")
    general.storesAsRead = false
    return (asRead: ReadingRouter(types: declaredTypes, defaultType: type, inputName: "fuzz"), general: general)
}

/// The agent's path (the as-read path, else a reused builder finishing into
/// an EncodedBatch) takes and refuses exactly what the Record path does, and
/// stores the same line (the same `_id` too when the line had its own); with
/// and without the as-read path it stores the same bytes.
private func checkAgentPath(_ parsed: ParsedLine, accepted record: Record?) {
    for n in agentRouters.indices {
        let asRead = AgentResult(parsed, &agentRouters[n].asRead)
        let general = AgentResult(parsed, &agentRouters[n].general)
        precondition(
            asRead.reason == general.reason,
            "the as-read path and the general one disagree: \(asRead.reason ?? "stored") vs \(general.reason ?? "stored")"
        )
        if asRead.ownID {
            precondition(asRead.stored == general.stored, "the as-read path stored other bytes than the general one")
        } else {
            precondition(
                asRead.stored.dropFirst(AgentResult.idEnd) == general.stored.dropFirst(AgentResult.idEnd),
                "the as-read path stored other fields than the general one"
            )
        }
        guard n == 0 else { continue }  // the Record path's router has WeatherSensor as its default
        guard let record else {
            precondition(asRead.reason != nil, "the agent's path took a line the Record path refused")
            continue
        }
        precondition(asRead.reason == nil, "the agent's path refused a line the Record path took: \(asRead.reason!)")
        var expected: [UInt8] = []
        record.encodeJSON(into: &expected)
        expected.append(UInt8(ascii: "\n"))
        precondition(
            asRead.stored.count == expected.count
                && (asRead.ownID
                    ? asRead.stored == expected
                    : asRead.stored[AgentResult.idEnd...] == expected[AgentResult.idEnd...]),
            "the agent's path stored another line than the Record path"
        )
    }
}

/// What one router made of a line: the stored line, or the reason it was refused.
private struct AgentResult {
    static let idEnd = 33  // {"_id":"<24 hex digits>"
    var stored: [UInt8] = []
    var ownID = false
    var reason: String?

    init(_ parsed: ParsedLine, _ router: inout ReadingRouter) {
        var batch = EncodedBatch()
        do throws(LineRejection) {
            ownID = try router.route(parsed, into: &batch)
        } catch {
            reason = error.reason
            return
        }
        precondition(batch.count == 1, "the agent's path stored \(batch.count) records for one line")
        stored = batch.runs[0].payload
    }
}

/// A parsed line written back as JSON (keys and strings by JSONWriter,
/// numbers in Swift's shortest round-trip form) parses to the same fields.
private func checkRewrite(_ fields: [(key: [UInt8], value: RawFieldValue)]) {
    var json: [UInt8] = [UInt8(ascii: "{")]
    for (n, field) in fields.enumerated() {
        if n > 0 { json.append(UInt8(ascii: ",")) }
        JSONWriter.appendString(String(decoding: field.key, as: UTF8.self), to: &json)
        json.append(UInt8(ascii: ":"))
        switch field.value {
        case .null: json += Array("null".utf8)
        case .bool(let b): json += Array((b ? "true" : "false").utf8)
        case .int(let i): json += Array(String(i).utf8)
        case .double(let d):
            guard d.isFinite else { return }  // 1e999 and 400+ digit numbers: not writable as JSON
            json += Array(d.description.utf8)
        case .string(let s): JSONWriter.appendString(s, to: &json)
        case .unsupported(let what): json += Array((what == "an object" ? "{}" : "[]").utf8)
        case .text, .objectId, .timestamp: preconditionFailure("NDJSONParser produced \(field.value)")
        }
    }
    json.append(UInt8(ascii: "}"))
    var rewriter = NDJSONParser()
    var reparsed = ParsedLine()
    let again = json.withUnsafeBytes { raw in
        ParseResult(&reparsed) { (out: inout ParsedLine) throws(LineRejection) in try rewriter.parse(raw, into: &out) }
    }
    if case .rejected(let refused) = again {
        preconditionFailure(
            "a parsed line written back as JSON does not parse: \(refused.message): \(String(decoding: json, as: UTF8.self))"
        )
    }
    precondition(
        again.matches(.fields(fields)),
        "a parsed line written back as JSON parses differently: \(String(decoding: json, as: UTF8.self))"
    )
}

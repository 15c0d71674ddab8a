// libFuzzer target: bytes from a `format = "csv"` input through the agent's
// pipeline as LineIngestor runs it: LineFramer, then CSVParser (the first
// non-blank line that is a valid header is the header), then ReadingRouter
// (WeatherSensor by default, Probe by a "_type" column). Built and run by
// scripts/fuzz.sh.
//
// Checks (a failure is a crash the fuzzer reports):
// - nothing traps and ASan sees no bad access or leak;
// - UTF-8 as in the NDJSON target (framing is checked there only: the
//   framer does not depend on the format);
// - a parsed row has one field per header column, keyed by the header;
// - a parsed row written back as CSV (every cell quoted, quotes doubled,
//   null cells empty and unquoted) parses to the same fields;
// - every non-blank line ends as the header, a record, or a rejection with
//   a known reason and a short, non-empty message;
// - a record is well formed and its JSON reads back as the same record.

@testable import EdgeIngestModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSV(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var csv = CSVParser()
    var parsed = ParsedLine()
    forEachLine(UnsafeRawBufferPointer(start: data, count: size), checkingFraming: false) { bytes in
        checkUTF8(bytes)
        if csv.header == nil {
            do throws(LineRejection) {
                try csv.readHeader(bytes)
                precondition(
                    csv.header.map { !$0.isEmpty && $0.allSatisfy { !$0.isEmpty } } == true,
                    "header with an empty name"
                )
            } catch {
                precondition(csv.header == nil, "a refused header was kept")
                checkRejection(error)
            }
            return
        }
        ingest(bytes, csv, &parsed)
    }
    return 0
}

private func ingest(_ line: UnsafeRawBufferPointer, _ csv: CSVParser, _ parsed: inout ParsedLine) {
    do throws(LineRejection) {
        try csv.parse(line, into: &parsed)
    } catch {
        checkRejection(error)
        return
    }
    let header = csv.header!
    precondition(parsed.fields.count == header.count, "\(parsed.fields.count) fields for \(header.count) columns")
    for (field, name) in zip(parsed.fields, header) {
        precondition(parsed.keyBytes(field).elementsEqual(name), "a field not keyed by its column")
        guard case .cell = field.value, let value = try? parsed.value(field) else {
            preconditionFailure("CSVParser produced \(field.value)")
        }
        switch value {
        case .null, .text: break
        default: preconditionFailure("CSVParser produced \(value)")
        }
    }
    checkRequote(parsed, csv)
    do throws(LineRejection) {
        checkRecord(try inputRouter.route(parsed))
    } catch {
        checkRejection(error)
    }
}

/// The row written back with every non-null cell quoted parses the same.
private func checkRequote(_ parsed: ParsedLine, _ csv: CSVParser) {
    let row = try! ParseResult(parsed)  // CSV cells are converted already: nothing to throw
    guard case .fields(let fields) = row else { preconditionFailure("ParseResult(parsed) is always fields") }
    var line: [UInt8] = []
    for (n, field) in fields.enumerated() {
        if n > 0 { line.append(csv.separator) }
        guard case .text(let text) = field.value else { continue }  // null: an empty unquoted cell
        line.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            line.append(byte)
            if byte == UInt8(ascii: "\"") { line.append(byte) }
        }
        line.append(UInt8(ascii: "\""))
    }
    var reparsed = ParsedLine()
    let again = line.withUnsafeBytes { raw in
        ParseResult(&reparsed) { (out: inout ParsedLine) throws(LineRejection) in try csv.parse(raw, into: &out) }
    }
    if case .rejected(let refused) = again {
        preconditionFailure(
            "a row written back as CSV is refused: \(refused.message): \(String(decoding: line, as: UTF8.self))"
        )
    }
    precondition(
        again.matches(row),
        "a row written back as CSV parses differently: \(String(decoding: line, as: UTF8.self))"
    )
}

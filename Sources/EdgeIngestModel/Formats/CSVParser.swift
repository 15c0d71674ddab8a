/// Parses CSV lines (RFC 4180 quoting, one record per line) against a
/// header row. Cells become untyped `.text` values, converted by the field
/// types; an empty unquoted cell is null (absent), a quoted empty cell is
/// the empty string.
package struct CSVParser {
    /// The header's column names, once read.
    package private(set) var header: [[UInt8]]?
    let separator: UInt8

    package init(separator: UInt8 = UInt8(ascii: ",")) { self.separator = separator }

    /// Reads the header row (the first line of the input).
    package mutating func readHeader(_ line: UnsafeRawBufferPointer) throws(LineRejection) {
        if firstInvalidUTF8(line) != nil {
            throw LineRejection(reason: "invalid_utf8", message: "the CSV header is not valid UTF-8")
        }
        let cells = try split(line)
        guard !cells.isEmpty, cells.allSatisfy({ !$0.bytes.isEmpty }) else {
            throw LineRejection(reason: "malformed_csv", message: "the CSV header must name every column")
        }
        header = cells.map(\.bytes)
    }

    /// Parses a data line into `out`, keyed by the header's names.
    package func parse(_ line: UnsafeRawBufferPointer, into out: inout ParsedLine) throws(LineRejection) {
        out.removeAll()
        guard let header else { throw LineRejection(reason: "malformed_csv", message: "no header row") }
        if let bad = firstInvalidUTF8(line) {
            throw LineRejection(reason: "invalid_utf8", message: "invalid UTF-8 at byte \(bad + 1)")
        }
        let cells = try split(line)
        guard cells.count == header.count else {
            throw LineRejection(
                reason: "malformed_csv",
                message: "expected \(header.count) columns as in the header, got \(cells.count)"
            )
        }
        for (k, cell) in cells.enumerated() {
            let keyStart = out.keys.count
            out.keys.append(contentsOf: header[k])
            let value: RawFieldValue =
                cell.bytes.isEmpty && !cell.quoted ? .null : .text(String(decoding: cell.bytes, as: UTF8.self))
            out.cells.append(value)
            out.fields.append(
                ParsedLine.Field(
                    keyStart: keyStart,
                    keyCount: header[k].count,
                    keyInLine: false,
                    value: .cell(out.cells.count - 1)
                )
            )
        }
    }

    private struct Cell {
        var bytes: [UInt8]
        var quoted: Bool
    }

    private func split(_ line: UnsafeRawBufferPointer) throws(LineRejection) -> [Cell] {
        var cells: [Cell] = []
        var i = 0
        let n = line.count
        while true {
            var cell = Cell(bytes: [], quoted: false)
            if i < n, line[i] == UInt8(ascii: "\"") {
                cell.quoted = true
                i += 1
                while true {
                    guard i < n else {
                        throw LineRejection(
                            reason: "malformed_csv",
                            message: "a quoted field is not closed on this line (column \(cells.count + 1))"
                        )
                    }
                    if line[i] == UInt8(ascii: "\"") {
                        if i + 1 < n, line[i + 1] == UInt8(ascii: "\"") {
                            cell.bytes.append(UInt8(ascii: "\""))
                            i += 2
                            continue
                        }
                        i += 1
                        break
                    }
                    cell.bytes.append(line[i])
                    i += 1
                }
                guard i == n || line[i] == separator else {
                    throw LineRejection(
                        reason: "malformed_csv",
                        message: "text after a closing quote in column \(cells.count + 1)"
                    )
                }
            } else {
                let start = i
                while i < n, line[i] != separator {
                    if line[i] == UInt8(ascii: "\"") {
                        throw LineRejection(
                            reason: "malformed_csv",
                            message: "a quote inside an unquoted field in column \(cells.count + 1)"
                        )
                    }
                    i += 1
                }
                cell.bytes = Array(line[start..<i])
            }
            cells.append(cell)
            if i >= n { return cells }
            i += 1  // the separator
        }
    }
}

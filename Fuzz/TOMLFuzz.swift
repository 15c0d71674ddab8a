// libFuzzer target: the configuration parser, TOMLDocument.parse, on any
// text (read as AgentConfiguration.load reads a file: bytes decoded as
// UTF-8, invalid sequences replaced). Built and run by scripts/fuzz.sh.
//
// Checks (a failure is a crash the fuzzer reports):
// - nothing traps, overflows the stack or leaks;
// - every value's line and every error's line is a line of the text;
// - a parsed document written back as TOML (quoted keys, escaped basic
//   strings, Swift's round-trip numbers, inline tables) parses to the same
//   keys, values and order.

@testable import EdgeIngestModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTOML(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: bytes, as: UTF8.self)
    let lineCount = 1 + text.utf8.lazy.filter { $0 == 0x0A }.count
    let root: TOMLTable
    do {
        root = try TOMLDocument.parse(text)
    } catch let error as TOMLError {
        precondition((1...lineCount).contains(error.line), "error on line \(error.line) of a \(lineCount)-line text")
        precondition(!error.message.isEmpty, "empty TOML error message")
        return 0
    } catch {
        preconditionFailure("TOMLDocument.parse threw \(type(of: error)), not TOMLError")
    }
    checkLines(root, lineCount)

    // The write-back below spells every table as an inline table, which
    // nests deeper than `[a.b.c]` headers or dotted keys did: a document
    // beyond the parser's nesting bound that way cannot round-trip.
    guard root.entries.allSatisfy({ levels($0.value) <= TOMLDocument.maxNesting }) else { return 0 }

    var out = ""
    for entry in root.entries {
        out += key(entry.key) + " = "
        write(entry.value, to: &out)
        out += "\n"
    }
    let again: TOMLTable
    do {
        again = try TOMLDocument.parse(out)
    } catch {
        preconditionFailure("a parsed document written back is refused: \(error)\n\(out)")
    }
    precondition(same(.table(root), .table(again)), "a parsed document written back parses differently:\n\(out)")
    return 0
}

/// How many nested values the parser reads for `value` written inline.
private func levels(_ value: TOMLValue) -> Int {
    switch value.kind {
    case .array(let items): return 1 + (items.map(levels).max() ?? 0)
    case .table(let table): return 1 + (table.entries.map { levels($0.value) }.max() ?? 0)
    default: return 1
    }
}

private func checkLines(_ table: TOMLTable, _ lineCount: Int) {
    precondition((1...lineCount).contains(table.line), "table on line \(table.line) of a \(lineCount)-line text")
    for entry in table.entries { checkLines(entry.value, lineCount) }
}

private func checkLines(_ value: TOMLValue, _ lineCount: Int) {
    precondition((1...lineCount).contains(value.line), "value on line \(value.line) of a \(lineCount)-line text")
    switch value.kind {
    case .array(let items): for item in items { checkLines(item, lineCount) }
    case .table(let table): checkLines(table, lineCount)
    default: break
    }
}

private func key(_ k: String) -> String { basicString(k) }

private func basicString(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\r": out += "\\r"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            let hex = String(scalar.value, radix: 16, uppercase: true)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

private func write(_ value: TOMLValue, to out: inout String) {
    switch value.kind {
    case .string(let s): out += basicString(s)
    case .integer(let i): out += String(i)
    case .float(let d): out += d.description
    case .bool(let b): out += b ? "true" : "false"
    case .array(let items):
        out += "["
        for (n, item) in items.enumerated() {
            if n > 0 { out += ", " }
            write(item, to: &out)
        }
        out += "]"
    case .table(let table):
        out += "{"
        for (n, entry) in table.entries.enumerated() {
            out += n > 0 ? ", " : " "
            out += key(entry.key) + " = "
            write(entry.value, to: &out)
        }
        out += table.entries.isEmpty ? "}" : " }"
    }
}

private func same(_ a: TOMLValue.Kind, _ b: TOMLValue.Kind) -> Bool {
    switch (a, b) {
    case (.string(let x), .string(let y)): return x == y
    case (.integer(let x), .integer(let y)): return x == y
    case (.float(let x), .float(let y)): return x.bitPattern == y.bitPattern
    case (.bool(let x), .bool(let y)): return x == y
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0.kind, $1.kind) }
    case (.table(let x), .table(let y)):
        return x.entries.count == y.entries.count
            && zip(x.entries, y.entries).allSatisfy { $0.key == $1.key && same($0.value.kind, $1.value.kind) }
    default: return false
    }
}

/// A TOML document parsed with the line of every key, so that
/// configuration errors can say where they are.
///
/// Supports what configuration files use: comments, `[table]`,
/// `[[array.of.tables]]`, bare, quoted and dotted keys, basic and literal
/// strings, integers (with `_`), floats, booleans, arrays (over several
/// lines) and inline tables. Dates and multi-line strings are refused with a
/// clear error.
public struct TOMLTable: Sendable {
    public struct Entry: Sendable {
        public var key: String
        public var value: TOMLValue
    }
    /// Entries in the order they appear.
    public var entries: [Entry] = []
    /// Line of the header (or of the first key) that opened the table.
    public var line: Int

    public subscript(key: String) -> TOMLValue? {
        entries.first(where: { $0.key == key })?.value
    }

    mutating func set(_ key: String, _ value: TOMLValue) throws {
        if let existing = entries.first(where: { $0.key == key }) {
            throw TOMLError(
                line: value.line,
                message: "key '\(key)' is defined twice (first on line \(existing.value.line))"
            )
        }
        entries.append(Entry(key: key, value: value))
    }
}

/// One value and the line it is on.
public struct TOMLValue: Sendable {
    public indirect enum Kind: Sendable {
        case string(String)
        case integer(Int64)
        case float(Double)
        case bool(Bool)
        case array([TOMLValue])
        case table(TOMLTable)
    }
    public var kind: Kind
    public var line: Int

    /// How error messages name this value's type.
    public var typeName: String {
        switch kind {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a float"
        case .bool: return "a boolean"
        case .array: return "an array"
        case .table: return "a table"
        }
    }
}

/// A syntax error, with its line.
public struct TOMLError: Error, Sendable, CustomStringConvertible {
    public var line: Int
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

public enum TOMLDocument {
    /// How deep arrays and inline tables may nest. A configuration never needs
    /// more than a few levels; without a bound, a crafted file could exhaust the
    /// stack (found by Fuzz/TOMLFuzz.swift).
    static let maxNesting = 64

    /// Parses `text` into its root table.
    public static func parse(_ text: String) throws -> TOMLTable {
        var parser = TOMLParser(bytes: Array(text.utf8))
        return try parser.parseDocument()
    }
}

private struct TOMLParser {
    let bytes: [UInt8]
    var i = 0
    var line = 1

    init(bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { i >= bytes.count }
    var current: UInt8 { bytes[i] }

    func error(_ message: String) -> TOMLError { TOMLError(line: line, message: message) }

    mutating func skipSpaces() {
        while !atEnd, current == 0x20 || current == 0x09 { i += 1 }
    }

    /// Skips spaces, comments and newlines (inside arrays).
    mutating func skipBlank() {
        while !atEnd {
            switch current {
            case 0x20, 0x09, 0x0D: i += 1
            case 0x0A:
                line += 1
                i += 1
            case UInt8(ascii: "#"):
                while !atEnd, current != 0x0A { i += 1 }
            default: return
            }
        }
    }

    /// After a value or header: only spaces and a comment may follow on the line.
    mutating func expectEndOfLine() throws {
        skipSpaces()
        if !atEnd, current == UInt8(ascii: "#") {
            while !atEnd, current != 0x0A { i += 1 }
        }
        if !atEnd, current == 0x0D { i += 1 }
        guard atEnd || current == 0x0A else {
            throw error("unexpected text after the value; put one key = value per line")
        }
    }

    mutating func parseDocument() throws -> TOMLTable {
        let root = TableBuilder(line: 1)
        var path: [String] = []  // the current table
        while true {
            skipBlank()
            if atEnd { break }
            if current == UInt8(ascii: "[") {
                let headerLine = line
                i += 1
                let isArray = !atEnd && current == UInt8(ascii: "[")
                if isArray { i += 1 }
                skipSpaces()
                let keys = try parseKeyPath()
                skipSpaces()
                guard !atEnd, current == UInt8(ascii: "]") else {
                    throw error("expected ']' to close the table header")
                }
                i += 1
                if isArray {
                    guard !atEnd, current == UInt8(ascii: "]") else {
                        throw error("expected ']]' to close the array-of-tables header")
                    }
                    i += 1
                }
                try expectEndOfLine()
                try root.open(keys, array: isArray, line: headerLine)
                path = keys
                continue
            }
            let keyLine = line
            let keys = try parseKeyPath()
            skipSpaces()
            guard !atEnd, current == UInt8(ascii: "=") else {
                throw error("expected '=' after key '\(keys.joined(separator: "."))'")
            }
            i += 1
            skipSpaces()
            var value = try parseValue()
            value.line = keyLine
            try expectEndOfLine()
            try root.insert(path + keys, value)
        }
        return root.table
    }

    mutating func parseKeyPath() throws -> [String] {
        var keys: [String] = []
        while true {
            guard keys.count < TOMLDocument.maxNesting else {
                throw error("a dotted key or table name has more than \(TOMLDocument.maxNesting) parts")
            }
            skipSpaces()
            guard !atEnd else { throw error("expected a key") }
            if current == UInt8(ascii: "\"") {
                keys.append(try parseBasicString())
            } else if current == UInt8(ascii: "'") {
                keys.append(try parseLiteralString())
            } else {
                let start = i
                while !atEnd, isBareKeyByte(current) { i += 1 }
                guard i > start else { throw error("expected a key, found '\(Character(UnicodeScalar(current)))'") }
                keys.append(String(decoding: bytes[start..<i], as: UTF8.self))
            }
            skipSpaces()
            if !atEnd, current == UInt8(ascii: ".") {
                i += 1
                continue
            }
            return keys
        }
    }

    func isBareKeyByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
    }

    mutating func parseValue(depth: Int = 0) throws -> TOMLValue {
        guard !atEnd else { throw error("expected a value") }
        guard depth < TOMLDocument.maxNesting else {
            throw error("arrays and inline tables nest more than \(TOMLDocument.maxNesting) levels deep")
        }
        let valueLine = line
        switch current {
        case UInt8(ascii: "\""):
            if bytes[i...].starts(with: Array("\"\"\"".utf8)) { throw error("multi-line strings are not supported") }
            return TOMLValue(kind: .string(try parseBasicString()), line: valueLine)
        case UInt8(ascii: "'"):
            if bytes[i...].starts(with: Array("'''".utf8)) { throw error("multi-line strings are not supported") }
            return TOMLValue(kind: .string(try parseLiteralString()), line: valueLine)
        case UInt8(ascii: "["):
            i += 1
            var items: [TOMLValue] = []
            while true {
                skipBlank()
                guard !atEnd else { throw error("unterminated array") }
                if current == UInt8(ascii: "]") {
                    i += 1
                    break
                }
                items.append(try parseValue(depth: depth + 1))
                skipBlank()
                guard !atEnd else { throw error("unterminated array") }
                if current == UInt8(ascii: ",") {
                    i += 1
                } else if current != UInt8(ascii: "]") {
                    throw error("expected ',' or ']' in array")
                }
            }
            return TOMLValue(kind: .array(items), line: valueLine)
        case UInt8(ascii: "{"):
            i += 1
            var table = TOMLTable(line: valueLine)
            skipSpaces()
            if !atEnd, current == UInt8(ascii: "}") {
                i += 1
                return TOMLValue(kind: .table(table), line: valueLine)
            }
            while true {
                let keys = try parseKeyPath()
                skipSpaces()
                guard !atEnd, current == UInt8(ascii: "=") else { throw error("expected '=' in inline table") }
                i += 1
                skipSpaces()
                var value = try parseValue(depth: depth + 1)
                value.line = valueLine
                try TOMLParser.insert(&table, at: [], keys: keys, value: value)
                skipSpaces()
                guard !atEnd else { throw error("unterminated inline table") }
                if current == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                guard current == UInt8(ascii: "}") else { throw error("expected ',' or '}' in inline table") }
                i += 1
                return TOMLValue(kind: .table(table), line: valueLine)
            }
        default:
            let start = i
            while !atEnd,
                !(current == 0x20 || current == 0x09 || current == 0x0A || current == 0x0D
                    || current == UInt8(ascii: ",") || current == UInt8(ascii: "]") || current == UInt8(ascii: "}")
                    || current == UInt8(ascii: "#"))
            {
                i += 1
            }
            let word = String(decoding: bytes[start..<i], as: UTF8.self)
            if word == "true" { return TOMLValue(kind: .bool(true), line: valueLine) }
            if word == "false" { return TOMLValue(kind: .bool(false), line: valueLine) }
            let digits = String(word.filter { $0 != "_" })
            if let n = Int64(digits) { return TOMLValue(kind: .integer(n), line: valueLine) }
            if digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let d = Double(digits), d.isFinite {
                return TOMLValue(kind: .float(d), line: valueLine)
            }
            if word.isEmpty { throw error("expected a value") }
            throw error(
                "'\(word.prefix(32))' is not a value: quote strings (\"...\"); numbers, true/false, arrays and tables are unquoted"
            )
        }
    }

    mutating func parseBasicString() throws -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard !atEnd, current != 0x0A else { throw error("unterminated string") }
            let c = current
            i += 1
            if c == UInt8(ascii: "\"") { break }
            if c != UInt8(ascii: "\\") {
                out.append(c)
                continue
            }
            guard !atEnd else { throw error("unterminated string") }
            let e = current
            i += 1
            switch e {
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "u"), UInt8(ascii: "U"):
                let n = e == UInt8(ascii: "u") ? 4 : 8
                guard i + n <= bytes.count,
                    let v = UInt32(String(decoding: bytes[i..<i + n], as: UTF8.self), radix: 16),
                    let scalar = UnicodeScalar(v)
                else { throw error("invalid \\u escape in string") }
                i += n
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default: throw error("invalid escape '\\\(Character(UnicodeScalar(e)))' in string")
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw error("string is not valid UTF-8") }
        return s
    }

    mutating func parseLiteralString() throws -> String {
        i += 1
        let start = i
        while !atEnd, current != UInt8(ascii: "'") {
            guard current != 0x0A else { throw error("unterminated string") }
            i += 1
        }
        guard !atEnd else { throw error("unterminated string") }
        let s = String(decoding: bytes[start..<i], as: UTF8.self)
        i += 1
        return s
    }

    static func insert(_ root: inout TOMLTable, at path: [String], keys: [String], value: TOMLValue) throws {
        let full = path + keys
        try modify(&root, full.dropLast(), line: value.line) { table in
            try table.set(full.last!, value)
        }
    }

    /// Walks to the table at `path` (creating tables, and entering the last
    /// element of arrays of tables) and lets `body` change it.
    static func modify(
        _ table: inout TOMLTable,
        _ path: ArraySlice<String>,
        line: Int,
        _ body: (inout TOMLTable) throws -> Void
    ) throws {
        guard let first = path.first else { return try body(&table) }
        let rest = path.dropFirst()
        if let index = table.entries.firstIndex(where: { $0.key == first }) {
            switch table.entries[index].value.kind {
            case .table(var inner):
                try modify(&inner, rest, line: line, body)
                table.entries[index].value.kind = .table(inner)
            case .array(var items):
                guard let lastIndex = items.indices.last, case .table(var inner) = items[lastIndex].kind else {
                    throw TOMLError(line: line, message: "'\(first)' is an array of values, not of tables")
                }
                try modify(&inner, rest, line: line, body)
                items[lastIndex].kind = .table(inner)
                table.entries[index].value.kind = .array(items)
            default:
                throw TOMLError(line: line, message: "'\(first)' is a value, not a table")
            }
        } else {
            var inner = TOMLTable(line: line)
            try modify(&inner, rest, line: line, body)
            table.entries.append(.init(key: first, value: TOMLValue(kind: .table(inner), line: line)))
        }
    }
}

/// A table of the document while it is parsed: a reference, so that adding
/// to a nested table changes it in place. (A value-type tree copied each
/// table on the way down to it: a file with 20,000 types took 8 s.) Each
/// key's position is kept in a dictionary, so the whole parse is linear.
private final class TableBuilder {
    enum Node {
        /// A value written in full after `=` (inline tables and arrays included).
        case value(TOMLValue)
        /// A table opened by a header or a dotted key.
        case table(TableBuilder)
        /// `[[name]]`: its elements so far.
        case tables(TableArray)
    }

    /// The elements of an array of tables, appended to in place.
    final class TableArray {
        let line: Int
        var elements: [TableBuilder]
        init(line: Int, first: TableBuilder) {
            self.line = line
            elements = [first]
        }
    }

    let line: Int
    private var keys: [String] = []
    private var nodes: [String: Node] = [:]

    init(line: Int) { self.line = line }

    /// `[keys]` or `[[keys]]`: creates the table, or appends an element.
    func open(_ keys: [String], array: Bool, line: Int) throws {
        let parent = try walk(keys.dropLast(), line: line)
        let last = keys.last!
        switch parent.nodes[last] {
        case nil:
            let created = TableBuilder(line: line)
            parent.add(last, array ? .tables(TableArray(line: line, first: created)) : .table(created))
        case .tables(let tables)? where array:
            tables.elements.append(TableBuilder(line: line))
        case .table? where !array:
            throw TOMLError(line: line, message: "table [\(keys.joined(separator: "."))] is defined twice")
        default:
            throw TOMLError(
                line: line,
                message: "'\(keys.joined(separator: "."))' is already defined as another kind of value"
            )
        }
    }

    /// `a.b.c = value` under the current table (`path` includes the header's keys).
    func insert(_ path: [String], _ value: TOMLValue) throws {
        let parent = try walk(path.dropLast(), line: value.line)
        let last = path.last!
        if let existing = parent.nodes[last] {
            throw TOMLError(
                line: value.line,
                message: "key '\(last)' is defined twice (first on line \(existing.line))"
            )
        }
        parent.add(last, .value(value))
    }

    /// The table at `path`, creating tables and entering the last element
    /// of arrays of tables.
    private func walk(_ path: ArraySlice<String>, line: Int) throws -> TableBuilder {
        var table = self
        for key in path {
            switch table.nodes[key] {
            case nil:
                let created = TableBuilder(line: line)
                table.add(key, .table(created))
                table = created
            case .table(let inner)?:
                table = inner
            case .tables(let tables)?:
                table = tables.elements[tables.elements.count - 1]
            case .value(let value)?:
                throw TOMLError(
                    line: line,
                    message: "'\(key)' is \(value.typeName) (line \(value.line)), not a table that can be added to"
                )
            }
        }
        return table
    }

    private func add(_ key: String, _ node: Node) {
        keys.append(key)
        nodes[key] = node
    }

    /// The finished table, entries in the order their keys first appeared.
    var table: TOMLTable {
        var out = TOMLTable(line: line)
        out.entries.reserveCapacity(keys.count)
        for key in keys {
            switch nodes[key]! {
            case .value(let value):
                out.entries.append(.init(key: key, value: value))
            case .table(let inner):
                out.entries.append(.init(key: key, value: TOMLValue(kind: .table(inner.table), line: inner.line)))
            case .tables(let tables):
                let items = tables.elements.map { TOMLValue(kind: .table($0.table), line: $0.line) }
                out.entries.append(.init(key: key, value: TOMLValue(kind: .array(items), line: tables.line)))
            }
        }
        return out
    }
}

extension TableBuilder.Node {
    var line: Int {
        switch self {
        case .value(let value): value.line
        case .table(let table): table.line
        case .tables(let tables): tables.line
        }
    }
}

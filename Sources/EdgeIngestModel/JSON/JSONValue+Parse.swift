/// Why a JSON document could not be read: what was expected and the byte
/// offset where reading stopped. Never quotes the document (it may hold
/// tokens).
package struct JSONSyntaxError: Error, CustomStringConvertible {
    package let offset: Int
    package let expected: String
    package var description: String { "invalid JSON at byte \(offset): expected \(expected)" }
}

extension JSONValue {
    /// Reads one JSON document (RFC 8259): whitespace around it is allowed,
    /// anything else after it is not. Nesting deeper than `maxDepth` is
    /// refused (the files read here are shallow; this bounds the stack).
    /// A UTF-8 byte order mark before the document is skipped (editors
    /// save one; Foundation's decoder accepted it).
    package static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(JSONSyntaxError) -> JSONValue {
        let parsed = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONSyntaxError) -> JSONValue in
                var reader = JSONReader(bytes: raw, maxDepth: maxDepth)
                if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.at = 3 }
                let value = try reader.value(depth: 0)
                reader.skipWhitespace()
                guard reader.at == raw.count else { throw reader.fail("the end of the document") }
                return value
            }
        }
        return try parsed.get()
    }
}

private struct JSONReader {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    var at = 0

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func fail(_ expected: String, at offset: Int? = nil) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset ?? at, expected: expected)
    }

    mutating func skipWhitespace() {
        while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 {
            at += 1
        }
    }

    /// `depth`: how many objects and arrays enclose this value.
    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        skipWhitespace()
        guard at < bytes.count else { throw fail("a value") }
        switch bytes[at] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth < maxDepth else { throw fail("at most \(maxDepth) levels of nesting") }
            return bytes[at] == UInt8(ascii: "{") ? try object(depth: depth) : try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("a value")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count,
            word.withUTF8Buffer({ w in (0..<count).allSatisfy { bytes[at + $0] == w[$0] } })
        else { throw fail("'\(word)'") }
        at += count
    }

    mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        at += 1
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
            at += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("a member name in quotes") }
            let key = try string()
            skipWhitespace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail("':' after a member name") }
            at += 1
            members.append((key, try value(depth: depth + 1)))
            skipWhitespace()
            guard at < bytes.count else { throw fail("',' or '}'") }
            if bytes[at] == UInt8(ascii: "}") {
                at += 1
                return .object(members)
            }
            guard bytes[at] == UInt8(ascii: ",") else { throw fail("',' or '}'") }
            at += 1
        }
    }

    mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        at += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
            at += 1
            return .array(items)
        }
        while true {
            items.append(try value(depth: depth + 1))
            skipWhitespace()
            guard at < bytes.count else { throw fail("',' or ']'") }
            if bytes[at] == UInt8(ascii: "]") {
                at += 1
                return .array(items)
            }
            guard bytes[at] == UInt8(ascii: ",") else { throw fail("',' or ']'") }
            at += 1
        }
    }

    mutating func string() throws(JSONSyntaxError) -> String {
        let start = at
        at += 1  // the opening quote
        var out: [UInt8] = []
        while true {
            guard at < bytes.count else { throw fail("a closing '\"'") }
            let c = bytes[at]
            if c == UInt8(ascii: "\"") {
                at += 1
                break
            }
            guard c >= 0x20 else { throw fail("no control character inside a string (escape it)") }
            if c != UInt8(ascii: "\\") {
                out.append(c)
                at += 1
                continue
            }
            let escape = at
            at += 1
            do throws(JSONEscape.Problem) {
                try JSONEscape.decode(bytes, at: &at, into: &out)
            } catch {
                switch error {
                case .truncated: throw fail("an escape after '\\'")
                case .unknown: throw fail("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX", at: escape)
                case .truncatedHex, .badHex: throw fail("four hex digits after '\\u'")
                case .unpairedHighSurrogate:
                    throw fail("a low surrogate '\\uDC00'…'\\uDFFF' after a high one", at: escape)
                case .loneLowSurrogate: throw fail("a Unicode scalar, not a lone surrogate", at: escape)
                }
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw fail("UTF-8 text in strings", at: start) }
        return text
    }

    /// An integer when it has no fraction or exponent and fits in Int64,
    /// else a double (strtod: correctly rounded).
    mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = at
        if bytes[at] == UInt8(ascii: "-") { at += 1 }
        func digits(_ r: inout JSONReader) -> Int {
            let from = r.at
            while r.at < r.bytes.count, r.bytes[r.at] >= 48, r.bytes[r.at] <= 57 { r.at += 1 }
            return r.at - from
        }
        let intStart = at
        let intDigits = digits(&self)
        guard intDigits > 0 else { throw fail("a digit") }
        guard !(intDigits > 1 && bytes[intStart] == UInt8(ascii: "0")) else {
            throw fail("no leading zero", at: intStart)
        }
        var integral = true
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            integral = false
            guard digits(&self) > 0 else { throw fail("a digit after '.'") }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            integral = false
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard digits(&self) > 0 else { throw fail("a digit in the exponent") }
        }
        let text = String(decoding: bytes[start..<at], as: UTF8.self)
        if integral, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else { throw fail("a number within the range of a double", at: start) }
        return .double(d)
    }
}

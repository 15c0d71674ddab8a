/// One escape inside a JSON string (RFC 8259 §7): `\"`, `\\`, `\/`, `\b`,
/// `\f`, `\n`, `\r`, `\t` and `\uXXXX` with surrogate pairs. Shared by the
/// agent's NDJSON parser (the hot path) and ``JSONValue``'s parser, which
/// each word the problem their own way.
package enum JSONEscape {
    package enum Problem: Error {
        /// Nothing after the backslash.
        case truncated
        /// Not one of the escapes above.
        case unknown
        /// Fewer than four characters left after `\u`.
        case truncatedHex
        /// Not a hex digit inside `\uXXXX`.
        case badHex
        /// A high surrogate not followed by `\u` and a low one.
        case unpairedHighSurrogate
        /// A low surrogate on its own.
        case loneLowSurrogate
    }

    /// Decodes the escape whose backslash is at `p[i - 1]`: appends its
    /// UTF-8 to `out` and moves `i` past it. On a problem, `i` is where
    /// reading stopped.
    @inline(__always)
    package static func decode(_ p: UnsafeRawBufferPointer, at i: inout Int, into out: inout [UInt8]) throws(Problem) {
        guard i < p.count else { throw .truncated }
        let e = p[i]
        i += 1
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var code = try hex4(p, at: &i)
            if (0xD800...0xDBFF).contains(code) {
                guard i + 1 < p.count, p[i] == UInt8(ascii: "\\"), p[i + 1] == UInt8(ascii: "u") else {
                    throw .unpairedHighSurrogate
                }
                i += 2
                let low = try hex4(p, at: &i)
                guard (0xDC00...0xDFFF).contains(low) else { throw .unpairedHighSurrogate }
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(code) {
                throw .loneLowSurrogate
            }
            // Every code below 0x110000 outside the surrogates is a scalar.
            out.append(contentsOf: UTF8.encode(Unicode.Scalar(code)!)!)
        default:
            throw .unknown
        }
    }

    private static func hex4(_ p: UnsafeRawBufferPointer, at i: inout Int) throws(Problem) -> UInt32 {
        guard i + 4 <= p.count else { throw .truncatedHex }
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let d = hexDigitValue(p[i]) else { throw .badHex }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }
}

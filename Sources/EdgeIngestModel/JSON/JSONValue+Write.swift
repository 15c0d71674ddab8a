extension JSONValue {
    /// The value as JSON text: compact (`{"a":1}`), or `pretty` with two
    /// spaces of indentation per level and one member or item per line.
    /// Object members are written in their order.
    package func text(pretty: Bool = false) -> String {
        var out: [UInt8] = []
        write(to: &out, indent: pretty ? 0 : nil)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the value as JSON. `indent` nil: compact; else pretty at
    /// that level.
    package func write(to out: inout [UInt8], indent: Int? = nil) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .int(let n): JSONWriter.appendInt(n, to: &out)
        case .double(let d):
            if d.isFinite { JSONWriter.appendDouble(d, to: &out) } else { out += Array("null".utf8) }
        case .string(let s): JSONWriter.appendString(s, to: &out)
        case .array(let items):
            writeList(items, open: UInt8(ascii: "["), close: UInt8(ascii: "]"), to: &out, indent: indent) {
                item,
                out,
                inner in
                item.write(to: &out, indent: inner)
            }
        case .object(let members):
            writeList(members, open: UInt8(ascii: "{"), close: UInt8(ascii: "}"), to: &out, indent: indent) {
                member,
                out,
                inner in
                JSONWriter.appendString(member.0, to: &out)
                out += inner == nil ? [UInt8(ascii: ":")] : Array(": ".utf8)
                member.1.write(to: &out, indent: inner)
            }
        }
    }

    private func writeList<Element>(
        _ elements: [Element],
        open: UInt8,
        close: UInt8,
        to out: inout [UInt8],
        indent: Int?,
        _ writeElement: (Element, inout [UInt8], Int?) -> Void
    ) {
        out.append(open)
        let inner = indent.map { $0 + 1 }
        for (i, element) in elements.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            if let inner { Self.newline(to: &out, indent: inner) }
            writeElement(element, &out, inner)
        }
        if let indent, !elements.isEmpty { Self.newline(to: &out, indent: indent) }
        out.append(close)
    }

    private static func newline(to out: inout [UInt8], indent: Int) {
        out.append(0x0A)
        out += [UInt8](repeating: 0x20, count: 2 * indent)
    }
}

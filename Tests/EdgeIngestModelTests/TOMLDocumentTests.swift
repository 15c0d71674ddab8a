import Testing

@testable import EdgeIngestModel

@Suite struct TOMLDocumentTests {
    @Test func tablesArraysAndLines() throws {
        let root = try TOMLDocument.parse(
            """
            # comment
            top = "x" # trailing comment
            [a.b]
            n = 1_000
            f = 2.5
            list = [
              "one", # first
              'two',
            ]
            inline = { type = "string", required = false }
            [[inputs]]
            kind = "stdin"
            [[inputs]]
            kind = "file"
            "quoted key" = true
            """
        )
        guard case .string("x") = root["top"]?.kind else {
            Issue.record("top")
            return
        }
        guard case .table(let a) = root["a"]?.kind, case .table(let b) = a["b"]?.kind else {
            Issue.record("a.b")
            return
        }
        guard case .integer(1000) = b["n"]?.kind, case .float(2.5) = b["f"]?.kind else {
            Issue.record("numbers")
            return
        }
        guard case .array(let items) = b["list"]?.kind else {
            Issue.record("list")
            return
        }
        #expect(items.count == 2)
        #expect(b["list"]?.line == 6)
        guard case .array(let inputs) = root["inputs"]?.kind, inputs.count == 2,
            case .table(let second) = inputs[1].kind
        else {
            Issue.record("inputs")
            return
        }
        #expect(second["quoted key"]?.line == 15)
    }

    @Test(arguments: [
        ("a = 1\na = 2", "line 2: key 'a' is defined twice (first on line 1)"),
        ("a = \"x", "line 1: unterminated string"),
        ("[t]\n[t]", "line 2: table [t] is defined twice"),
        ("a = [1, 2", "line 1: unterminated array"),
        ("a = 1 2", "line 1: unexpected text after the value; put one key = value per line"),
        (
            "a = 1979-05-27",
            "line 1: '1979-05-27' is not a value: quote strings (\"...\"); numbers, true/false, arrays and tables are unquoted"
        ),
    ])
    func syntaxErrorsNameTheirLine(text: String, message: String) {
        #expect {
            try TOMLDocument.parse(text)
        } throws: { error in
            (error as? TOMLError)?.description == message
        }
    }

    /// Found by Fuzz/TOMLFuzz.swift: nesting recursed without a bound, and
    /// ~38,000 levels crashed `ingestd check-config` with a stack overflow.
    @Test(arguments: [100, 40_000])
    func deepNestingIsAnErrorNotACrash(levels: Int) {
        let text = "a = " + String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
        #expect {
            try TOMLDocument.parse(text)
        } throws: { error in
            (error as? TOMLError)?.description == "line 1: arrays and inline tables nest more than 64 levels deep"
        }
        #expect(throws: Never.self) {
            try TOMLDocument.parse("a = " + String(repeating: "[", count: 64) + String(repeating: "]", count: 64))
        }
    }
}

import Foundation
import Testing

@testable import EdgeIngestCore

/// JSONValue replaces Foundation's JSON coders outside the record path;
/// Foundation (linked into the tests, not the agent) is the reference.
@Suite struct JSONValueTests {
    /// The same document, as Foundation reads it: for comparing our parse
    /// and our text with Foundation's.
    func foundation(_ text: String) throws -> NSObject {
        try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as! NSObject
    }

    func foundation(_ value: JSONValue) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let b): return b
        case .int(let i): return i
        case .double(let d): return d
        case .string(let s): return s
        case .array(let items): return items.map(foundation)
        case .object(let members): return Dictionary(members.map { ($0.0, foundation($0.1)) }, uniquingKeysWith: { $1 })
        }
    }

    static let documents = [
        #"{"a":1,"b":[true,false,null],"c":{"d":"e"},"f":-2.5e-3,"g":""}"#,
        #"  [ 1 , 2.0 , -0 , 1E2 , 9223372036854775807 , -9223372036854775808 , 9223372036854775808 ]  "#,
        #"{"esc":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00","raw":"é€😀"}"#,
        #""just a string""#,
        "123",
        #"{"nested":[[[{"x":[]}]]],"empty":{}}"#,
        #"{"dup":1,"dup":2}"#,
    ]

    @Test(arguments: documents)
    func parsesWhatFoundationParses(_ text: String) throws {
        let value = try JSONValue.parse(Array(text.utf8))
        #expect(foundation(value) as! NSObject == (try foundation(text)))
        // Written back, compact and pretty, Foundation reads the same document.
        #expect((try foundation(value.text())) == (try foundation(text)))
        #expect((try foundation(value.text(pretty: true))) == (try foundation(text)))
        // Read again, the text is the same (a whole double such as 2.0 is written as 2).
        #expect(try JSONValue.parse(Array(value.text(pretty: true).utf8)).text() == value.text())
    }

    @Test func numbersAreIntegersWhenWholeAndInRangeElseDoubles() throws {
        let value = try JSONValue.parse(Array("[7, 7.0, 7e0, 9223372036854775808, 0.1]".utf8))
        #expect(value == .array([.int(7), .double(7), .double(7), .double(9_223_372_036_854_775_808), .double(0.1)]))
        #expect(value.array?[1].int64 == 7 && value.array?[4].int64 == nil && value.array?[0].double == 7)
    }

    static let invalid: [(String, String)] = [
        ("", "a value"),
        ("{", "a member name in quotes"),
        (#"{"a" 1}"#, "':' after a member name"),
        (#"{"a":1,}"#, "a member name in quotes"),
        ("[1,]", "a value"),
        ("[1 2]", "',' or ']'"),
        ("01", "no leading zero"),
        ("1.", "a digit after '.'"),
        ("-", "a digit"),
        ("1e", "a digit in the exponent"),
        ("1e999", "a number within the range of a double"),
        ("tru", "'true'"),
        ("\"a\nb\"", "no control character inside a string (escape it)"),
        (#""\x""#, #"one of \" \\ \/ \b \f \n \r \t \uXXXX"#),
        (#""\ud800""#, "a low surrogate"),
        (#""\udc00""#, "a Unicode scalar, not a lone surrogate"),
        (#""\u12G4""#, "four hex digits after '\\u'"),
        ("\"abc", "a closing '\"'"),
        ("{} x", "the end of the document"),
        (String(repeating: "[", count: 65) + String(repeating: "]", count: 65), "at most 64 levels of nesting"),
    ]

    @Test(arguments: invalid)
    func invalidDocumentsSayWhatWasExpected(_ text: String, _ expected: String) throws {
        #expect { try JSONValue.parse(Array(text.utf8)) } throws: { error in
            "\(error)".contains(expected) && "\(error)".hasPrefix("invalid JSON at byte ")
        }
        // Foundation refuses them too (the nesting limit is ours alone, and
        // its parser lets a trailing comma pass).
        if !expected.hasPrefix("at most"), !text.contains(",]"), !text.contains(",}") {
            #expect(throws: (any Error).self) {
                try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
            }
        }
    }

    /// The offset points at where the problem starts.
    @Test(arguments: [
        ("01", 0), (#""\x""#, 1), (#""\udc00""#, 1), (#"["\ud83d\u0041"]"#, 2), ("[1, 2 3]", 6), (#"{"a":-}"#, 6),
        ("[1e999]", 1),
    ])
    func theOffsetIsWhereTheProblemStarts(_ text: String, _ offset: Int) {
        #expect { try JSONValue.parse(Array(text.utf8)) } throws: { error in
            (error as? JSONSyntaxError)?.offset == offset
        }
    }

    @Test func nestingCountsContainersOnly() throws {
        let deepest = String(repeating: "[", count: 64) + "1" + String(repeating: "]", count: 64)
        #expect(try JSONValue.parse(Array(deepest.utf8)).text() == deepest)
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(Array(("[" + deepest + "]").utf8)) }
    }

    @Test func aByteOrderMarkIsSkippedAsFoundationDid() throws {
        #expect(try JSONValue.parse([0xEF, 0xBB, 0xBF] + Array(#"{"a":1}"#.utf8)) == .object([("a", .int(1))]))
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(Array(#"{"a":1}"#.utf8) + [0xEF, 0xBB, 0xBF]) }
    }

    @Test func theLowestIntegerAsADoubleIsWrittenWithoutTrapping() throws {
        let value = JSONValue.double(-9_223_372_036_854_775_808)
        #expect(try JSONValue.parse(Array(value.text().utf8)).double == -9_223_372_036_854_775_808)
    }

    @Test func invalidUTF8InAStringIsRefused() {
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func theErrorNeverQuotesTheDocument() {
        #expect { try JSONValue.parse(Array(#"{"access_token":"tok-SECRET" "#.utf8)) } throws: { error in
            !"\(error)".contains("SECRET")
        }
    }

    @Test func objectWithoutNilsLeavesThemOutAsCodableDoes() {
        let value = JSONValue.object(omittingNils: [("a", .int(1)), ("b", nil), ("c", .null)])
        #expect(value.text() == #"{"a":1,"c":null}"#)
        #expect(value["b"] == nil && value["c"]?.isNull == true)
    }

    @Test func prettyTextIsIndentedTwoSpaces() {
        let value = JSONValue.object([("a", .array([.int(1), .object([])])), ("b", .object([("c", .bool(true))]))])
        #expect(value.text(pretty: true) == "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": {\n    \"c\": true\n  }\n}")
    }

    /// The credential cache reads files Foundation's JSONEncoder wrote
    /// (earlier versions) and writes what it would write.
    @Test func theCredentialCacheMatchesCodable() throws {
        let users = [
            StoredUser(
                id: "u1",
                provider: "api-key",
                accessToken: "a\"1/é",
                accessExpiresAt: 1_700_000_000_000,
                refreshToken: "r1",
                loggedInAt: 1_699_999_000_000
            ),
            StoredUser(
                id: "u2",
                provider: "anonymous",
                accessToken: "a2",
                accessExpiresAt: -1,
                refreshToken: "r2",
                loggedInAt: 0,
                refreshRefused: true
            ),
        ]
        for contents in [
            CredentialStore.Contents(version: 1, users: users, currentUserID: "u2"),
            CredentialStore.Contents(version: 1, users: [], currentUserID: nil),
        ] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let codable = String(decoding: try encoder.encode(contents), as: UTF8.self)
            let ours = contents.json.text()
            #expect((try foundation(ours)) == (try foundation(codable)))
            #expect(CredentialStore.Contents(json: try JSONValue.parse(Array(codable.utf8))) == contents)
            #expect(try JSONDecoder().decode(CredentialStore.Contents.self, from: Data(ours.utf8)) == contents)
        }
        #expect(
            CredentialStore.Contents(json: try JSONValue.parse(Array(#"{"version":1,"users":[{"id":1}]}"#.utf8))) == nil
        )
        // refreshRefused: absent is false (files from before the flag), another type is damage.
        let user = #"{"id":"u","provider":"p","accessToken":"a","accessExpiresAt":1,"refreshToken":"r","loggedInAt":0"#
        #expect(StoredUser(json: try JSONValue.parse(Array((user + "}").utf8)))?.refreshRefused == false)
        #expect(
            StoredUser(json: try JSONValue.parse(Array((user + #","refreshRefused":true}"#).utf8)))?.refreshRefused
                == true
        )
        #expect(StoredUser(json: try JSONValue.parse(Array((user + #","refreshRefused":"yes"}"#).utf8))) == nil)
    }

    @Test func anAbsurdTokenLifetimeDoesNotOverflow() {
        #expect(AuthClient.milliseconds(1800) == 1_800_000)
        #expect(AuthClient.milliseconds(-5) == 0)
        #expect(AuthClient.milliseconds(.max) == 10 * 366 * 86_400 * 1000)
    }
}

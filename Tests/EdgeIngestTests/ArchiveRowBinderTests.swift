import Testing

@testable import EdgeIngestCore

/// ``ArchiveRowBinder`` stores every column exactly as the archive's insert
/// did when SQLite took each line apart with `json_extract` (the oracle:
/// the same lines through that statement into a twin table), for values in
/// every form a JSON line can hold them.
@Suite struct ArchiveRowBinderTests {
    static let type = try! RecordType(
        name: "Probe",
        fields: [
            .init(name: "ts", type: .timestamp),
            .init(name: "deviceId", type: .string),
            .init(name: "temp", type: .double),
            .init(name: "count", type: .int),
            .init(name: "ok", type: .bool, isRequired: false),
            .init(name: "ref", type: .objectId, isRequired: false),
            .init(name: "owner", type: .string, isRequired: false),
        ]
    )

    static let lines = [
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"count":3,"ok":true,"ref":"674000000000000000000009","owner":"alice"}"#,
        #"{"_id":"674000000000000000000002","ts":"2026-11-21T10:00:00.100Z","deviceId":"W\u0058 \"q\" é ☃ \n","temp":-0.0,"count":-7,"ok":false}"#,
        #"{"count":9007199254740993,"temp":1E3,"deviceId":"","ts":"2026-11-21T10:00:00Z","_id":"674000000000000000000003","owner":null}"#,
        #"{"_id":"674000000000000000000004","ts":"x","deviceId":"d","temp":1.5e-7,"count":0,"ok":null,"ref":null,"extra":[1,{"a":2}]}"#,
        #"{"_id":"674000000000000000000005","ts":"t","deviceId":"d","temp":55,"count":2.0,"owner":"b\u00e9"}"#,
        #"  {"_id" : "67400000000000000000000\u0036" , "deviceId" : "d", "temp" : 1.7976931348623157e308, "count":1}  "#,
    ]

    static let columns = ["_id"] + type.fields.map(\.name)

    static func table(_ name: String, in db: SQLiteConnection) throws {
        try db.execute(
            "CREATE TABLE \(name) (\"_id\" TEXT NOT NULL, ts TEXT, deviceId TEXT, temp REAL, count INTEGER, ok INTEGER, ref TEXT, owner TEXT NOT NULL, PRIMARY KEY (owner, \"_id\"))"
        )
    }

    static func rows(_ table: String, in db: SQLiteConnection) throws -> [[String]] {
        let select = try db.prepare(
            "SELECT \(columns.map { "quote(\"\($0)\") || ' ' || typeof(\"\($0)\")" }.joined(separator: ", ")) FROM \(table) ORDER BY \"_id\""
        )
        var out: [[String]] = []
        while try select.step() { out.append((0..<Int32(columns.count)).map { select.string($0) }) }
        return out
    }

    @Test func everyColumnIsWhatJsonExtractGave() throws {
        let db = try SQLiteConnection(path: ":memory:", displayName: "test")
        try Self.table("bound", in: db)
        try Self.table("extracted", in: db)
        let insert = try db.prepare(
            "INSERT INTO bound (\(Self.columns.map { "\"\($0)\"" }.joined(separator: ", "))) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        )
        let oracle = try db.prepare(
            "INSERT INTO extracted (\(Self.columns.map { "\"\($0)\"" }.joined(separator: ", "))) SELECT "
                + Self.columns.map {
                    $0 == "owner" ? "coalesce(json_extract(?1, '$.\"owner\"'), '')" : "json_extract(?1, '$.\"\($0)\"')"
                }.joined(separator: ", ")
        )
        var binder = ArchiveRowBinder(type: Self.type, ownerField: "owner")
        for line in Self.lines {
            let bytes = Array(line.utf8)
            try bytes.withUnsafeBytes { raw in
                let taken = binder.bind(raw, to: insert)
                #expect(taken, "not taken as a record: \(line)")
                try insert.run()
                oracle.bind(1, text: raw)
                try oracle.run()
            }
        }
        let bound = try Self.rows("bound", in: db)
        let extracted = try Self.rows("extracted", in: db)
        #expect(bound.count == Self.lines.count)
        for (mine, theirs) in zip(bound, extracted) { #expect(mine == theirs) }
    }

    @Test(arguments: [
        "not json", #"{"deviceId":"no id"}"#, #"{"_id":7,"deviceId":"numeric id"}"#, "[1,2]", #"{"_id":null}"#, "",
        #"{"deviceId":"left over","temp":1.5,"ok":true,"_id":7}"#, #"{"count":3,"owner":"x","deviceId":"d"}"#,
    ])
    func aLineThatIsNotARecordIsRefusedAndLeavesNothingBound(_ line: String) throws {
        let db = try SQLiteConnection(path: ":memory:", displayName: "test")
        try Self.table("bound", in: db)
        let insert = try db.prepare(
            "INSERT INTO bound (\(Self.columns.map { "\"\($0)\"" }.joined(separator: ", "))) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        )
        var binder = ArchiveRowBinder(type: Self.type, ownerField: "owner")
        let bytes = Array(line.utf8)
        let taken = bytes.withUnsafeBytes { binder.bind($0, to: insert) }
        #expect(!taken)
        // Nothing left bound: the next line's missing fields are NULL, not the refused line's values.
        let next = Array(#"{"_id":"674000000000000000000001","ts":"t"}"#.utf8)
        try next.withUnsafeBytes { raw in
            let taken = binder.bind(raw, to: insert)
            #expect(taken)
            try insert.run()
        }
        #expect(
            try Self.rows("bound", in: db) == [
                [
                    "'674000000000000000000001' text", "'t' text", "NULL null", "NULL null", "NULL null", "NULL null",
                    "NULL null", "'' text",
                ]
            ]
        )
        // Nothing left bound after a run either: one now inserts NULLs, which the table refuses.
        #expect(throws: EdgeIngestError.self) { try insert.run() }
    }
}

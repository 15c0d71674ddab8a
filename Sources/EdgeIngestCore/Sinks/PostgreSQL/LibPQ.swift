#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libpq (PostgreSQL's C client), loaded with `dlopen` the first time a
/// PostgreSQL sink connects. The agent therefore does not link libpq and its
/// package's dependencies do not grow (docs/SINKS.md): a box that never uses the
/// `postgresql` sink needs no libpq5 installed, and one that does gets a
/// clear error, not a binary that refuses to start.
///
/// Only the calls the sink needs, with the C signatures of libpq-fe.h
/// (`libpq.so.5`; the connection sets `tcp_user_timeout`, which needs the
/// libpq of PostgreSQL 12 or later — Debian 11 ships 13, Debian 12 ships 15).
// Unchecked: immutable C function pointers, set once by dlopen/dlsym; libpq
// is thread-safe per connection, and a connection is one sink's.
struct LibPQ: @unchecked Sendable {
    typealias Connection = OpaquePointer
    typealias Result = OpaquePointer
    typealias CStrings = UnsafePointer<UnsafePointer<CChar>?>
    typealias CText = UnsafeMutablePointer<CChar>
    typealias NoticeProcessor = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Void

    let connectdbParams: @convention(c) (CStrings?, CStrings?, Int32) -> Connection?
    let status: @convention(c) (Connection?) -> Int32
    let errorMessage: @convention(c) (Connection?) -> CText?
    let finish: @convention(c) (Connection?) -> Void
    let socket: @convention(c) (Connection?) -> Int32
    let setNoticeProcessor: @convention(c) (Connection?, NoticeProcessor?, UnsafeMutableRawPointer?) -> OpaquePointer?
    let sendQueryParams:
        @convention(c) (
            Connection?, UnsafePointer<CChar>?, Int32, UnsafePointer<UInt32>?, CStrings?, UnsafePointer<Int32>?,
            UnsafePointer<Int32>?, Int32
        ) -> Int32
    let consumeInput: @convention(c) (Connection?) -> Int32
    let isBusy: @convention(c) (Connection?) -> Int32
    let getResult: @convention(c) (Connection?) -> Result?
    let resultStatus: @convention(c) (Result?) -> Int32
    let resultErrorField: @convention(c) (Result?, Int32) -> CText?
    let cmdTuples: @convention(c) (Result?) -> CText?
    let ntuples: @convention(c) (Result?) -> Int32
    let getvalue: @convention(c) (Result?, Int32, Int32) -> CText?
    let clear: @convention(c) (Result?) -> Void

    // Values from libpq-fe.h.
    static let connectionOK: Int32 = 0
    static let commandOK: Int32 = 1
    static let tuplesOK: Int32 = 2
    static let fieldSQLState = Int32(UInt8(ascii: "C"))
    static let fieldPrimaryMessage = Int32(UInt8(ascii: "M"))

    /// The library, loaded on first use. A failure is not kept: once the
    /// operator installs libpq5, the next connection attempt finds it.
    static func shared() throws(PostgresError) -> LibPQ {
        try loaded.get()
    }
    private static let loaded = LoadedOnFirstUse<LibPQ, PostgresError> { load(names: ["libpq.so.5", "libpq.so"]) }

    static func load(names: [String]) -> Swift.Result<LibPQ, PostgresError> {
        guard var library = DynamicLibrary.open(firstOf: names) else {
            return .failure(
                PostgresError(
                    kind: .configuration,
                    message:
                        "libpq.so.5 (PostgreSQL's client library) is not installed: the postgresql sink needs it (apt-get install libpq5)"
                )
            )
        }
        let connectdbParams: (@convention(c) (CStrings?, CStrings?, Int32) -> Connection?)? = library.function(
            "PQconnectdbParams"
        )
        let status: (@convention(c) (Connection?) -> Int32)? = library.function("PQstatus")
        let errorMessage: (@convention(c) (Connection?) -> CText?)? = library.function("PQerrorMessage")
        let finish: (@convention(c) (Connection?) -> Void)? = library.function("PQfinish")
        let socket: (@convention(c) (Connection?) -> Int32)? = library.function("PQsocket")
        let setNoticeProcessor:
            (@convention(c) (Connection?, NoticeProcessor?, UnsafeMutableRawPointer?) -> OpaquePointer?)? =
                library.function("PQsetNoticeProcessor")
        let sendQueryParams:
            (
                @convention(c) (
                    Connection?, UnsafePointer<CChar>?, Int32, UnsafePointer<UInt32>?, CStrings?, UnsafePointer<Int32>?,
                    UnsafePointer<Int32>?,
                    Int32
                ) -> Int32
            )? = library.function("PQsendQueryParams")
        let consumeInput: (@convention(c) (Connection?) -> Int32)? = library.function("PQconsumeInput")
        let isBusy: (@convention(c) (Connection?) -> Int32)? = library.function("PQisBusy")
        let getResult: (@convention(c) (Connection?) -> Result?)? = library.function("PQgetResult")
        let resultStatus: (@convention(c) (Result?) -> Int32)? = library.function("PQresultStatus")
        let resultErrorField: (@convention(c) (Result?, Int32) -> CText?)? = library.function("PQresultErrorField")
        let cmdTuples: (@convention(c) (Result?) -> CText?)? = library.function("PQcmdTuples")
        let ntuples: (@convention(c) (Result?) -> Int32)? = library.function("PQntuples")
        let getvalue: (@convention(c) (Result?, Int32, Int32) -> CText?)? = library.function("PQgetvalue")
        let clear: (@convention(c) (Result?) -> Void)? = library.function("PQclear")
        guard let connectdbParams, let status, let errorMessage, let finish, let socket, let setNoticeProcessor,
            let sendQueryParams,
            let consumeInput, let isBusy, let getResult, let resultStatus, let resultErrorField, let cmdTuples,
            let ntuples, let getvalue,
            let clear
        else {
            library.close()
            return .failure(
                PostgresError(
                    kind: .configuration,
                    message:
                        "libpq.so.5 lacks \(library.missing.joined(separator: ", ")): install libpq5 from PostgreSQL 12 or later"
                )
            )
        }
        return .success(
            LibPQ(
                connectdbParams: connectdbParams,
                status: status,
                errorMessage: errorMessage,
                finish: finish,
                socket: socket,
                setNoticeProcessor: setNoticeProcessor,
                sendQueryParams: sendQueryParams,
                consumeInput: consumeInput,
                isBusy: isBusy,
                getResult: getResult,
                resultStatus: resultStatus,
                resultErrorField: resultErrorField,
                cmdTuples: cmdTuples,
                ntuples: ntuples,
                getvalue: getvalue,
                clear: clear
            )
        )
    }
}

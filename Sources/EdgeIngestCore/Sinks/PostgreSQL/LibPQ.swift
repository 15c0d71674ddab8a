import Synchronization

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
        try loaded.withLock { (cached: inout LibPQ?) throws(PostgresError) -> LibPQ in
            if let cached { return cached }
            let library = try load(names: ["libpq.so.5", "libpq.so"]).get()
            cached = library
            return library
        }
    }
    private static let loaded = Mutex<LibPQ?>(nil)

    static func load(names: [String]) -> Swift.Result<LibPQ, PostgresError> {
        var handle: UnsafeMutableRawPointer?
        for name in names where handle == nil { handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) }
        guard let handle else {
            return .failure(
                PostgresError(
                    kind: .configuration,
                    message:
                        "libpq.so.5 (PostgreSQL's client library) is not installed: the postgresql sink needs it (apt-get install libpq5)"
                )
            )
        }
        var missing: [String] = []
        func symbol<F>(_ name: String, as _: F.Type = F.self) -> F? {
            guard let pointer = dlsym(handle, name) else {
                missing.append(name)
                return nil
            }
            return unsafeBitCast(pointer, to: F.self)
        }
        let connectdbParams: (@convention(c) (CStrings?, CStrings?, Int32) -> Connection?)? = symbol(
            "PQconnectdbParams"
        )
        let status: (@convention(c) (Connection?) -> Int32)? = symbol("PQstatus")
        let errorMessage: (@convention(c) (Connection?) -> CText?)? = symbol("PQerrorMessage")
        let finish: (@convention(c) (Connection?) -> Void)? = symbol("PQfinish")
        let socket: (@convention(c) (Connection?) -> Int32)? = symbol("PQsocket")
        let setNoticeProcessor:
            (@convention(c) (Connection?, NoticeProcessor?, UnsafeMutableRawPointer?) -> OpaquePointer?)? =
                symbol("PQsetNoticeProcessor")
        let sendQueryParams:
            (
                @convention(c) (
                    Connection?, UnsafePointer<CChar>?, Int32, UnsafePointer<UInt32>?, CStrings?, UnsafePointer<Int32>?,
                    UnsafePointer<Int32>?,
                    Int32
                ) -> Int32
            )? = symbol("PQsendQueryParams")
        let consumeInput: (@convention(c) (Connection?) -> Int32)? = symbol("PQconsumeInput")
        let isBusy: (@convention(c) (Connection?) -> Int32)? = symbol("PQisBusy")
        let getResult: (@convention(c) (Connection?) -> Result?)? = symbol("PQgetResult")
        let resultStatus: (@convention(c) (Result?) -> Int32)? = symbol("PQresultStatus")
        let resultErrorField: (@convention(c) (Result?, Int32) -> CText?)? = symbol("PQresultErrorField")
        let cmdTuples: (@convention(c) (Result?) -> CText?)? = symbol("PQcmdTuples")
        let ntuples: (@convention(c) (Result?) -> Int32)? = symbol("PQntuples")
        let getvalue: (@convention(c) (Result?, Int32, Int32) -> CText?)? = symbol("PQgetvalue")
        let clear: (@convention(c) (Result?) -> Void)? = symbol("PQclear")
        guard let connectdbParams, let status, let errorMessage, let finish, let socket, let setNoticeProcessor,
            let sendQueryParams,
            let consumeInput, let isBusy, let getResult, let resultStatus, let resultErrorField, let cmdTuples,
            let ntuples, let getvalue,
            let clear
        else {
            return .failure(
                PostgresError(
                    kind: .configuration,
                    message:
                        "libpq.so.5 lacks \(missing.joined(separator: ", ")): install libpq5 from PostgreSQL 12 or later"
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

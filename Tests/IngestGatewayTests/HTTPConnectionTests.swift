import EdgeIngest
import Foundation
import Synchronization
import Testing

@testable import IngestGateway

#if canImport(Glibc)
import Glibc
#endif

/// Both ends of a `socketpair(AF_UNIX, SOCK_STREAM)`: the server end is read
/// by an `HTTPConnection`, the client end is written (and read) by the test.
/// Ends are shut down, never closed early, so a descriptor number is never
/// reused while a test still holds it.
private final class SocketPair: @unchecked Sendable {
    let server: Int32
    let client: Int32

    init() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        server = fds[0]
        client = fds[1]
    }

    deinit {
        close(server)
        close(client)
    }

    /// Writes all of `text` from the client end; false if the server end is gone.
    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(client, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            sent += n
        }
        return true
    }

    /// The client stops writing: the server reads end of file.
    func finishWriting() { shutdown(client, Int32(SHUT_WR)) }

    /// What the server wrote to the client: reads until `count` bytes came
    /// or nothing more arrives within `timeoutMs`.
    func received(atLeast count: Int = 1, timeoutMs: Int32) -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            var pfd = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, timeoutMs) > 0 else { break }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    func connection(_ limits: HTTPLimits, stop: StopSignal = StopSignal()) -> DrivenConnection {
        _ = fcntl(server, F_SETFL, fcntl(server, F_GETFL) | O_NONBLOCK)
        return DrivenConnection(
            connection: HTTPConnection(fd: server, limits: limits, now: monotonicMilliseconds()),
            stop: stop
        )
    }
}

/// Drives an ``HTTPConnection`` the way ``HTTPEventLoop`` does — wait for
/// the socket or the connection's deadline, read, frame, check expiry —
/// but for one connection on the test's thread, blocking until a request,
/// a refusal or a close: so the state machine's reading, framing and time
/// limits are tested on a real socket, one connection at a time.
struct DrivenConnection: Sendable {
    var connection: HTTPConnection
    let stop: StopSignal
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    init(connection: HTTPConnection, stop: StopSignal) {
        self.connection = connection
        self.stop = stop
    }

    enum ReadOutcome {
        case request(HTTPRequest)
        case closed
        case refused(HTTPRequestError)
    }

    mutating func readRequest() -> ReadOutcome {
        var event = connection.next(now: monotonicMilliseconds())
        while true {
            switch event {
            case .request(let request): return .request(request)
            case .refused(let error): return .refused(error)
            case .closed: return .closed
            case .continueExpected:
                let bytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
                _ = connection.send(bytes, deadline: monotonicMilliseconds() + 1000)
                event = .needMore
            case .needMore:
                let now = monotonicMilliseconds()
                switch connection.expiry(now: now) {
                case .closeIdle: return .closed
                case .refuse(let error): return .refused(error)
                case .none: break
                }
                var fds = [
                    pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: stop.readFD, events: Int16(POLLIN), revents: 0),
                ]
                let wait = Int32(clamping: max(1, connection.deadline() - now))
                guard poll(&fds, 2, wait) > 0 else { continue }
                if fds[1].revents != 0 { return .closed }
                if fds[0].revents != 0 { event = connection.readable(now: monotonicMilliseconds(), into: &chunk) }
            }
        }
    }

    func write(_ response: HTTPServerResponse, to request: HTTPRequest?, keepAlive: Bool) -> Bool {
        connection.write(response, to: request, keepAlive: keepAlive)
    }
}

/// A value shared with a client thread.
private final class Shared<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// Runs `body` on its own OS thread (a client acting while the test's
/// thread is blocked in `readRequest`); `join` waits for it.
private final class ClientThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Void) {
        let done = done
        let thread = Thread {
            body()
            done.signal()
        }
        thread.start()
    }

    func join() { done.wait() }
}

private func limits(
    headBytes: Int = 16 * 1024,
    bodyBytes: Int = 1 << 20,
    requestMs: Int = 10_000,
    idleMs: Int = 10_000
) -> HTTPLimits {
    var limits = HTTPLimits()
    limits.maxHeadBytes = headBytes
    limits.maxBodyBytes = bodyBytes
    limits.requestTimeoutMilliseconds = requestMs
    limits.idleTimeoutMilliseconds = idleMs
    return limits
}

extension DrivenConnection.ReadOutcome {
    fileprivate var request: HTTPRequest? {
        if case .request(let request) = self { request } else { nil }
    }
    fileprivate var refusal: HTTPRequestError? {
        if case .refused(let error) = self { error } else { nil }
    }
    fileprivate var isClosed: Bool {
        if case .closed = self { true } else { false }
    }
}

private func milliseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
}

/// Proves that `HTTPConnection` reads whole requests (head and body) off a
/// real socket: one after the other when pipelined or kept alive, however
/// the bytes are split, and that it enforces its limits: 413 for a body
/// announced too large (without reading it), 431 for a head over
/// `maxHeadBytes`, 408 when a head or body is still incomplete at the
/// request deadline (counted from the request's first byte, so trickling
/// does not extend it), `.closed` on end of file, idle timeout or stop, and
/// `100 Continue` only when the client waits for it and the body is welcome.
@Suite struct HTTPConnectionTests {
    // MARK: Reading requests

    @Test func aRequestIsReadWithItsBody() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send("POST /ingest/v1/batches HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world")
        let request = try #require(connection.readRequest().request)
        #expect(request.method == "POST")
        #expect(request.target == "/ingest/v1/batches")
        #expect(request.header("content-length") == "11")
        #expect(request.body == Array("hello world".utf8))
    }

    @Test func pipelinedRequestsAreReadOneAfterTheOther() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send(
            "GET /one HTTP/1.1\r\nHost: h\r\n\r\n"
                + "POST /two HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n12345"
                + "POST /three HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"
        )
        let one = try #require(connection.readRequest().request)
        let two = try #require(connection.readRequest().request)
        let three = try #require(connection.readRequest().request)
        #expect([one.target, two.target, three.target] == ["/one", "/two", "/three"])
        #expect(one.body == [])
        #expect(two.body == Array("12345".utf8))
        #expect(three.body == Array("abc".utf8))
        #expect(one.keepAlive && two.keepAlive && !three.keepAlive)
        pair.finishWriting()
        #expect(connection.readRequest().isClosed)
    }

    @Test func keepAliveRequestsAreReadAsTheyArrive() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        for i in 0..<3 {
            pair.send("POST /\(i) HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\n\(i)")
            let request = try #require(connection.readRequest().request)
            #expect(request.target == "/\(i)")
            #expect(request.body == Array("\(i)".utf8))
            #expect(
                connection.write(HTTPServerResponse(status: 200, body: Array("ok".utf8)), to: request, keepAlive: true)
            )
            let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
            #expect(pair.received(atLeast: answer.count, timeoutMs: 2000) == answer)
        }
    }

    /// The blank line that ends the head split at every point across two
    /// writes: the search must look back over the previous read's tail.
    @Test(arguments: 1...4)
    func aHeadEndSplitAcrossReadsIsFound(split: Int) throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        let whole = Array("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok".utf8)
        let cut = whole.count - 2 - split  // `split` bytes of "\r\n\r\n" go in the second write
        pair.send(Array(whole[..<cut]))
        let client = ClientThread {
            usleep(100_000)
            pair.send(Array(whole[cut...]))
        }
        let request = try #require(connection.readRequest().request)
        client.join()
        #expect(request.target == "/x")
        #expect(request.body == Array("ok".utf8))
    }

    @Test func aBodyArrivingInPiecesIsReadWhole() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 30\r\n\r\n0123456789")
        let client = ClientThread {
            usleep(50_000)
            pair.send("abcdefghij")
            usleep(50_000)
            pair.send("ABCDEFGHIJ" + "GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        }
        let request = try #require(connection.readRequest().request)
        client.join()
        #expect(request.body == Array("0123456789abcdefghijABCDEFGHIJ".utf8))
        // What came after the body is the next request.
        #expect(connection.readRequest().request?.target == "/next")
    }

    @Test func aMalformedHeadIsRefusedWithTheParsersStatus() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send("GET / HTTP/1.1\r\nX-A: b\r\n\r\n")
        #expect(
            connection.readRequest().refusal
                == HTTPRequestError(status: 400, message: "an HTTP/1.1 request needs a Host header")
        )
    }

    @Test func aChunkedBodyIsRefusedWith411() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        #expect(connection.readRequest().refusal?.status == 411)
    }

    // MARK: Size limits

    /// Refused at once from the head: with a 10 s request timeout, waiting
    /// for the (never sent) body would answer 408 instead.
    @Test func aBodyAnnouncedTooLargeIsRefusedWith413WithoutReadingIt() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(bodyBytes: 1024))
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1025\r\n\r\n")
        #expect(
            connection.readRequest().refusal
                == HTTPRequestError(
                    status: 413,
                    message: "the body is 1025 bytes, over this server's max_body_bytes of 1024"
                )
        )
    }

    @Test func aBodyOfExactlyTheLimitIsAccepted() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(bodyBytes: 1024))
        pair.send(
            Array("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1024\r\n\r\n".utf8)
                + [UInt8](repeating: 0x61, count: 1024)
        )
        #expect(connection.readRequest().request?.body.count == 1024)
    }

    @Test func aHeadGrowingPastTheLimitIsRefusedWith431() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(headBytes: 1024))
        // No blank line: a head that never ends.
        pair.send("GET / HTTP/1.1\r\nHost: h\r\nX-Pad: " + String(repeating: "a", count: 3000))
        #expect(
            connection.readRequest().refusal
                == HTTPRequestError(status: 431, message: "the request head is over 1024 bytes")
        )
    }

    @Test func aHeadGrowingPastTheLimitInSmallWritesIsRefusedWith431() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(headBytes: 1024))
        pair.send("GET / HTTP/1.1\r\nHost: h\r\n")
        let client = ClientThread {
            for i in 0..<40 {
                guard pair.send("X-Header-\(i): " + String(repeating: "v", count: 40) + "\r\n") else { return }
                usleep(5_000)
            }
        }
        let outcome = connection.readRequest()
        client.join()
        #expect(outcome.refusal?.status == 431)
    }

    /// A head over `maxHeadBytes` must be refused however it is cut into
    /// reads. Here it arrives whole in one read (one write of 4 KiB on a
    /// socket pair), so the blank line is found before the size is checked.
    @Test func aCompleteHeadOverTheLimitIsRefusedWith431EvenInOneRead() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(headBytes: 1024))
        pair.send("GET / HTTP/1.1\r\nHost: h\r\nX-Pad: " + String(repeating: "a", count: 4000) + "\r\n\r\n")
        let outcome = connection.readRequest()
        #expect(outcome.refusal?.status == 431, "a 4 KiB head was read under a 1 KiB limit: \(outcome)")
    }

    /// The limit is on the head without its blank line: exactly 1024 bytes
    /// pass, 1025 do not, whether read at once or not.
    @Test(arguments: [1024, 1025])
    func aHeadOfExactlyTheLimitIsAcceptedAndOneByteMoreIsNot(size: Int) throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(headBytes: 1024))
        let start = "GET / HTTP/1.1\r\nHost: h\r\nX-Pad: "
        pair.send(start + String(repeating: "a", count: size - start.utf8.count) + "\r\n\r\n")
        let outcome = connection.readRequest()
        if size == 1024 {
            #expect(outcome.request?.header("x-pad")?.count == size - start.utf8.count, "\(outcome)")
        } else {
            #expect(outcome.refusal?.status == 431, "\(outcome)")
        }
    }

    // MARK: Time limits

    /// Slowloris: a byte every 50 ms keeps the connection busy but must not
    /// move the deadline, which runs from the request's first byte.
    @Test func aHeadTricklingPastTheRequestTimeoutIsRefusedWith408() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(requestMs: 300, idleMs: 10_000))
        pair.send("GET / HTTP/1.1\r\n")
        let client = ClientThread {
            for _ in 0..<60 {  // 3 s at most
                usleep(50_000)
                guard pair.send("X") else { return }
            }
        }
        let start = ContinuousClock.now
        let outcome = connection.readRequest()
        let elapsed = milliseconds(ContinuousClock.now - start)
        shutdown(pair.server, Int32(SHUT_RDWR))  // the trickling client's next write fails
        client.join()
        #expect(outcome.refusal == HTTPRequestError(status: 408, message: "the request head did not arrive in time"))
        #expect(elapsed >= 250 && elapsed < 2500, "refused after \(elapsed) ms")
    }

    @Test func aBodyNotArrivingInTimeIsRefusedWith408() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(requestMs: 300))
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nonly ten b")
        #expect(
            connection.readRequest().refusal
                == HTTPRequestError(status: 408, message: "the body did not arrive in time")
        )
    }

    /// A body trickling slower than the minimum rate is cut off once the
    /// grace has passed, long before the request timeout; one that keeps
    /// the rate is read whole.
    @Test func aBodySlowerThanTheMinimumRateIsRefusedWith408() throws {
        var slowLimits = limits(requestMs: 20_000)
        slowLimits.minBodyBytesPerSecond = 1000
        slowLimits.bodyRateGraceMilliseconds = 300
        for (bytesPer50ms, expectRefusal) in [(10, true), (200, false)] {
            let pair = try SocketPair()
            var connection = pair.connection(slowLimits)
            let length = 2000
            pair.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \(length)\r\n\r\n")
            let client = ClientThread {
                var sent = 0
                while sent < length {
                    usleep(50_000)
                    let n = min(bytesPer50ms, length - sent)
                    guard pair.send(String(repeating: "b", count: n)) else { return }
                    sent += n
                }
            }
            let start = ContinuousClock.now
            let outcome = connection.readRequest()
            let elapsed = milliseconds(ContinuousClock.now - start)
            shutdown(pair.server, Int32(SHUT_RDWR))
            client.join()
            if expectRefusal {
                #expect(
                    outcome.refusal
                        == HTTPRequestError(status: 408, message: "the body arrives slower than 1000 bytes/s")
                )
                #expect(elapsed >= 250 && elapsed < 5_000, "refused after \(elapsed) ms")
            } else {
                #expect(outcome.request?.body.count == length)
            }
        }
    }

    /// The request deadline starts at the first byte, not when reading
    /// starts: a client idle for longer than the request timeout (but within
    /// the idle timeout) and then quick is served.
    @Test func idleTimeBeforeARequestDoesNotCountAgainstItsDeadline() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(requestMs: 300, idleMs: 10_000))
        let client = ClientThread {
            usleep(700_000)
            pair.send("GET /late HTTP/1.1\r\nHost: h\r\n\r\n")
        }
        let outcome = connection.readRequest()
        client.join()
        #expect(outcome.request?.target == "/late")
    }

    @Test func anIdleConnectionIsClosedWithoutAnAnswer() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(requestMs: 10_000, idleMs: 200))
        let start = ContinuousClock.now
        #expect(connection.readRequest().isClosed)
        #expect(milliseconds(ContinuousClock.now - start) >= 150)
        #expect(pair.received(timeoutMs: 100) == [])
    }

    // MARK: End of file and stopping

    @Test func endOfFileBeforeARequestCloses() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.finishWriting()
        #expect(connection.readRequest().isClosed)
    }

    /// A client that half-closes right after its request is still answered.
    @Test func aWholeRequestBeforeEndOfFileIsRead() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok")
        pair.finishWriting()
        usleep(50_000)  // both the bytes and the end of file are there at the first read
        #expect(connection.readRequest().request?.body == Array("ok".utf8))
        #expect(connection.readRequest().isClosed)
    }

    @Test func endOfFileInTheHeadCloses() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send("GET / HTTP/1.1\r\nHost: h\r\n")
        pair.finishWriting()
        #expect(connection.readRequest().isClosed)
    }

    @Test func endOfFileInTheBodyCloses() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        pair.finishWriting()
        #expect(connection.readRequest().isClosed)
    }

    /// With 30 s idle and request timeouts, only the stop signal can end
    /// these reads within the margin.
    @Test func theStopSignalClosesAnIdleOrHalfReadConnection() throws {
        for partial in ["", "GET / HTTP/1.1\r\nHo"] {
            let pair = try SocketPair()
            let stop = StopSignal()
            var connection = pair.connection(limits(requestMs: 30_000, idleMs: 30_000), stop: stop)
            if !partial.isEmpty { pair.send(partial) }
            let stopper = ClientThread {
                usleep(100_000)
                stop.stop()
            }
            let start = ContinuousClock.now
            let outcome = connection.readRequest()
            stopper.join()
            #expect(outcome.isClosed, "after \(partial.debugDescription)")
            #expect(milliseconds(ContinuousClock.now - start) < 10_000)
        }
    }

    // MARK: Expect: 100-continue

    /// The client sends its body only after `100 Continue`: without it the
    /// read would end 408 at the 5 s deadline.
    @Test func aClientExpecting100ContinueGetsItAndThenSendsItsBody() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(requestMs: 5_000))
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        let interim = Shared<[UInt8]>([])
        let client = ClientThread {
            let got = pair.received(atLeast: 25, timeoutMs: 3_000)
            interim.value = got
            if got == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8) { pair.send("body") }
        }
        let outcome = connection.readRequest()
        client.join()
        #expect(interim.value == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        #expect(outcome.request?.body == Array("body".utf8))
    }

    @Test func expectIsMatchedWithoutRegardToCase() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(requestMs: 300))
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n")
        // No body follows: the read ends 408, but the interim answer went out first.
        #expect(connection.readRequest().refusal?.status == 408)
        #expect(pair.received(atLeast: 25, timeoutMs: 1_000) == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
    }

    @Test func noContinueIsSentWhenTheBodyAlreadyArrived() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits())
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody")
        #expect(connection.readRequest().request?.body == Array("body".utf8))
        #expect(pair.received(timeoutMs: 200) == [])
    }

    @Test func noContinueIsSentForABodyThatIsTooLarge() throws {
        let pair = try SocketPair()
        var connection = pair.connection(limits(bodyBytes: 10))
        pair.send("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
        #expect(connection.readRequest().refusal?.status == 413)
        #expect(pair.received(timeoutMs: 200) == [])
    }

    // MARK: Writing

    @Test func aResponseIsWrittenWithItsLengthAndConnectionClose() throws {
        let pair = try SocketPair()
        let connection = pair.connection(limits())
        let response = HTTPServerResponse(status: 503, headers: [("Retry-After", "5")], body: Array("{}".utf8))
        #expect(connection.write(response, to: nil, keepAlive: false))
        let expected =
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        #expect(pair.received(atLeast: expected.utf8.count, timeoutMs: 2000) == Array(expected.utf8))
    }

    @Test func aClientThatDoesNotReadItsAnswerCostsTheRequestTimeoutNotAThread() throws {
        let pair = try SocketPair()
        let connection = pair.connection(limits(requestMs: 300))
        // Far more than the socket buffers hold; the client never reads.
        let response = HTTPServerResponse(status: 200, headers: [], body: [UInt8](repeating: 0x41, count: 16 << 20))
        let done = DispatchSemaphore(value: 0)
        let wrote = Mutex<Bool?>(nil)
        Thread.detachNewThread {
            let ok = connection.write(response, to: nil, keepAlive: false)
            wrote.withLock { $0 = ok }
            done.signal()
        }
        let finished = done.wait(timeout: .now() + 5) == .success
        if !finished { shutdown(pair.client, Int32(SHUT_RDWR)) }  // unblock a send that waits for the reader
        #expect(finished, "a blocking send waits until the client reads, past the request timeout")
        if finished { #expect(wrote.withLock { $0 } == false) } else { done.wait() }
    }

    @Test func headAnswersHaveTheLengthButNoBodyAnd204HasNeither() throws {
        let head = HTTPRequest(method: "HEAD", target: "/healthz", isHTTP10: false, headers: [])
        let ok = HTTPServerResponse(status: 200, body: Array("ok\n".utf8))
        #expect(
            String(decoding: ok.serialized(for: head, keepAlive: true), as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"
        )
        let post = HTTPRequest(method: "POST", target: "/auth/v1/apps/a/logout", isHTTP10: false, headers: [])
        #expect(
            String(decoding: HTTPServerResponse(status: 204).serialized(for: post, keepAlive: true), as: UTF8.self)
                == "HTTP/1.1 204 No Content\r\n\r\n"
        )
    }

    @Test func anHTTP10ClientThatAskedToKeepTheConnectionIsTold() throws {
        let request = HTTPRequest(method: "GET", target: "/", isHTTP10: true, headers: [("connection", "keep-alive")])
        let text = String(
            decoding: HTTPServerResponse(status: 200).serialized(for: request, keepAlive: request.keepAlive),
            as: UTF8.self
        )
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n")
    }
}

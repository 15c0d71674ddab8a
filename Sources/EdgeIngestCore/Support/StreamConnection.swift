import CCrypto

#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to a server, optionally over TLS (1.2 or newer, the
/// server's certificate checked against a CA file and the host name),
/// non-blocking underneath: the owner polls ``fd`` (after draining
/// ``read(into:)`` until `.wouldBlock`) and every wait is bounded and ends
/// early when its stop signal fires. Owned by one thread.
///
///     let connection = try StreamConnection.open(host: "127.0.0.1", port: 1883, tls: nil,
///                                                timeoutMilliseconds: 5_000, stop: stop)
///     try connection.writeAll(bytes, timeoutMilliseconds: 5_000, stop: stop)
package final class StreamConnection {
    /// TLS settings: PEM files; nil `caFile` trusts the system's CAs.
    package struct TLSFiles: Sendable, Hashable {
        package var caFile: String?
        package var certificateFile: String?
        package var keyFile: String?
        package init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// Why a connection could not be made or was lost, for an operator.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package let message: String
        package init(_ message: String) { self.message = message }
        package var description: String { message }
    }

    package enum ReadResult: Equatable {
        case bytes(Int)
        case wouldBlock, closed
    }

    package let fd: Int32
    private var tlsContext: OpaquePointer?
    private var ssl: OpaquePointer?

    private init(fd: Int32) { self.fd = fd }

    deinit {
        if let ssl { SSL_free(ssl) }
        if let tlsContext { SSL_CTX_free(tlsContext) }
        close(fd)
    }

    /// Connects to `host:port` (each address the name resolves to, in
    /// turn) and, with `tls`, completes the handshake, all within `timeoutMilliseconds`.
    package static func open(
        host: String,
        port: Int,
        tls: TLSFiles?,
        timeoutMilliseconds: Int,
        stop: StopSignal?
    ) throws(Failure) -> StreamConnection {
        let deadline = monotonicSeconds() + Double(timeoutMilliseconds) / 1000
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw Failure("cannot resolve '\(host)': \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }
        var lastProblem = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        var connected: StreamConnection?
        while let address = entry, connected == nil {
            entry = address.pointee.ai_next
            let fd = socket(
                address.pointee.ai_family,
                address.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                0
            )
            guard fd >= 0 else {
                lastProblem = String(cString: strerror(errno))
                continue
            }
            let connection = StreamConnection(fd: fd)
            if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0 {
                guard errno == EINPROGRESS else {
                    lastProblem = String(cString: strerror(errno))
                    continue
                }
                switch connection.wait(Int16(POLLOUT), until: deadline, stop: stop) {
                case .stopped: throw Failure("stopped while connecting")
                case .timeout:
                    lastProblem = "no answer in \(timeoutMilliseconds) ms"
                    continue
                case .ready: break
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                guard error == 0 else {
                    lastProblem = String(cString: strerror(error))
                    continue
                }
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            connected = connection
        }
        guard let connection = connected else { throw Failure("cannot connect to \(host):\(port): \(lastProblem)") }
        if let tls { try connection.startTLS(tls, host: host, deadline: deadline, stop: stop) }
        return connection
    }

    /// Starts TLS on a connection that began in plain text (a NATS server
    /// sends its INFO first, then the client upgrades).
    package func startTLS(
        _ files: TLSFiles,
        host: String,
        timeoutMilliseconds: Int,
        stop: StopSignal?
    ) throws(Failure) {
        try startTLS(files, host: host, deadline: monotonicSeconds() + Double(timeoutMilliseconds) / 1000, stop: stop)
    }

    private func startTLS(_ files: TLSFiles, host: String, deadline: Double, stop: StopSignal?) throws(Failure) {
        var error = [CChar](repeating: 0, count: 256)
        guard
            let context = edgeingest_tls_client_context(
                files.caFile,
                files.certificateFile,
                files.keyFile,
                &error,
                error.count
            )
        else {
            throw Failure("cannot set up TLS with the given files: \(String(cBuffer: error))")
        }
        tlsContext = context
        var address = in6_addr()
        let isAddress = inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
        guard let ssl = edgeingest_tls_client(context, fd, host, isAddress ? 1 : 0) else {
            throw Failure("cannot start TLS to '\(host)'")
        }
        self.ssl = ssl
        while true {
            ERR_clear_error()  // SSL_get_error reads the thread's error queue: empty it first
            let result = SSL_do_handshake(ssl)
            if result == 1 { return }
            let code = SSL_get_error(ssl, result)
            let events: Int32
            switch code {
            case SSL_ERROR_WANT_READ: events = POLLIN
            case SSL_ERROR_WANT_WRITE: events = POLLOUT
            default:
                let verify = String(cString: edgeingest_tls_verify_error(ssl))
                edgeingest_tls_error(&error, error.count)
                let reason = !verify.isEmpty ? "the server's certificate: \(verify)" : String(cBuffer: error)
                throw Failure(
                    "the TLS handshake with '\(host)' failed: \(reason.isEmpty ? "the connection closed" : reason)"
                )
            }
            switch wait(Int16(events), until: deadline, stop: stop) {
            case .stopped: throw Failure("stopped during the TLS handshake")
            case .timeout: throw Failure("the TLS handshake with '\(host)' did not finish in time")
            case .ready: continue
            }
        }
    }

    /// Reads what is there now, without waiting.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> ReadResult {
        if let ssl {
            ERR_clear_error()
            let n = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
            if n > 0 { return .bytes(Int(n)) }
            switch SSL_get_error(ssl, n) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
            case SSL_ERROR_ZERO_RETURN: return .closed
            default:
                var error = [CChar](repeating: 0, count: 256)
                edgeingest_tls_error(&error, error.count)
                let reason = String(cBuffer: error)
                if reason.isEmpty { return .closed }
                throw Failure("TLS: \(reason)")
            }
        }
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET: return .closed
            default: throw Failure(String(cString: strerror(errno)))
            }
        }
    }

    /// Writes all of `bytes`, waiting for room at most until the deadline.
    package func writeAll(_ bytes: [UInt8], timeoutMilliseconds: Int, stop: StopSignal?) throws(Failure) {
        let deadline = monotonicSeconds() + Double(timeoutMilliseconds) / 1000
        var sent = 0
        while sent < bytes.count {
            var events = POLLOUT
            let n: Int = bytes.withUnsafeBytes { raw in
                let rest = UnsafeRawBufferPointer(rebasing: raw[sent...])
                if let ssl {
                    ERR_clear_error()
                    let n = SSL_write(ssl, rest.baseAddress, Int32(min(rest.count, Int(Int32.max))))
                    if n > 0 { return Int(n) }
                    let code = SSL_get_error(ssl, n)
                    if code == SSL_ERROR_WANT_READ { events = POLLIN }
                    return code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE ? 0 : -1
                }
                let n = send(fd, rest.baseAddress, rest.count, Int32(MSG_NOSIGNAL))
                if n >= 0 { return n }
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1
            }
            if n < 0 { throw Failure("the connection was lost while writing") }
            sent += n
            if sent < bytes.count, n == 0 {
                switch wait(Int16(events), until: deadline, stop: stop) {
                case .stopped: throw Failure("stopped while writing")
                case .timeout: throw Failure("the server took nothing for \(timeoutMilliseconds) ms")
                case .ready: break
                }
            }
        }
    }

    /// Says goodbye at the TLS level (best effort); the socket closes when released.
    package func shutdown() {
        guard let ssl else { return }
        ERR_clear_error()
        SSL_shutdown(ssl)
        ERR_clear_error()
    }

    enum WaitResult { case ready, timeout, stopped }

    private func wait(_ events: Int16, until deadline: Double, stop: StopSignal?) -> WaitResult {
        while true {
            let left = deadline - monotonicSeconds()
            if left <= 0 { return .timeout }
            var fds = [pollfd(fd: fd, events: events, revents: 0)]
            if let stop { fds.append(pollfd(fd: stop.readFD, events: Int16(POLLIN), revents: 0)) }
            let n = poll(&fds, nfds_t(fds.count), Int32(min(left * 1000 + 1, 60_000)))
            if n < 0, errno == EINTR { continue }
            if fds.count > 1, fds[1].revents != 0 { return .stopped }
            if n > 0 { return .ready }
        }
    }
}

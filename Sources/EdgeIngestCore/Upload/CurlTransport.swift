import CCurl

/// POSTs batches with one reused libcurl easy handle: keep-alive, HTTP/2
/// where the server offers it over TLS, timeouts, TLS verification on
/// (with an optional CA file or directory), client certificates, a proxy.
/// Not thread-safe: one uploader thread owns it.
public final class CurlTransport {
    private let handle: UnsafeMutableRawPointer
    public let settings: HTTPSettings
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// libcurl's own words for the last failure (CURLOPT_ERRORBUFFER), to
    /// tell a proxy from the backend and a missing client certificate.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    private static let globalInit: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    public init(settings: HTTPSettings, userAgent: String) throws {
        _ = CurlTransport.globalInit
        guard let handle = curl_easy_init() else {
            throw EdgeIngestError(.invalidConfiguration, "libcurl could not create a handle.")
        }
        self.handle = handle
        self.settings = settings
        try configure(userAgent: userAgent)
    }

    deinit {
        curl_easy_cleanup(handle)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        try check(edgeingest_curl_setopt_long(handle, option, value), option)
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        try check(edgeingest_curl_setopt_string(handle, option, value), option)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws {
        guard code == CURLE_OK else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "libcurl refused an HTTP setting (option \(option.rawValue)): \(String(cString: curl_easy_strerror(code)))."
            )
        }
    }

    private func configure(userAgent: String) throws {
        try set(CURLOPT_URL, settings.url)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_POST, 1)
        try set(CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMilliseconds)
        try set(CURLOPT_TIMEOUT_MS, settings.timeoutMilliseconds)
        try set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        try set(CURLOPT_USERAGENT, userAgent)
        if let caFile = settings.caFile { try set(CURLOPT_CAINFO, caFile) }
        if let caPath = settings.caPath { try set(CURLOPT_CAPATH, caPath) }
        if let certificate = settings.clientCertificate { try set(CURLOPT_SSLCERT, certificate) }
        if let key = settings.clientKey { try set(CURLOPT_SSLKEY, key) }
        if let proxy = settings.proxy { try set(CURLOPT_PROXY, proxy) }
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try check(edgeingest_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), CURLOPT_ERRORBUFFER)
        let write: edgeingest_curl_write_callback = { data, size, count, context in
            let sink = Unmanaged<ResponseSinkBox>.fromOpaque(context!).takeUnretainedValue()
            let n = size * count
            if let data { sink.sink.appendBody(UnsafeRawBufferPointer(start: data, count: n)) }
            return n
        }
        let header: edgeingest_curl_write_callback = { data, size, count, context in
            let sink = Unmanaged<ResponseSinkBox>.fromOpaque(context!).takeUnretainedValue()
            let n = size * count
            if let data, sink.sink.admitHeader(n) {
                let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
                if line.hasPrefix("HTTP/") { sink.sink.headers = [:] }  // a new response (after 100, or a redirect)
                if let colon = line.firstIndex(of: ":") {
                    let name = line[..<colon].lowercased()
                    // "\r\n" is one Character in Swift: filter by isNewline, not by "\r" and "\n".
                    let value = line[line.index(after: colon)...].filter { !$0.isNewline }
                    sink.sink.headers[name] = String(value.drop { $0 == " " })
                }
            }
            return n
        }
        try check(edgeingest_curl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION, write), CURLOPT_WRITEFUNCTION)
        try check(edgeingest_curl_setopt_write_function(handle, CURLOPT_HEADERFUNCTION, header), CURLOPT_HEADERFUNCTION)
    }

    /// POSTs `body` with `headers` (plus the configured ones) and returns
    /// the response, or throws ``TransportError`` for network failures.
    /// `url` replaces the configured URL for this request (a sink whose
    /// URL names the table, say); the connection is still reused.
    public func post(_ body: ArraySlice<UInt8>, headers: [(String, String)], url: String? = nil) throws -> HTTPResponse
    {
        try set(CURLOPT_URL, url ?? settings.url)
        var list: UnsafeMutablePointer<curl_slist>?
        var all = headers
        all.append(("Expect", ""))  // no 100-continue round trip before each batch
        for (name, value) in settings.headers { all.append((name, value)) }
        if let token = settings.bearerToken { all.append(("Authorization", "Bearer " + token)) }
        var payload = body
        if settings.gzip {
            payload = try Gzip.compress(body)[...]
            all.append(("Content-Encoding", "gzip"))
        }
        for (name, value) in all {
            list = curl_slist_append(list, value.isEmpty ? "\(name):" : "\(name): \(value)")
        }
        if let headerList { curl_slist_free_all(headerList) }
        headerList = list
        try check(edgeingest_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list), CURLOPT_HTTPHEADER)
        errorBuffer[0] = 0
        let box = ResponseSinkBox()
        let context = Unmanaged.passUnretained(box).toOpaque()
        try check(edgeingest_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context), CURLOPT_WRITEDATA)
        try check(edgeingest_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context), CURLOPT_HEADERDATA)
        let code: CURLcode = payload.withUnsafeBytes { bytes in
            _ = edgeingest_curl_setopt_pointer(
                handle,
                CURLOPT_POSTFIELDS,
                UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!)
            )
            _ = edgeingest_curl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
            return curl_easy_perform(handle)
        }
        withExtendedLifetime(box) {}
        guard code == CURLE_OK else {
            throw TransportError(
                code: code,
                url: settings.displayURL,
                timeoutMilliseconds: settings.timeoutMilliseconds,
                proxy: settings.proxy.map(redactedURL),
                detail: String(cString: errorBuffer)
            )
        }
        var status = 0
        _ = edgeingest_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPResponse(status: status, headers: box.sink.headers, body: box.sink.body)
    }
}

/// What is kept of an answer: its headers and the start of its body, both
/// bounded (a backend that answers 300 MB took the agent to 558 MB). The
/// rest is read and dropped, so the connection stays usable and the
/// status code counts; nothing the protocol needs lies past the bound.
struct ResponseSink {
    /// Body bytes kept: all the classifier ever reads of an answer.
    static let maxBodyBytes = 1 << 20
    /// Header bytes kept (all header lines of one exchange).
    static let maxHeaderBytes = 64 << 10

    var headers: [String: String] = [:]
    var body: [UInt8] = []
    var headerBytes = 0

    mutating func appendBody(_ bytes: UnsafeRawBufferPointer) {
        let room = Self.maxBodyBytes - body.count
        if room > 0 { body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.prefix(room))) }
    }

    /// Whether a header line of `count` bytes is still within the bound.
    mutating func admitHeader(_ count: Int) -> Bool {
        headerBytes += count
        return headerBytes <= Self.maxHeaderBytes
    }
}

final class ResponseSinkBox {
    var sink = ResponseSink()
}

/// A request that did not get an HTTP answer: the network, DNS, TLS or a
/// timeout. Always worth retrying; the message says what failed.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// A short stable name for counters: `connection_refused`, `timeout`, …
    public let kind: String

    /// Whether the failure is one that retrying cannot mend: the TLS set-up
    /// (an untrusted certificate, a client certificate missing or refused,
    /// an unreadable CA file). The uploader holds instead of retrying, and
    /// `status` shows it as a problem.
    public var needsConfiguration: Bool { kind.hasPrefix("tls_") && kind != "tls_handshake" }

    /// - Parameters:
    ///   - proxy: the configured proxy's host and port, if any: a failure
    ///     to reach it is named as the proxy's, not the backend's.
    ///   - detail: libcurl's error buffer (its own words for the failure).
    init(code: CURLcode, url: String, timeoutMilliseconds: Int, proxy: String? = nil, detail: String = "") {
        let host = url.split(separator: "/").dropFirst().first.map(String.init) ?? url
        let lowered = detail.lowercased()
        switch code {
        case CURLE_COULDNT_CONNECT where proxy != nil && !lowered.contains("connect tunnel"):
            (kind, message) = (
                "proxy_unreachable",
                "Could not connect to the proxy \(proxy!): connection refused or unreachable (the backend \(host) was not tried). Check upload.proxy."
            )
        case CURLE_COULDNT_CONNECT where proxy != nil:
            (kind, message) = (
                "connection_refused",
                "The proxy \(proxy!) could not connect to \(host): \(Self.curlWords(detail))."
            )
        case CURLE_COULDNT_CONNECT:
            (kind, message) = ("connection_refused", "Could not connect to \(host): connection refused or unreachable.")
        case CURLE_COULDNT_RESOLVE_HOST:
            (kind, message) = ("dns", "Could not resolve the host in \(url): DNS lookup failed.")
        case CURLE_COULDNT_RESOLVE_PROXY:
            (kind, message) = (
                "dns", "Could not resolve the proxy \(proxy ?? ""): DNS lookup failed. Check upload.proxy."
            )
        case CURLE_OPERATION_TIMEDOUT:
            (kind, message) = ("timeout", "The request to \(host) timed out after \(timeoutMilliseconds) ms.")
        case _ where lowered.contains("certificate required"):
            // TLS 1.3 reports a missing client certificate only at the first
            // read after the handshake, as an alert: not a reset.
            (kind, message) = (
                "tls_client_certificate_required",
                "\(host) requires a client certificate (TLS alert \"certificate required\"): set upload.client_certificate and upload.client_key."
            )
        case _
        where code != CURLE_PEER_FAILED_VERIFICATION
            && (lowered.contains("unknown ca") || lowered.contains("bad certificate")
                || lowered.contains("certificate unknown") || lowered.contains("certificate revoked")
                || lowered.contains("certificate expired")):
            (kind, message) = (
                "tls_client_certificate",
                "\(host) refused the client certificate (\(Self.curlWords(detail))): check upload.client_certificate and that the backend trusts its CA."
            )
        case CURLE_SSL_CONNECT_ERROR:
            (kind, message) = (
                "tls_handshake",
                "The TLS handshake with \(host) failed: \(Self.curlWords(detail))."
            )
        case CURLE_PEER_FAILED_VERIFICATION where lowered.contains("certificate has expired"):
            (kind, message) = (
                "tls_expired",
                "The certificate of \(host) has expired: the backend must renew it (if it was renewed, this box's clock is wrong: check date)."
            )
        case CURLE_PEER_FAILED_VERIFICATION where lowered.contains("not yet valid"):
            (kind, message) = (
                "tls_not_yet_valid",
                "The certificate of \(host) is not valid yet: this box's clock is probably behind (no battery clock and no NTP yet?); check date and time synchronisation."
            )
        case CURLE_PEER_FAILED_VERIFICATION
        where lowered.contains("no alternative certificate subject name") || lowered.contains("does not match"):
            (kind, message) = (
                "tls_name_mismatch",
                "The certificate of \(host) is not issued for that name (\(Self.curlWords(detail))): use a name in url that the certificate carries."
            )
        case CURLE_PEER_FAILED_VERIFICATION:
            (kind, message) = (
                "tls_untrusted", "The certificate of \(host) is not trusted: set ca_file to the CA that signed it."
            )
        case CURLE_SSL_CACERT_BADFILE:
            (kind, message) = ("tls_ca_file", "The CA file could not be read: check ca_file.")
        case CURLE_SSL_CERTPROBLEM:
            (kind, message) = (
                "tls_client_certificate",
                "The client certificate could not be used: check client_certificate and client_key."
            )
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE:
            (kind, message) = ("connection_reset", "The connection to \(host) was reset before the backend answered.")
        default:
            (kind, message) = (
                "network", "The request to \(host) failed: \(String(cString: curl_easy_strerror(code)))."
            )
        }
    }

    /// libcurl's message, bounded, without a trailing newline.
    private static func curlWords(_ detail: String) -> String {
        let trimmed = detail.prefix(200).drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()
        return trimmed.isEmpty ? "no detail from libcurl" : String(trimmed)
    }

    public var description: String { message }
}

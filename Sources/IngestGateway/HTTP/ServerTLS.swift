import CCrypto
import EdgeIngestCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// TLS for the HTTP input (issue 23): OpenSSL, which the agent already
/// links; TLS 1.2 or newer; a certificate chain and key from files; with a
/// client CA, clients must present a certificate it signed (mutual TLS),
/// and its common name can be the account (``HTTPRequest/clientCertificateName``).
///
/// The files are looked at again at most once a second when a connection
/// arrives: a renewed certificate (certbot, an ACME client, a fleet's PKI
/// rotating it) is used for new connections without a restart, and one
/// that cannot be loaded leaves the previous one in use, logged once.
/// Connections under way keep the certificate they started with.
///
/// ```swift
/// let tls = try ServerTLS(files: .init(certificate: "/etc/ingestd/gateway.pem", key: "/etc/ingestd/gateway.key"), logger: logger)
/// let ssl = tls.connection(fd)  // in the event loop, for each accepted socket
/// ```
///
/// Used by the event loop's thread only (held by the `Sendable` server
/// that starts that loop, hence unchecked).
package final class ServerTLS: @unchecked Sendable {
    package struct Files: Sendable, Hashable {
        package var certificate: String
        package var key: String
        /// Clients must present a certificate signed by a CA in this file.
        package var clientCA: String?

        package init(certificate: String, key: String, clientCA: String? = nil) {
            self.certificate = certificate
            self.key = key
            self.clientCA = clientCA
        }
    }

    let files: Files
    let logger: Logger
    private var context: OpaquePointer
    /// The files' modification times the context was made from.
    private var loadedStamps: [Int64]
    /// Stamps of files that failed to load (logged once, not tried again until they change).
    private var failedStamps: [Int64]?
    private var lastCheck: Int64 = 0

    init(files: Files, logger: Logger) throws {
        self.files = files
        self.logger = logger
        loadedStamps = Self.stamps(files)
        context = try Self.makeContext(files)
    }

    deinit { SSL_CTX_free(context) }

    /// A server-side TLS connection for the accepted socket `fd` (its
    /// handshake is the event loop's to drive), with the current certificate.
    func connection(_ fd: Int32, now: Int64) -> OpaquePointer? {
        reloadIfChanged(now: now)
        return edgeingest_tls_server(context, fd)
    }

    private func reloadIfChanged(now: Int64) {
        guard now - lastCheck >= 1000 else { return }
        lastCheck = now
        let stamps = Self.stamps(files)
        guard stamps != loadedStamps, stamps != failedStamps else { return }
        do {
            let fresh = try Self.makeContext(files)
            SSL_CTX_free(context)  // connections made from it hold their own reference
            context = fresh
            loadedStamps = stamps
            failedStamps = nil
            logger.notice(
                "Loaded the HTTP input's TLS certificate again: new connections use the new one",
                metadata: ["tls.certificate": "\(files.certificate)"]
            )
        } catch {
            failedStamps = stamps
            logger.error(
                "The HTTP input's TLS files changed but cannot be loaded; the previous certificate stays in use",
                metadata: ["tls.certificate": "\(files.certificate)", "error": "\(error)"]
            )
        }
    }

    private static func makeContext(_ files: Files) throws -> OpaquePointer {
        var error = [CChar](repeating: 0, count: 256)
        guard
            let context = edgeingest_tls_server_context(
                files.certificate,
                files.key,
                files.clientCA,
                &error,
                error.count
            )
        else {
            let reason = String(cBuffer: error)
            throw GatewayError(
                .listenFailed,
                "Cannot use the TLS files (tls_certificate \(files.certificate), tls_key \(files.key)\(files.clientCA.map { ", tls_client_ca \($0)" } ?? "")): \(reason.isEmpty ? "unreadable or not PEM" : reason). Check that they exist, are PEM, that the key matches the certificate, and that the agent may read them."
            )
        }
        return context
    }

    /// Modification times (ns) of the files, -1 for one that cannot be read.
    private static func stamps(_ files: Files) -> [Int64] {
        [files.certificate, files.key, files.clientCA].compactMap { $0 }.map { path in
            var info = stat()
            guard stat(path, &info) == 0 else { return -1 }
            return Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec) ^ Int64(info.st_size)
        }
    }
}

import EdgeIngestCore
import IngestGateway
import Logging
import ServiceLifecycle

/// Serves the ingest protocol (docs/PROTOCOL.md) to other EdgeIngest
/// clients: a gateway's input. Binds when the agent starts (a taken port
/// fails the start with a clear error), answers until graceful shutdown,
/// then lets requests under way finish — a batch being committed is
/// committed and acknowledged — before the queue closes.
struct HTTPInput: Service {
    let context: InputContext
    let server: HTTPServer

    /// Binds the listening socket and reads the account files and token key.
    init(context: InputContext, stateDirectory: String) throws {
        self.context = context
        let settings = context.settings.http!
        var accounts = ServerAccounts()
        accounts.anonymous = settings.anonymous
        if let path = settings.apiKeysFile { accounts.apiKeys = try ServerAccounts.loadAPIKeys(path: path) }
        if let path = settings.usersFile { accounts.users = try ServerAccounts.loadUsers(path: path) }
        let tokens = try TokenSigner.loadOrCreate(path: stateDirectory + "/server-token-key")
        let gateway = GatewayContext(
            name: context.settings.name,
            settings: settings,
            defaultType: context.settings.type,
            types: context.types,
            queue: context.queue,
            observer: context.counters,
            logger: context.logger,
            committed: context.committed
        )
        let handler = IngestServer(context: gateway, accounts: accounts, tokens: tokens)
        server = try HTTPServer(
            address: settings.listen,
            limits: settings.limits,
            maxConnections: settings.maxConnections,
            maxConnectionsPerAddress: settings.maxConnectionsPerAddress,
            workerThreads: min(settings.workerThreads, settings.maxConnections),
            tls: settings.tlsCertificateFile.flatMap { certificate in
                settings.tlsKeyFile.map {
                    ServerTLS.Files(certificate: certificate, key: $0, clientCA: settings.tlsClientCAFile)
                }
            },
            handler: handler,
            logger: context.logger
        )
        let bound = server.boundAddress
        context.counters.update { $0.listen = bound }
        if let certificate = settings.tlsCertificateFile {
            Self.watchCertificate(certificate, context: context, log: true)
        }
        var metadata: Logger.Metadata = [
            "ingest.input": "\(context.settings.name)", "ingest.listen": "\(bound)",
            "ingest.auth": "\(accounts.requiresAuthentication ? "required" : "none")",
            "ingest.tls":
                "\(settings.tlsCertificateFile == nil ? "off" : settings.tlsClientCAFile == nil ? "on" : "mutual")",
        ]
        if !accounts.requiresAuthentication {
            metadata["ingest.hint"] =
                "anyone who can reach this address can write: set api_keys_file, users_file or anonymous"
        }
        context.logger.info("Serving the ingest protocol", metadata: metadata)
    }

    /// Puts the server certificate's end in the input's status, and warns
    /// (at start) when it is 14 days away or past.
    static func watchCertificate(_ path: String, context: InputContext, log: Bool) {
        guard let left = TLSFileCheck.secondsLeft(path) else { return }
        let at = isoTime(milliseconds: wallClockMilliseconds() + left * 1000)
        context.counters.update { $0.tlsCertificateExpiresAt = at }
        guard log, left <= TLSFileCheck.warnWithinSeconds else { return }
        context.logger.warning(
            left > 0
                ? "The HTTP input's TLS certificate expires within 14 days: renew it (the new file is used without a restart)"
                : "The HTTP input's TLS certificate has expired: clients refuse it; renew it (the new file is used without a restart)",
            metadata: [
                "ingest.input": "\(context.settings.name)", "tls.certificate": "\(path)", "tls.expires_at": "\(at)",
                "tls.days_left": "\(left / 86_400)",
            ]
        )
    }

    func run() async throws {
        defer { context.counters.update { $0.finished = true } }
        try await runBlockingLoop { [server, context] stop in
            var checked = monotonicSeconds()
            server.serve(stop: stop, idleMilliseconds: context.waitMilliseconds(pending: false)) {
                context.counters.heartbeat()
                // A renewed certificate is used without a restart: look at its date now and then.
                if let certificate = context.settings.http?.tlsCertificateFile, monotonicSeconds() - checked > 3600 {
                    checked = monotonicSeconds()
                    Self.watchCertificate(certificate, context: context, log: false)
                }
            }
            context.logger.info(
                "Stopped serving the ingest protocol",
                metadata: ["ingest.input": "\(context.settings.name)"]
            )
        }
    }
}

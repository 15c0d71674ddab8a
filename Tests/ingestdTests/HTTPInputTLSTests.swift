import Foundation
import TestSupport
import Testing

/// TLS on the HTTP input (issue 23), against the built gateway with a CA the
/// test makes (``TestPKI``): curl and another ingestd (libcurl) over TLS,
/// plain HTTP and TLS 1.1 refused, mutual TLS with the certificate's name as
/// the account, and a renewed certificate used without a restart.
@Suite(.serialized) struct HTTPInputTLSTests {
    static var available: Bool {
        TLSUploadTests.opensslAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")
    }

    static func tlsOptions(_ pki: TestPKI, clientCA: Bool = false) -> String {
        "tls_certificate = \"\(pki.serverCert)\"\ntls_key = \"\(pki.serverKey)\"\n"
            + (clientCA ? "tls_client_ca = \"\(pki.ca)\"\nshared_id_space = true\n" : "")
    }

    /// curl with `arguments`; its output (with -w, the status code).
    static func curl(_ arguments: [String]) throws -> ToolResult {
        try runTool("/usr/bin/curl", ["-s", "--max-time", "10"] + arguments)
    }

    /// `openssl s_client` to the port with `options`, stdin empty.
    static func sClient(_ port: Int, _ options: String) throws -> ToolResult {
        try runTool("/bin/sh", ["-c", "/usr/bin/openssl s_client -connect 127.0.0.1:\(port) \(options) < /dev/null"])
    }

    @Test(.enabled(if: available)) func anotherIngestdUploadsOverTLSAndPlainHTTPIsNotServed() throws {
        let pki = try TestPKI()
        let gateway = try HTTPInputTests.Gateway(Self.tlsOptions(pki))
        let https = "https://127.0.0.1:\(gateway.port)"
        let health = try Self.curl(["-o", "/dev/null", "-w", "%{http_code}", "--cacert", pki.ca, https + "/healthz"])
        #expect(health.output == "200", "\(health.output)")
        // Without the CA curl refuses the server; plain HTTP gets no HTTP answer.
        #expect(try Self.curl(["-o", "/dev/null", https + "/healthz"]).status != 0)
        #expect(try httpRequest("GET", gateway.base + "/healthz").status != 200)
        let keys = try TemporaryDirectory()
        try "\(HTTPInputTests.apiKey)\n".write(toFile: keys.file("api-key"), atomically: true, encoding: .utf8)
        let edge = try AgentFixture(
            """

            [upload]
            url = "\(https)/ingest/v1/apps/weather/batches"
            ca_file = "\(pki.ca)"
            linger_ms = 20
            max_records = 50
            shutdown_timeout_ms = 30000

            [auth]
            app_id = "weather"
            base_url = "\(https)"
            api_key_file = "\(keys.file("api-key"))"
            """
        )
        let readings = (0..<500).map { reading($0 % 40, device: "T\($0)") + "\n" }.joined()
        let result = try edge.run(["run"], stdin: Data(readings.utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(gateway.waitUntilArchived(500), "\(gateway.agent.stderr.suffix(2000))")
        #expect(gateway.agent.terminate() == 0)
        #expect(gateway.agent.stderr.contains("ingest.tls=on"))
    }

    /// A certificate close to its end is said at start and in status, and
    /// check-config finds TLS files that cannot work before `run` does
    /// (a key of another certificate, a file that is not there).
    @Test(.enabled(if: available)) func certificatesNearTheirEndOrMismatchedAreSaidBeforeTheyBite() throws {
        let pki = try TestPKI()  // certificates valid for 2 days
        let gateway = try HTTPInputTests.Gateway(Self.tlsOptions(pki))
        #expect(
            eventually { gateway.agent.stderr.contains("TLS certificate expires within 14 days") },
            "\(gateway.agent.stderr.suffix(2000))"
        )
        let status = try gateway.fixture.run(["status"])
        #expect(status.stdout.contains("TLS certificate expires at "), "\(status.stdout)")
        #expect(status.stdout.contains("days): renew it"), "\(status.stdout)")
        let check = try gateway.fixture.run(["check-config"])
        #expect(check.status == 0, "near its end is a warning: \(check.stderr)")
        #expect(check.stderr.contains("warning: inputs '"), "\(check.stderr)")
        #expect(check.stderr.contains(" days: renew it"), "\(check.stderr)")
        #expect(gateway.agent.terminate() == 0)

        // Another certificate's key, and a CA file that is not there.
        let other = try pki.serverCertificate(named: "other")
        let mismatched = try AgentFixture(
            inputs: """
                [[inputs]]
                kind = "http"
                listen = "127.0.0.1:0"
                anonymous = true
                tls_certificate = "\(pki.serverCert)"
                tls_key = "\(other.key)"
                tls_client_ca = "\(pki.dir.file("missing.pem"))"
                """
        )
        let refused = try mismatched.run(["check-config"])
        #expect(refused.status == 78, "\(refused.stderr)")
        #expect(refused.stderr.contains("does not belong to the certificate"), "\(refused.stderr)")
        #expect(refused.stderr.contains("missing.pem' cannot be read: No such file or directory"), "\(refused.stderr)")
    }

    /// TLS 1.1 is refused. (OpenSSL 3 refuses it at its default security
    /// level anyway; the server context sets 1.2 as the minimum for any other
    /// libssl it may be built with.)
    @Test(.enabled(if: available)) func tls12IsServedAndTLS11IsRefused() throws {
        let pki = try TestPKI()
        let gateway = try HTTPInputTests.Gateway(Self.tlsOptions(pki))
        let modern = try Self.sClient(gateway.port, "-tls1_2 -CAfile \(pki.ca)")
        #expect(modern.status == 0 && modern.output.contains("TLSv1.2"), "\(modern.output.suffix(1500))")
        let old = try Self.sClient(gateway.port, "-tls1_1 -cipher DEFAULT:@SECLEVEL=0 -CAfile \(pki.ca)")
        #expect(old.status != 0, "\(old.output.suffix(1500))")
        #expect(
            old.output.contains("protocol version") || old.output.contains("unsupported protocol"),
            "\(old.output.suffix(1500))"
        )
        #expect(gateway.agent.terminate() == 0)
        #expect(gateway.agent.stderr.contains("A TLS handshake failed"))
    }

    /// Mutual TLS: no client certificate, no connection; with one the CA
    /// signed, a batch needs no login and belongs to `cert-<common name>`.
    @Test(.enabled(if: available)) func mutualTLSMakesTheCertificateTheAccount() throws {
        let pki = try TestPKI()
        let types = AgentFixture.weatherSensorTOML + "\nowner_id = \"string?\"\n"
        let gateway = try HTTPInputTests.Gateway(
            Self.tlsOptions(pki, clientCA: true) + "owner_field = \"owner_id\"\n",
            types: types
        )
        let url = "https://127.0.0.1:\(gateway.port)/ingest/v1/batches"
        let line = HTTPInputTests.line("65f1c2a9e1b2c3d4e5faa001", device: "MTLS")
        let without = try Self.curl(["--cacert", pki.ca, "--data-binary", line, url])
        #expect(without.status != 0, "\(without.output)")
        let with = try Self.curl([
            "--cacert", pki.ca, "--cert", pki.clientCert, "--key", pki.clientKey,
            "-H", "Content-Type: application/x-ndjson", "--data-binary", line, url,
        ])
        #expect(with.status == 0 && with.output.contains("\"accepted\":1"), "\(with.output)")
        #expect(gateway.waitUntilArchived(1), "\(gateway.agent.stderr.suffix(2000))")
        #expect(
            try sqlite3(gateway.archive, "SELECT owner_id || ' ' || deviceId FROM WeatherSensor") == "cert-client MTLS"
        )
        #expect(gateway.agent.terminate() == 0)
        #expect(gateway.agent.stderr.contains("A TLS handshake failed"))
        #expect(gateway.agent.stderr.contains("ingest.tls=mutual"))
    }

    /// A renewed certificate (replaced files) is used for new connections
    /// within about a second, without a restart; a broken one is refused
    /// and the previous one stays in use.
    @Test(.enabled(if: available)) func aRenewedCertificateIsUsedWithoutARestart() throws {
        let pki = try TestPKI()
        let gateway = try HTTPInputTests.Gateway(Self.tlsOptions(pki))
        let https = "https://127.0.0.1:\(gateway.port)/healthz"
        func subject() throws -> String {
            let result = try runTool(
                "/usr/bin/curl",
                ["-sv", "--max-time", "10", "--cacert", pki.ca, "-o", "/dev/null", https]
            )
            return result.output.split(separator: "\n").first { $0.contains("subject:") }.map(String.init)
                ?? result.output
        }
        let first = try subject()
        #expect(first.contains("CN=server") && !first.contains("server-2"), "\(first)")
        // A key that does not match: refused, the old certificate stays.
        let renewed = try pki.serverCertificate(named: "server-2")
        try FileManager.default.removeItem(atPath: pki.serverCert)
        try FileManager.default.copyItem(atPath: renewed.certificate, toPath: pki.serverCert)
        usleep(1_200_000)
        let still = try subject()
        #expect(still.contains("CN=server") && !still.contains("server-2"), "\(still)")
        #expect(eventually { gateway.agent.stderr.contains("cannot be loaded; the previous certificate stays in use") })
        // Its key too: the new certificate is served.
        try FileManager.default.removeItem(atPath: pki.serverKey)
        try FileManager.default.copyItem(atPath: renewed.key, toPath: pki.serverKey)
        #expect(eventually { (try? subject())?.contains("CN=server-2") == true })
        #expect(gateway.agent.process.isRunning)
        #expect(gateway.agent.terminate() == 0)
        #expect(gateway.agent.stderr.contains("Loaded the HTTP input's TLS certificate again"))
    }
}

import Foundation
import TestSupport
import Testing

/// A CA, a server certificate for 127.0.0.1 and a client certificate,
/// made by the test with the openssl command.
struct TestPKI {
    let dir: TemporaryDirectory
    var ca: String { dir.file("ca.pem") }
    var serverCert: String { dir.file("server.pem") }
    var serverKey: String { dir.file("server.key") }
    var clientCert: String { dir.file("client.pem") }
    var clientKey: String { dir.file("client.key") }

    /// A new P-256 key, unencrypted.
    static let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    init() throws {
        dir = try TemporaryDirectory()
        try Self.openssl(
            ["req", "-x509"] + Self.newKey + [
                "-keyout", dir.file("ca.key"), "-out", dir.file("ca.pem"), "-days", "2", "-subj",
                "/CN=EdgeIngest Test CA",
            ]
        )
        try "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".write(
            toFile: dir.file("server.ext"),
            atomically: true,
            encoding: .utf8
        )
        try "extendedKeyUsage=clientAuth\n".write(toFile: dir.file("client.ext"), atomically: true, encoding: .utf8)
        for name in ["server", "client"] { try issue(name, extensions: dir.file("\(name).ext")) }
    }

    /// Another certificate for 127.0.0.1 signed by the same CA, named
    /// `name` (its common name too): (certificate, key) paths.
    func serverCertificate(named name: String, days: Int = 2) throws -> (certificate: String, key: String) {
        try issue(name, extensions: dir.file("server.ext"), days: days)
        return (dir.file("\(name).pem"), dir.file("\(name).key"))
    }

    /// `<name>.key` and `<name>.pem` (common name `name`), signed by the CA
    /// with the extensions in the file `extensions`, valid for `days` (0: it
    /// expires the second it is made).
    private func issue(_ name: String, extensions: String, days: Int = 2) throws {
        try Self.openssl(
            ["req"] + Self.newKey + [
                "-keyout", dir.file("\(name).key"), "-out", dir.file("\(name).csr"), "-subj", "/CN=\(name)",
            ]
        )
        try Self.openssl([
            "x509", "-req", "-in", dir.file("\(name).csr"), "-CA", dir.file("ca.pem"), "-CAkey", dir.file("ca.key"),
            "-CAcreateserial", "-out", dir.file("\(name).pem"), "-days", String(days), "-extfile", extensions,
        ])
    }

    static func openssl(_ arguments: [String]) throws {
        guard try runTool("/usr/bin/openssl", arguments).status == 0 else { throw POSIXError(.EIO) }
    }
}

@Suite(.serialized) struct TLSUploadTests {
    static var opensslAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") }

    func https(_ backend: TestBackend) -> String { backend.url.replacingOccurrences(of: "http://", with: "https://") }

    @Test(.enabled(if: opensslAvailable)) func trustedCADelivers() throws {
        let pki = try TestPKI()
        let backend = try TestBackend(["--tls-cert", pki.serverCert, "--tls-key", pki.serverKey])
        let fixture = try AgentFixture(
            "\n[upload]\nurl = \"\(https(backend))\"\nca_file = \"\(pki.ca)\"\nlinger_ms = 20\n"
        )
        let (agent, status) = try UploadTests.stream(fixture, backend, UploadTests.readings(0..<200), expected: 200)
        #expect(agent.terminate() == 0)
        #expect(status["queued_records"] as? Int == 0)
    }

    @Test(.enabled(if: opensslAvailable)) func anUntrustedServerIsRefusedWithAClearErrorAndNothingIsLost() throws {
        let pki = try TestPKI()
        let backend = try TestBackend(["--tls-cert", pki.serverCert, "--tls-key", pki.serverKey])
        let fixture = try AgentFixture(
            "\n[upload]\nurl = \"\(https(backend))\"\nlinger_ms = 20\nretry_base_ms = 20\nretry_cap_ms = 100\n"
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(UploadTests.readings(0..<30))
        _ = eventually { agent.stderr.contains("is not trusted") }
        #expect(
            agent.stderr.contains(
                "The certificate of 127.0.0.1:\(backend.port) is not trusted: set ca_file to the CA that signed it."
            )
        )
        #expect(try backend.stats()["unique"] as? Int == 0)
        // A problem that holds delivery shows in status (exit 1), not only in the log.
        var status = try fixture.run(["status"])
        _ = try eventually {
            status = try fixture.run(["status"])
            return status.status == 1
        }
        #expect(status.status == 1, "\(status.stdout)")
        #expect(status.stdout.contains("is not trusted"), "\(status.stdout)")
        #expect(agent.terminate() == 0)
        #expect(try fixture.queuedLines().count == 30)
    }

    /// An expired server certificate is named as such (it was reported as
    /// "not trusted: set ca_file", which sent operators the wrong way).
    @Test(.enabled(if: opensslAvailable)) func anExpiredServerCertificateIsNamedAsSuch() throws {
        let pki = try TestPKI()
        let expired = try pki.serverCertificate(named: "expired", days: 0)
        sleep(1)  // valid for no second: expired from now on
        let backend = try TestBackend(["--tls-cert", expired.certificate, "--tls-key", expired.key])
        let fixture = try AgentFixture(
            "\n[upload]\nurl = \"\(https(backend))\"\nca_file = \"\(pki.ca)\"\nlinger_ms = 20\nretry_base_ms = 20\n"
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(UploadTests.readings(0..<5))
        #expect(eventually { agent.stderr.contains("has expired") }, "\(agent.stderr.suffix(2000))")
        #expect(agent.stderr.contains("The certificate of 127.0.0.1:\(backend.port) has expired"))
        #expect(!agent.stderr.contains("is not trusted"))
        #expect(agent.terminate() == 0)
        #expect(try fixture.queuedLines().count == 5)
    }

    @Test(.enabled(if: opensslAvailable)) func mutualTLSNeedsTheClientCertificate() throws {
        let pki = try TestPKI()
        let backend = try TestBackend(["--tls-cert", pki.serverCert, "--tls-key", pki.serverKey, "--client-ca", pki.ca])
        // Without a client certificate: refused, kept, held, and said plainly.
        let without = try AgentFixture(
            "\n[upload]\nurl = \"\(https(backend))\"\nca_file = \"\(pki.ca)\"\nlinger_ms = 20\nretry_base_ms = 20\nretry_cap_ms = 100\n"
        )
        let refused = try RunningAgent(
            arguments: ["run", "--config", without.configPath],
            environment: IngestdBinary.environment
        )
        refused.write(UploadTests.readings(0..<10))
        _ = eventually { refused.stderr.contains("requires a client certificate") }
        #expect(
            refused.stderr.contains(
                "requires a client certificate (TLS alert \"certificate required\"): set upload.client_certificate and upload.client_key"
            ),
            "\(refused.stderr.suffix(1500))"
        )
        var status = try without.run(["status"])
        _ = try eventually {
            status = try without.run(["status"])
            return status.status == 1
        }
        #expect(status.status == 1)
        #expect(status.stdout.contains("requires a client certificate"), "\(status.stdout)")
        #expect(refused.terminate() == 0)
        #expect(try without.queuedLines().count == 10)
        #expect(try backend.stats()["unique"] as? Int == 0)
        // With it: delivered.
        let with = try AgentFixture(
            "\n[upload]\nurl = \"\(https(backend))\"\nca_file = \"\(pki.ca)\"\nclient_certificate = \"\(pki.clientCert)\"\nclient_key = \"\(pki.clientKey)\"\nlinger_ms = 20\n"
        )
        let (agent, delivered) = try UploadTests.stream(with, backend, UploadTests.readings(100..<150), expected: 50)
        #expect(agent.terminate() == 0)
        #expect(delivered["queued_records"] as? Int == 0)
    }
}

/// HTTP/2: libcurl negotiates h2 over TLS when the server offers it. nghttpx
/// (an HTTP/2 proxy from Debian) terminates TLS and h2 in front of the test
/// backend and says in its `Via` header which version the client spoke.
@Suite(.serialized) struct HTTP2UploadTests {
    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/nghttpx")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
    }

    @Test(.enabled(if: available, "needs nghttpx (nghttp2-proxy) and openssl")) func uploadsSpeakHTTP2WhenOffered()
        throws
    {
        let pki = try TestPKI()
        let backend = try TestBackend()
        var frontPort = 0
        do { frontPort = try TestBackend().port }  // a free port
        let proxy = Process()
        proxy.executableURL = URL(fileURLWithPath: "/usr/sbin/nghttpx")
        proxy.arguments = [
            "--frontend=127.0.0.1,\(frontPort)", "--backend=127.0.0.1,\(backend.port)", "--workers=1", "--no-ocsp",
            "--errorlog-file=/dev/null", "--accesslog-file=/dev/null", pki.serverKey, pki.serverCert,
        ]
        proxy.standardOutput = FileHandle.nullDevice
        proxy.standardError = FileHandle.nullDevice
        try proxy.run()
        defer {
            kill(proxy.processIdentifier, SIGKILL)
            proxy.waitUntilExit()
        }
        #expect(eventually { Self.listening(frontPort) })
        let fixture = try AgentFixture(
            "\n[upload]\nurl = \"https://127.0.0.1:\(frontPort)/ingest/v1/batches\"\nca_file = \"\(pki.ca)\"\nlinger_ms = 20\n"
        )
        let (agent, status) = try UploadTests.stream(fixture, backend, UploadTests.readings(0..<100), expected: 100)
        #expect(agent.terminate() == 0)
        #expect(status["queued_records"] as? Int == 0)
        #expect(try backend.stats()["via"] as? [String] == ["2 nghttpx"])
    }

    static func listening(_ port: Int) -> Bool {
        (try? RawClient(port: port)) != nil
    }
}

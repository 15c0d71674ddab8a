import Foundation
import TestSupport
import Testing

/// Uploads through an HTTP forward proxy, from `upload.proxy` and from the
/// standard `http_proxy` environment variable (libcurl's own handling).
@Suite struct ProxyUploadTests {
    /// Tests/Support/forward-proxy.py on a loopback port.
    final class ForwardProxy {
        let script: SupportScript
        var port: Int { script.ports[0] }

        init() throws { script = try SupportScript("forward-proxy.py") }
    }

    @Test func theConfiguredProxyCarriesEveryBatch() throws {
        let backend = try TestBackend()
        let proxy = try ForwardProxy()
        let fixture = try UploadTests.fixture(backend, "proxy = \"http://127.0.0.1:\(proxy.port)\"")
        var environment = IngestdBinary.environment
        for name in [
            "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY",
        ] {
            environment[name] = nil
        }
        let run = try fixture.run(["run"], stdin: Data(UploadTests.readings(0..<50).utf8), environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let stats = try backend.stats()
        #expect(stats["unique"] as? Int == 50)
        #expect(stats["via"] as? [String] == ["1.1 edgeingest-test-proxy"])
    }

    @Test func theHTTPProxyEnvironmentVariableIsHonoured() throws {
        let backend = try TestBackend()
        let proxy = try ForwardProxy()
        let fixture = try UploadTests.fixture(backend)
        var environment = IngestdBinary.environment
        environment["http_proxy"] = "http://127.0.0.1:\(proxy.port)"
        environment["no_proxy"] = nil
        environment["NO_PROXY"] = nil
        let run = try fixture.run(["run"], stdin: Data(UploadTests.readings(0..<20).utf8), environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let stats = try backend.stats()
        #expect(stats["unique"] as? Int == 20)
        #expect(stats["via"] as? [String] == ["1.1 edgeingest-test-proxy"])
    }

    /// When the proxy itself cannot be reached, the error names the proxy
    /// and the key to check, not the backend.
    @Test func anUnreachableProxyIsNamedAsTheProxy() throws {
        let backend = try TestBackend()
        let fixture = try UploadTests.fixture(backend, "proxy = \"http://127.0.0.1:9\"")
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(UploadTests.readings(0..<3))
        let expected =
            "Could not connect to the proxy http://127.0.0.1:9: connection refused or unreachable (the backend 127.0.0.1:\(backend.port) was not tried). Check upload.proxy."
        #expect(eventually { agent.stderr.contains(expected) }, "\(agent.stderr.suffix(1500))")
        #expect(agent.terminate() == 0)
        #expect(try fixture.queuedLines().count == 3)
    }
}

import CCurl
import Testing

@testable import EdgeIngestCore

/// A certificate libcurl refuses is named for what is wrong with it, from
/// libcurl's own words (OpenSSL's verify messages), not only "not trusted".
@Suite struct TransportErrorTests {
    @Test(arguments: [
        ("SSL certificate problem: certificate has expired", "tls_expired", "has expired"),
        ("SSL certificate problem: certificate is not yet valid", "tls_not_yet_valid", "clock is probably behind"),
        (
            "SSL: no alternative certificate subject name matches target host name 'localhost'", "tls_name_mismatch",
            "not issued for that name"
        ),
        ("SSL certificate problem: unable to get local issuer certificate", "tls_untrusted", "set ca_file"),
    ])
    func aRefusedServerCertificateIsNamedForWhatIsWrong(detail: String, kind: String, words: String) {
        let error = TransportError(
            code: CURLE_PEER_FAILED_VERIFICATION,
            url: "https://backend.example:8443/ingest/v1/batches",
            timeoutMilliseconds: 1000,
            detail: detail
        )
        #expect(error.kind == kind)
        #expect(error.message.contains(words), "\(error.message)")
        #expect(error.message.contains("backend.example:8443"))
        #expect(error.needsConfiguration)
    }
}

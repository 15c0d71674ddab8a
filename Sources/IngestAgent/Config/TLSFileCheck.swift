import CCrypto
import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// What `check-config` checks of a configuration's TLS files before the
/// agent needs them: each exists and can be read by this user, each
/// certificate has a key that belongs to it, and no certificate has
/// expired (before, both passed and `run` failed later with exit 74).
///
/// ```swift
/// let problems = TLSFileCheck.problems(in: configuration)   // [] when all is well
/// ```
package enum TLSFileCheck {
    /// A certificate this close to its end is worth a warning.
    static let warnWithinSeconds: Int64 = 14 * 86_400

    struct Pair {
        var key: String
        var certificate: String?
        var privateKey: String?
        var ca: String?
    }

    /// The TLS files a configuration names, by the key that names them.
    static func pairs(in configuration: AgentConfiguration) -> [Pair] {
        var out: [Pair] = []
        if let http = configuration.upload?.http {
            out.append(
                Pair(key: "upload", certificate: http.clientCertificate, privateKey: http.clientKey, ca: http.caFile)
            )
        }
        for input in configuration.inputs {
            let key = "inputs '\(input.name)'"
            if let http = input.http {
                out.append(
                    Pair(
                        key: key,
                        certificate: http.tlsCertificateFile,
                        privateKey: http.tlsKeyFile,
                        ca: http.tlsClientCAFile
                    )
                )
            }
            if let tls = input.mqtt?.tls {
                out.append(Pair(key: key, certificate: tls.certificateFile, privateKey: tls.keyFile, ca: tls.caFile))
            }
        }
        return out.filter { $0.certificate != nil || $0.privateKey != nil || $0.ca != nil }
    }

    /// Every problem with the configuration's TLS files, as sentences.
    package static func problems(in configuration: AgentConfiguration) -> [String] {
        var problems: [String] = []
        for pair in pairs(in: configuration) {
            var unreadable: Set<String> = []
            for (name, path) in [("certificate", pair.certificate), ("key", pair.privateKey), ("CA file", pair.ca)] {
                guard let path else { continue }
                if access(path, R_OK) != 0 {
                    let reason = String(cString: strerror(errno))
                    problems.append("\(pair.key): the TLS \(name) '\(path)' cannot be read: \(reason)")
                    unreadable.insert(path)
                }
            }
            // The pair is checked when both halves can be read.
            guard let certificate = pair.certificate, !unreadable.contains(certificate),
                !unreadable.contains(pair.privateKey ?? "")
            else { continue }
            if let key = pair.privateKey {
                var error = [CChar](repeating: 0, count: 256)
                if edgeingest_tls_check_pair(certificate, key, &error, error.count) != 1 {
                    let reason = String(cBuffer: error)
                    problems.append(
                        "\(pair.key): the key '\(key)' does not belong to the certificate '\(certificate)' (or one is not PEM): \(reason.isEmpty ? "OpenSSL gave no reason" : reason)"
                    )
                }
            }
            if let left = secondsLeft(certificate), left <= 0 {
                problems.append("\(pair.key): the certificate '\(certificate)' expired \(-left / 86_400) days ago")
            }
        }
        return problems
    }

    /// Certificates that expire within ``warnWithinSeconds``, as warnings.
    package static func warnings(in configuration: AgentConfiguration) -> [String] {
        pairs(in: configuration).compactMap { pair in
            guard let certificate = pair.certificate, let left = secondsLeft(certificate),
                left > 0, left <= warnWithinSeconds
            else { return nil }
            return "\(pair.key): the certificate '\(certificate)' expires in \(left / 86_400) days: renew it"
        }
    }

    /// Seconds until the certificate in `path` expires (negative once it
    /// has), or nil when it cannot be read.
    static func secondsLeft(_ path: String) -> Int64? {
        var readable: Int32 = 0
        let left = edgeingest_tls_seconds_left(path, &readable)
        return readable == 1 ? Int64(left) : nil
    }
}

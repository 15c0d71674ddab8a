import Foundation
import TestSupport
import Testing

@testable import IngestAgent

/// Issue 3: every key is documented, with its default, in etc/ingestd.toml.
@Suite struct ExampleConfigurationTests {
    static let example: String = {
        let root = repositoryRoot
        return (try? String(contentsOf: root.appendingPathComponent("etc/ingestd.toml"), encoding: .utf8)) ?? ""
    }()

    /// The keys written in a section of the example, commented out or not.
    static func keys(inSection header: String) -> Set<String> {
        var keys = Set<String>()
        var inSection = false
        for raw in example.split(separator: "\n") {
            let line = raw.hasPrefix("# ") ? String(raw.dropFirst(2)) : String(raw)
            if line.hasPrefix("[") {
                inSection = line == header
                continue
            }
            guard inSection, let eq = line.firstIndex(of: "="), !line.hasPrefix("#") else { continue }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            if key.allSatisfy({ $0.isLetter || $0 == "_" }) { keys.insert(key) }
        }
        return keys
    }

    @Test(arguments: [
        ("[agent]", ConfigurationDecoder.agentKeys), ("[queue]", ConfigurationDecoder.queueKeys),
        ("[[inputs]]", ConfigurationDecoder.inputKeys), ("[upload]", ConfigurationDecoder.uploadKeys),
        ("[auth]", ConfigurationDecoder.authKeys), ("[client_reset]", ConfigurationDecoder.clientResetKeys),
        ("[[migrations]]", ConfigurationDecoder.migrationKeys),
        ("[metrics]", ConfigurationDecoder.metricsKeys),
        ("[delivery.WeatherSensor]", ConfigurationDecoder.deliveryKeys),
        ("[clock]", ConfigurationDecoder.clockKeys),
    ])
    func everyAcceptedKeyIsDocumented(section: String, accepted: Set<String>) {
        let documented = Self.keys(inSection: section)
        #expect(
            accepted.subtracting(documented).isEmpty,
            "undocumented in \(section): \(accepted.subtracting(documented).sorted())"
        )
        #expect(
            documented.subtracting(accepted).isEmpty,
            "documented but not accepted in \(section): \(documented.subtracting(accepted).sorted())"
        )
    }

    @Test func defaultStateDirectoryFollowsSystemdThenXDGThenHome() {
        #expect(
            AgentConfiguration.defaultStateDirectory(environment: [
                "STATE_DIRECTORY": "/var/lib/ingestd:/var/lib/other", "HOME": "/h",
            ]) == "/var/lib/ingestd"
        )
        #expect(
            AgentConfiguration.defaultStateDirectory(environment: ["XDG_STATE_HOME": "/x", "HOME": "/h"])
                == "/x/ingestd"
        )
        #expect(AgentConfiguration.defaultStateDirectory(environment: ["HOME": "/h"]) == "/h/.local/state/ingestd")
    }
}

import Testing

@testable import EdgeIngestCore

/// Where the default realm lives, from the environment: the systemd state
/// directory, else the XDG data home, else ~/.local/share, else here.
@Suite struct DefaultLocationTests {
    func directory(_ environment: [String: String]) -> String {
        DefaultLocation.directory(environment: { environment[$0] }, accountHome: { nil })
    }

    @Test func theStateDirectoryOfAServiceWinsThenXDGThenHome() {
        let program = DefaultLocation.programName()
        let all = ["STATE_DIRECTORY": "/var/lib/weather:/var/lib/other", "XDG_DATA_HOME": "/data/", "HOME": "/home/pi"]
        #expect(directory(all) == "/var/lib/weather")
        #expect(directory(all.filter { $0.key != "STATE_DIRECTORY" }) == "/data/" + program)
        #expect(directory(["HOME": "/home/pi"]) == "/home/pi/.local/share/" + program)
        // Relative values are ignored, as the XDG specification says.
        #expect(directory(["XDG_DATA_HOME": "data", "HOME": "/home/pi"]) == "/home/pi/.local/share/" + program)
        #expect(directory(["HOME": "/"]) == "/.local/share/" + program)
        #expect(directory([:]) == ".")
        // Without HOME (a service), the account's home.
        #expect(
            DefaultLocation.directory(environment: { _ in nil }, accountHome: { "/root" }) == "/root/.local/share/"
                + program
        )
        #expect(!program.isEmpty && !program.contains("/"))
    }

    @Test func theDefaultConfigurationNamesItsFile() {
        #expect(IngestConfiguration.defaultConfiguration.filePath == IngestConfiguration.defaultFilePath)
        #expect(IngestConfiguration.defaultFilePath == IngestConfiguration.defaultDirectory + "/default.ingest.sqlite")
    }
}

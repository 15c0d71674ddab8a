import EdgeIngest
import Foundation
import TestSupport
import Testing

@Suite struct CommandLineTests {
    @Test func versionPrintsTheLibraryVersion() throws {
        let result = try IngestdBinary.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == EdgeIngestVersion.current + "\n")
    }

    @Test func helpDescribesTheAgent() throws {
        let result = try IngestdBinary.run(["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE: ingestd"))
        #expect(result.stdout.contains("--version"))
    }

    @Test func unknownOptionIsAUsageErrorWithExitCode64() throws {
        let result = try IngestdBinary.run(["--no-such-option"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("Unknown option '--no-such-option'"))
    }
}

/// ingestd parses its own command line (swift-argument-parser would link
/// Foundation): every subcommand's help, the usage errors, and what the
/// options parse to, through the built binary.
@Suite struct CommandLineParsingTests {
    static let commands = [
        "run", "check-config", "status", "dead-letter", "dead-letter list", "dead-letter export",
        "dead-letter replay", "export", "import", "reset", "hash-secret", "verify", "repair", "queue stats",
        "queue peek", "send",
    ]

    @Test(arguments: commands)
    func everyCommandHasHelpAndHelpSubcommandSaysTheSame(_ command: String) throws {
        let words = command.split(separator: " ").map(String.init)
        let help = try IngestdBinary.run(words + ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: "))
        #expect(help.stdout.contains("USAGE: ingestd \(command)"))
        #expect(help.stdout.contains("-h, --help"))
        // Under 80 columns, but for the usage line and example command lines.
        let long = help.stdout.split(separator: "\n").filter {
            $0.count >= 80 && !$0.hasPrefix("USAGE:") && !$0.hasPrefix("  echo ")
        }
        #expect(long.isEmpty, "\(long)")
        #expect(try IngestdBinary.run(["help"] + words).stdout == help.stdout)
        #expect(try IngestdBinary.run(words + ["-h"]).stdout == help.stdout)
    }

    @Test func theTopLevelHelpListsEverySubcommand() throws {
        let help = try IngestdBinary.run([]).stdout
        #expect(help == (try IngestdBinary.run(["--help"]).stdout))
        let listed = help.split(separator: "SUBCOMMANDS:")[1].split(separator: "\n").filter {
            $0.hasPrefix("  ") && !$0.hasPrefix("   ") && !$0.hasPrefix("  See")
        }
        #expect(
            listed.map { $0.split(separator: " ")[0] } == [
                "run", "send", "check-config", "status", "queue", "verify", "repair", "dead-letter", "export",
                "import", "reset", "hash-secret",
            ]
        )
        #expect(help.contains("See 'ingestd help <subcommand>' for detailed help."))
    }

    static let usageErrors: [([String], String)] = [
        (["bogus"], "Error: Unexpected argument 'bogus'\nUsage: ingestd <subcommand>"),
        (
            ["export"],
            "Error: Missing expected argument '--out <file>'\nHelp:  --out <file>  The file to create (it must not exist)."
        ),
        (["export", "--out"], "Error: Missing value for '--out <file>'"),
        (["export", "--out", "--move"], "Error: Missing value for '--out <file>'"),
        (
            ["dead-letter", "list", "--limit", "x"],
            "Error: The value 'x' is invalid for '--limit <limit>': give a whole number."
        ),
        (["dead-letter", "list", "--limit=-1"], "Error: --limit must be from 0 to 2147483647, got -1."),
        (
            ["dead-letter", "replay", "--number", "1", "--number", "two"],
            "Error: The value 'two' is invalid for '--number <number>'"
        ),
        (
            ["dead-letter", "replay"],
            "Error: Say which: --all, or --number N (repeatable).\nUsage: ingestd dead-letter replay [--config <file>] [--state-directory <dir>] [--all] [--number <number> ...]"
        ),
        (["dead-letter", "--bogus"], "Error: Unknown option '--bogus'\nUsage: ingestd dead-letter <subcommand>"),
        (["import"], "Error: Missing expected argument '<file>'"),
        (["import", "/nonexistent/a", "b"], "Error: Unexpected argument 'b'"),
        (["status", "--json=1"], "Error: The option '--json' does not take any value, but '1' was specified."),
        (["status", "--state-directory=", "--json"], "Error: Missing value for '--state-directory <dir>'"),
        (
            ["dead-letter", "replay", "--number", "-5"],
            "Error: --number takes a dead letter's number as `ingestd dead-letter list` shows it (1 or more), got -5."
        ),
        (
            ["dead-letter", "list", "--limit", "99999999999"],
            "Error: --limit must be from 0 to 2147483647, got 99999999999."
        ),
        (["run", "-x"], "Error: Unknown option '-x'\nUsage: ingestd run [--config <file>]"),
        (["run", "--format", "xml"], "Error: --format must be ndjson or csv, got 'xml'."),
        (["reset"], "Error: Give exactly one of --recover and --discard."),
    ]

    @Test(arguments: usageErrors)
    func usageErrorsExit64WithTheUsage(_ words: [String], _ expected: String) throws {
        let result = try IngestdBinary.run(words)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix(expected), "\(result.stderr)")
        #expect(result.stderr.contains("--help' for more information."))
        #expect(result.stdout.isEmpty)
    }

    @Test func valuesParseInBothFormsAndTheLastOfARepeatedOneWins() throws {
        let dir = try TemporaryDirectory()
        let config = dir.file("odd name.toml")
        try "[types.T]\nv = \"int\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let equals = try IngestdBinary.run(["check-config", "--config=\(config)"])
        #expect(equals.status == 0, "\(equals.stderr)")
        #expect(equals.stdout.hasPrefix("\(config): OK"))
        let spaced = try IngestdBinary.run(["check-config", "--config", config])
        #expect(spaced.stdout == equals.stdout)
        // As with swift-argument-parser: wrappers pass defaults, then "$@".
        let repeated = try IngestdBinary.run(["check-config", "--config", "/nonexistent.toml", "--config", config])
        #expect(repeated.status == 0 && repeated.stdout == equals.stdout)
        // After `--`, --help is an argument, not a request for help.
        let separated = try IngestdBinary.run(["import", "--config", config, "--", "--help"])
        #expect(separated.status == 64)
        #expect(separated.stderr.hasPrefix("Error: '--help' cannot be read: No such file or directory."))
    }

    @Test func aQueueThatCannotBeOpenedIsAnIOErrorWithTheReason() throws {
        let dir = try TemporaryDirectory()
        let config = dir.file("ingestd.toml")
        try "[types.T]\nv = \"int\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        // A state directory that cannot exist: opening the queue is an I/O error (74).
        let result = try IngestdBinary.run([
            "dead-letter", "replay", "--all", "--config", config, "--state-directory", "/proc/none/state",
        ])
        #expect(result.status == 74, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("Cannot create the directory '/proc/none'"))
        // Reading commands never create a queue: they say there is none.
        let list = try IngestdBinary.run([
            "dead-letter", "list", "--config", config, "--state-directory", "/proc/none/state",
        ])
        #expect(list.status == 74, "\(list.stderr)")
        #expect(
            list.stderr.hasPrefix(
                "No queue at '/proc/none/state/queue.sqlite' (No such file or directory): has the agent run with this configuration?"
            ),
            "\(list.stderr)"
        )
    }
}

/// `ingestd status` on a box whose configuration it cannot read (the
/// package's agent runs as its own user): it finds the state, or says which
/// option to pass.
@Suite struct StatusWithoutConfigurationTests {
    @Test func statusFindsTheAgentsStateWithoutItsConfiguration() throws {
        let fixture = try AgentFixture()
        #expect(try fixture.run(["run"], stdin: Data((reading(1) + "\n").utf8)).status == 0)
        var environment = IngestdBinary.environment
        environment["CONFIGURATION_DIRECTORY"] = fixture.dir.file("no-such-dir")
        environment["STATE_DIRECTORY"] = fixture.stateDirectory
        let result = try IngestdBinary.run(["status"], environment: environment)
        #expect(result.status == 3, "not running: \(result.stderr)")
        #expect(result.stdout.hasPrefix("ingestd: not running, state stopped"), "\(result.stdout)")
        #expect(result.stdout.contains("  accepted: 1"))
    }

    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/var/lib/ingestd/status.json")))
    func withNothingToFindStatusSaysWhichOptionToPass() throws {
        let dir = try TemporaryDirectory()
        var environment = IngestdBinary.environment
        environment["CONFIGURATION_DIRECTORY"] = dir.file("etc")
        environment["HOME"] = dir.file("home")
        environment["XDG_STATE_HOME"] = nil
        let result = try IngestdBinary.run(["status"], environment: environment)
        #expect(result.status == 3)
        #expect(
            result.stderr.contains(
                "No configuration at '\(dir.file("etc"))/ingestd.toml' (No such file or directory) and no status file in "
            ),
            "\(result.stderr)"
        )
        #expect(result.stderr.contains("pass --config FILE (the agent's configuration) or --state-directory DIR"))
    }
}

import Foundation
import TestSupport
import Testing

/// The `write-log-replay` executable, as scripts/test-powercut-replay.sh runs it.
@Suite struct ReplayCommandTests {
    let replay = builtExecutable("write-log-replay")

    func makeLog(in directory: TemporaryDirectory) throws -> (log: String, base: String) {
        var builder = LogBuilder()
        builder.write(0, 1, fill: 0xA1)
        builder.flush()
        builder.mark("one")
        builder.write(1, 1, fill: 0xB2)
        builder.write(2, 1, fill: 0xC3)
        builder.flush()
        builder.mark("two")
        let base = directory.file("base.img")
        try Data(count: 4 * 512).write(to: URL(fileURLWithPath: base))
        return (try builder.save(in: directory), base)
    }

    @Test func runsTheCheckOnEveryStateAndFailsWhenOneFails() throws {
        let directory = try TemporaryDirectory()
        let (log, base) = try makeLog(in: directory)
        try FileManager.default.createDirectory(atPath: directory.file("work"), withIntermediateDirectories: true)
        // A check that demands sector 1 once mark "two" is required: true in every state the model allows.
        let check =
            #"[ "$CRASH_REQUIRED_MARK" != two ] || [ "$(od -An -tx1 -j512 -N1 "$CRASH_IMAGE" | tr -d ' ')" = b2 ]"#
        let passing = try runTool(
            replay,
            ["check", log, base, directory.file("work"), "--subsets", "8", "--", "sh", "-c", check]
        )
        #expect(passing.status == 0, "\(passing.output)")
        // 2 flush points; subsets: 1 before the first flush, 3 between the two.
        #expect(
            passing.output.contains(
                "6 crash states checked (2 at flush/FUA points, 4 with unflushed writes dropped), 0 failed"
            ),
            "\(passing.output)"
        )

        // A check that wrongly demands sector 2 before the second flush fails in the states that lack it.
        let strict =
            #"[ "$CRASH_REQUIRED_MARK" != one ] || [ "$(od -An -tx1 -j1024 -N1 "$CRASH_IMAGE" | tr -d ' ')" = c3 ]"#
        let failing = try runTool(
            replay,
            ["check", log, base, directory.file("work"), "--subsets", "8", "--jobs", "1", "--", "sh", "-c", strict]
        )
        #expect(failing.status == 1, "\(failing.output)")
        #expect(failing.output.contains("FAILED barrier@1"), "\(failing.output)")
        #expect(failing.output.contains("FAILED subset@2+"), "\(failing.output)")
        #expect(failing.output.contains(", 3 failed"), "\(failing.output)")
    }

    @Test func badUsageAndAnUnreadableLogHaveTheirOwnExitCodes() throws {
        let directory = try TemporaryDirectory()
        #expect(try runTool(replay, ["check", "only-one"]).status == 2)
        let missing = try runTool(replay, ["list", directory.file("missing.img")])
        #expect(missing.status == 3)
        #expect(missing.output.contains("Cannot open"), "\(missing.output)")
        let (log, _) = try makeLog(in: directory)
        let listed = try runTool(replay, ["list", log])
        #expect(listed.status == 0)
        #expect(listed.output.contains("2 mark 0 0 one"), "\(listed.output)")
    }
}

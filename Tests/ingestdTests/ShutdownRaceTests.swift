import Foundation
import TestSupport
import Testing

/// `sensor | ingestd run` stopped by systemd or Ctrl-C: the sensor dies
/// (ingestd's end of input) at the same moment ingestd gets its SIGTERM.
/// Before FiniteInputs, the service group saw the input end out of order,
/// cancelled the uploader's thread, which never noticed, and the agent hung
/// for ever (7 rounds of 10 here).
@Suite(.serialized) struct ShutdownRaceTests {
    @Test func endOfInputAndSigtermTogetherEndTheAgentCleanly() throws {
        let backend = try TestBackend()
        let fixture = try UploadTests.fixture(backend)
        let rounds = 8
        for round in 0..<rounds {
            let agent = try RunningAgent(
                arguments: ["run", "--config", fixture.configPath],
                environment: IngestdBinary.environment
            )
            agent.write(UploadTests.readings(round * 10..<round * 10 + 10))
            #expect(try backend.waitForUnique((round + 1) * 10) == (round + 1) * 10, "\(agent.stderr.suffix(1500))")
            try agent.stdin.fileHandleForWriting.close()
            kill(agent.process.processIdentifier, SIGTERM)
            let exited = eventually(timeout: 20) { !agent.process.isRunning }
            #expect(
                exited,
                "round \(round): the agent did not exit within 20 s of end of input + SIGTERM\n\(agent.stderr.suffix(1500))"
            )
            guard exited else { return }  // the deinit kills it
            #expect(agent.process.terminationStatus == 0, "round \(round)\n\(agent.stderr.suffix(1500))")
        }
        let stats = try backend.stats()
        #expect(stats["unique"] as? Int == rounds * 10)
        #expect(stats["duplicates"] as? Int == 0)
        #expect(try fixture.status()["queued_records"] as? Int == 0)
    }

    /// A full queue under overflow_policy "block" with nothing draining it
    /// (no uploader): the input waits for space behind its commit. SIGTERM
    /// must still end the agent at once, keep everything already queued,
    /// and say exactly what it could not commit — not wait for space that
    /// never comes.
    @Test func sigtermWhileWaitingForQueueSpaceEndsTheAgentAndSaysWhatIsLost() throws {
        let fixture = try AgentFixture(
            queue: "max_records = 10\noverflow_policy = \"block\"\ncommit_max_records = 5\ncommit_interval_ms = 20\n"
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(UploadTests.readings(0..<30))
        #expect(eventually { (try? fixture.status())?["queued_records"] as? Int == 10 }, "\(agent.stderr.suffix(1500))")
        // The input is now parked behind a commit waiting for space, and says so,
        // once, in the log and in status.
        #expect(
            eventually { agent.stderr.contains("The queue is full; this input is paused") },
            "\(agent.stderr.suffix(1500))"
        )
        #expect(
            eventually {
                ((try? fixture.status())?["inputs"] as? [[String: Any]])?.first?["problem"] as? String ?? "" != ""
            }
        )
        #expect(agent.stderr.components(separatedBy: "The queue is full; this input is paused").count == 2)
        kill(agent.process.processIdentifier, SIGTERM)
        let exited = eventually(timeout: 20) { !agent.process.isRunning }
        #expect(exited, "the agent still waits for queue space 20 s after SIGTERM\n\(agent.stderr.suffix(1500))")
        guard exited else { return }
        #expect(
            agent.stderr.contains("could not be committed before the agent stopped, because the queue is full"),
            "\(agent.stderr.suffix(1500))"
        )
        #expect(try fixture.queuedLines().count == 10)
    }
}

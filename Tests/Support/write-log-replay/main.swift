// write-log-replay: every crash state a dm-log-writes log allows, checked
// (scripts/test-powercut-replay.sh; the model: CrashStatePlan).
//
//   write-log-replay list LOG
//       prints each entry: index, flags, sector, sectors, mark
//   write-log-replay check LOG BASE_IMAGE WORK_DIR [--subsets K] [--seed S]
//                    [--jobs J] -- CHECK_COMMAND...
//       replays LOG onto a copy of BASE_IMAGE (the device as it was when
//       logging began) up to each crash state, and runs CHECK_COMMAND on
//       a copy of the state with CRASH_IMAGE (the image's path),
//       CRASH_STATE (its name) and CRASH_REQUIRED_MARK (the last mark that
//       must hold; empty: none) in its environment. K subsets of the
//       unflushed writes between two flushes (default 4), seed S (default
//       45), J checks at once (default 2).
//
// Exit codes: 0 every state passed its check, 1 a state failed, 2 bad
// usage, 3 the log or an image could not be read or written.
import Glibc
import TestSupport
import WriteLogReplay

func writeError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

func fail(_ message: String, exitCode: Int32) -> Never {
    writeError("write-log-replay: \(message)\n")
    exit(exitCode)
}

func usage(_ message: String) -> Never {
    fail(
        "\(message)\nusage: write-log-replay list LOG | check LOG BASE_IMAGE WORK_DIR [--subsets K] [--seed S] [--jobs J] -- COMMAND...",
        exitCode: 2
    )
}

func flagNames(_ flags: WriteLogEntry.Flags) -> String {
    let names: [(WriteLogEntry.Flags, String)] = [
        (.flush, "flush"), (.fua, "fua"), (.discard, "discard"), (.mark, "mark"), (.metadata, "meta"),
    ]
    let present = names.filter { flags.contains($0.0) }.map(\.1)
    return present.isEmpty ? "write" : present.joined(separator: "+")
}

/// Runs `command` with `environment` added; returns its pid.
func spawn(_ command: [String], environment: [String: String]) -> pid_t {
    var pid: pid_t = 0
    let arguments = command.map { strdup($0) } + [nil]
    var inherited: [String] = []
    var cursor = environ
    while let entry = cursor.pointee {
        let text = String(cString: entry)
        if !environment.keys.contains(where: { text.hasPrefix($0 + "=") }) { inherited.append(text) }
        cursor += 1
    }
    let variables = (inherited + environment.map { "\($0.key)=\($0.value)" }).map { strdup($0) } + [nil]
    defer {
        arguments.forEach { free($0) }
        variables.forEach { free($0) }
    }
    let status = posix_spawnp(&pid, command[0], nil, nil, arguments, variables)
    guard status == 0 else { fail("cannot run '\(command[0])': \(String(cString: strerror(status)))", exitCode: 2) }
    return pid
}

func waitForAny() -> (pid: pid_t, passed: Bool, detail: String) {
    var status: Int32 = 0
    var pid: pid_t
    repeat { pid = waitpid(-1, &status, 0) } while pid < 0 && errno == EINTR
    let exited = status & 0x7f == 0
    let code = (status >> 8) & 0xff
    return (pid, exited && code == 0, exited ? "exit \(code)" : "signal \(status & 0x7f)")
}

func check(_ arguments: ArraySlice<String>) throws(WriteLogError) -> Int32 {
    guard let separator = arguments.firstIndex(of: "--") else {
        usage("check needs -- and the command to run per state")
    }
    var options: [String: Int] = ["--subsets": 4, "--seed": 45, "--jobs": 2]
    var cursor = arguments.startIndex
    var paths: [String] = []
    while cursor < separator {
        let argument = arguments[cursor]
        if options[argument] != nil {
            guard cursor + 1 < separator, let value = Int(arguments[cursor + 1]), value >= 0 else {
                usage("\(argument) needs a whole number")
            }
            options[argument] = value
            cursor += 2
        } else if argument.hasPrefix("--") {
            usage("unknown option '\(argument)'")
        } else {
            paths.append(argument)
            cursor += 1
        }
    }
    guard paths.count == 3 else { usage("check needs LOG BASE_IMAGE WORK_DIR") }
    let command = Array(arguments[(separator + 1)...])
    guard !command.isEmpty else { usage("check needs a command after --") }
    let jobs = max(1, options["--jobs"]!)

    let log = try WriteLog(path: paths[0])
    var random = SplitMix64(seed: UInt64(options["--seed"]!))
    let states = CrashStatePlan.states(of: log, subsetsPerInterval: options["--subsets"]!, using: &random)
    let work = paths[2]
    let prefix = try DiskImage(copying: paths[1], to: work + "/prefix.img")
    var applied = 0
    var running: [pid_t: (slot: Int, state: CrashState)] = [:]
    var freeSlots = Array((0..<jobs).reversed())
    var failed: [String] = []
    let progress = isatty(STDERR_FILENO) == 1

    func reap() {
        let (pid, passed, detail) = waitForAny()
        guard let job = running.removeValue(forKey: pid) else { return }
        freeSlots.append(job.slot)
        if !passed {
            failed.append(job.state.name)
            print(
                "FAILED \(job.state.name) (required mark '\(job.state.requiredMark ?? "")'): the check ended with \(detail)"
            )
        }
    }

    for (number, state) in states.enumerated() {
        if freeSlots.isEmpty { reap() }
        try prefix.apply(log.entries[applied..<state.durablePrefix], from: log)
        applied = state.durablePrefix
        let slot = freeSlots.removeLast()
        let path = "\(work)/state-\(slot).img"
        let image = try DiskImage(copying: prefix.path, to: path)
        try image.apply(state.extraEntries.map { log.entries[$0] }, from: log)
        let pid = spawn(
            command,
            environment: [
                "CRASH_IMAGE": path, "CRASH_STATE": state.name, "CRASH_REQUIRED_MARK": state.requiredMark ?? "",
            ]
        )
        running[pid] = (slot, state)
        if progress, number % 50 == 0 {
            writeError("\rwrite-log-replay: \(number) of \(states.count) crash states")
        }
    }
    while !running.isEmpty { reap() }
    if progress { writeError("\r\u{1b}[K") }

    let barriers = states.filter { $0.kind == .barrier }.count
    let marks = log.entries.filter { $0.flags.contains(.mark) }.count
    print(
        "write-log-replay: \(log.entries.count) log entries (\(log.entries.filter { $0.flags.contains(.flush) }.count) flushes, \(log.entries.filter { $0.flags.contains(.fua) }.count) FUA, \(marks) marks); "
            + "\(states.count) crash states checked (\(barriers) at flush/FUA points, \(states.count - barriers) with unflushed writes dropped), \(failed.count) failed"
    )
    return failed.isEmpty ? 0 : 1
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { usage("say list or check") }
do {
    switch arguments[1] {
    case "list":
        guard arguments.count == 3 else { usage("list needs LOG") }
        let log = try WriteLog(path: arguments[2])
        print("sector size \(log.sectorSize), \(log.entries.count) entries")
        for entry in log.entries {
            print(
                "\(entry.index) \(flagNames(entry.flags)) \(entry.sector) \(entry.sectorCount)\(entry.mark.map { " \($0)" } ?? "")"
            )
        }
    case "check":
        exit(try check(arguments[2...]))
    case "-h", "--help":
        print(
            "write-log-replay list LOG | check LOG BASE_IMAGE WORK_DIR [--subsets K] [--seed S] [--jobs J] -- COMMAND..."
        )
    default:
        usage("unknown command '\(arguments[1])'")
    }
} catch {
    fail(error.description, exitCode: 3)
}

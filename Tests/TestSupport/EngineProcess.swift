import Foundation

/// Whether a test that needs the server at `executable` runs: when it is
/// installed, and always in CI (`CI=true`), where a missing server fails
/// the test with the package to install instead of skipping it unseen
/// (.ci/run installs scripts/debian-test-packages.txt).
///
///     @Test(.enabled(if: serverTestsEnabled(ClickHouseServer.executable), "needs clickhouse-server"))
public func serverTestsEnabled(_ executable: String) -> Bool {
    FileManager.default.isExecutableFile(atPath: executable) || ProcessInfo.processInfo.environment["CI"] == "true"
}

/// A database server from Debian's packages, started by a test in its own
/// temporary directory with its own configuration, listening on a loopback
/// port the kernel chose (found in `/proc`, so no other test can take it
/// in between), and killed when released. None of the packages' system
/// services is used. The engines' helpers (``ClickHouseServer``,
/// ``InfluxDBServer``, ``VictoriaMetricsServer``) are built on it.
public final class EngineProcess {
    /// The server's own directory: configuration, data and `server.log`.
    public let directory: TemporaryDirectory
    /// The loopback port its HTTP interface listens on.
    public private(set) var port = 0
    /// From starting the process to its first good answer.
    public private(set) var startupSeconds = 0.0
    /// The server's process id; 0 once it was stopped and reaped.
    public private(set) var pid: pid_t = 0

    /// Starts `executable` with `arguments` (its output goes to
    /// `server.log` in `directory`) and waits until one of its listening
    /// ports passes `ready`.
    ///
    /// Not through Foundation's `Process`: its one monitoring thread waits
    /// for a child whose status socket closes, and a server must close
    /// every inherited descriptor (or it keeps other tests' pipes open), so
    /// that thread would wait for the server and stop every other test's
    /// `Process` from finishing. `posix_spawn` closes every descriptor
    /// above stderr in the child (through bash), and the server is reaped
    /// here.
    ///
    /// - Parameters:
    ///   - name: the server as messages name it: "ClickHouse".
    ///   - package: the Debian package that installs `executable`.
    ///   - ready: whether the server answers as ready on a port (it also
    ///     tells its HTTP port apart from others it listens on).
    public init(
        _ name: String,
        executable: String,
        package: String,
        directory: TemporaryDirectory,
        arguments: [String],
        // 90 s: a CI run (83ca710) saw InfluxDB and ClickHouse print nothing
        // for 30 s while every suite started at once, after the host had
        // dropped the page cache (their binaries are read from disk again).
        timeout: Double = 90,
        ready: (Int) -> Bool
    ) throws {
        self.directory = directory
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ToolFailure(
                "\(name) is not installed (\(executable)): apt-get install \(package) (CI installs every package in scripts/debian-test-packages.txt)"
            )
        }
        let started = Date()
        pid = try spawn(
            executable,
            arguments,
            environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=\(directory.path)", "LANG=C.UTF-8"],
            output: directory.file("server.log")
        )
        let deadline = Date().addingTimeInterval(timeout)
        while port == 0 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                pid = 0
                throw ToolFailure("\(name) exited (wait status \(status)) while starting: \(log.suffix(2000))")
            }
            if let found = listeningPorts(of: pid).first(where: ready) {
                port = found
            } else if Date() > deadline {
                throw ToolFailure("\(name) did not answer within \(Int(timeout)) s: \(log.suffix(2000))")
            } else {
                usleep(10_000)
            }
        }
        startupSeconds = Date().timeIntervalSince(started)
    }

    /// The server's output, for failure messages.
    public var log: String { (try? String(contentsOfFile: directory.file("server.log"), encoding: .utf8)) ?? "" }

    /// Kills the server at once and reaps it (its data is thrown away with
    /// the directory).
    public func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        pid = 0
    }

    deinit { stop() }
}

/// Starts `executable` with stdin from /dev/null, stdout and stderr to
/// `output`, every other descriptor closed, default signal handling and
/// mask; returns its pid, for the caller to reap.
func spawn(_ executable: String, _ arguments: [String], environment: [String], output: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // Tests ignore SIGPIPE, and dispatch's threads block signals: neither reaches the server.
    var defaults = sigset_t()
    sigfillset(&defaults)
    var mask = sigset_t()
    sigemptyset(&mask)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setsigmask(&attributes, &mask)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
    // bash closes every descriptor above stderr (other threads' pipes, open
    // without close-on-exec) and becomes the server (Swift's Glibc lacks
    // posix_spawn_file_actions_addclosefrom_np). No redirection on the loop:
    // bash would save stderr in a descriptor the loop closes, and the server
    // got /dev/null as its stderr (every spawned server's log was empty).
    let script =
        "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done; exec \"$@\""
    let argv = (["/bin/bash", "-c", script, "bash", executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup($0) } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, "/bin/bash", &actions, &attributes, argv, envp)
    guard rc == 0 else { throw ToolFailure("posix_spawn \(executable) failed: \(String(cString: strerror(rc)))") }
    return pid
}

/// The TCP ports process `pid` listens on, from `/proc`: its sockets'
/// inodes matched against the listening sockets of its network namespace.
public func listeningPorts(of pid: Int32) -> [Int] {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    let inodes = Set(
        fds.compactMap { fd -> Substring? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                target.hasPrefix("socket:[")
            else { return nil }
            return target.dropFirst("socket:[".count).dropLast()
        }
    )
    var ports: [Int] = []
    for table in ["tcp", "tcp6"] {
        let text = readWholeProcFile("/proc/\(pid)/net/\(table)")
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
        for line in text.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ")
            guard columns.count > 9, columns[3] == "0A", inodes.contains(columns[9]),
                let port = columns[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
            else { continue }
            ports.append(port)
        }
    }
    return ports
}

/// A `/proc` file read to its end ("" if it cannot be opened).
/// `String(contentsOfFile:)` reads a file whose size says 0 in one read of
/// ~4 KiB: `/proc/net/tcp` with the sockets of a whole test run going is
/// ten times that, and a server's listening socket past the first page
/// was not seen (mosquitto "did not listen" while it did, CI at 75c73ea).
public func readWholeProcFile(_ path: String) -> String {
    // FileHandle reads to EOF whatever the size says (checked on /proc/net/tcp).
    FileHandle(forReadingAtPath: path).map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
}

/// The HTTP status `url` answers within `timeout` seconds; -1 for none.
/// For polling a server that is starting.
public func httpStatus(_ url: String, timeout: Double = 2) -> Int {
    guard
        let result = try? runTool(
            "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", String(timeout), url]
        )
    else { return -1 }
    return Int(result.output).flatMap { $0 == 0 ? nil : $0 } ?? -1
}

/// `text` percent-encoded for a URL's query or a form body: everything but
/// RFC 3986's unreserved characters.
public func formEncoded(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }
    }
    return out
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

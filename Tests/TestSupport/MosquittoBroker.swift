import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A mosquitto broker (Debian's `mosquitto`), started by a test in its own
/// directory on a loopback port, with a subscriber (`mosquitto_sub`, MQTT
/// 5, QoS 1) writing what it receives to a file. Killed when released.
///
///     let broker = try MosquittoBroker()
///     let subscriber = try broker.subscribe("telemetry/#")
///     // … publish …
///     subscriber.messages()   // [(topic, userProperties, payload)]
public final class MosquittoBroker {
    public static let executable = "/usr/sbin/mosquitto"
    public let directory: TemporaryDirectory
    /// The port clients of the test publish to (TLS with ``TLSFiles``).
    public let port: Int
    /// The plain port subscribers use (the same as ``port`` without TLS).
    public let plainPort: Int
    private var pid: pid_t = 0
    private let users: [(String, String)]
    private let tls: TLSFiles?
    private let persistent: Bool
    private let extraConfig: String

    /// A TLS listener's files (PEM), and whether it requires a client certificate.
    public struct TLSFiles {
        public var ca: String
        public var certificate: String
        public var key: String
        public var requireClientCertificate: Bool

        public init(ca: String, certificate: String, key: String, requireClientCertificate: Bool) {
            self.ca = ca
            self.certificate = certificate
            self.key = key
            self.requireClientCertificate = requireClientCertificate
        }
    }

    /// - Parameters:
    ///   - port: the port to listen on (the default: a free one).
    ///   - users: user names and passwords; with any, anonymous clients are refused.
    ///   - tls: serve TLS on ``port`` (subscribers use ``plainPort``).
    ///   - persistent: keep sessions and their queued messages in a file
    ///     across a graceful ``stop()`` and ``start()``.
    ///   - extraConfig: more lines for mosquitto.conf (e.g. `max_queued_messages 0`).
    public init(
        port: Int? = nil,
        users: [(String, String)] = [],
        tls: TLSFiles? = nil,
        persistent: Bool = false,
        extraConfig: String = ""
    ) throws {
        directory = try TemporaryDirectory()
        self.users = users
        self.tls = tls
        self.persistent = persistent
        self.extraConfig = extraConfig
        self.port = try port ?? Self.freePort()
        self.plainPort = tls == nil ? self.port : try Self.freePort()
        try start()
    }

    /// Starts (again, after ``kill()``) on the same port.
    public func start() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw ToolFailure("mosquitto is not installed: apt-get install mosquitto mosquitto-clients")
        }
        var config = "log_dest stderr\n"
        config +=
            persistent
            ? "persistence true\npersistence_location \(directory.path)/\nautosave_interval 0\n" : "persistence false\n"
        config += extraConfig
        // As root, mosquitto would become the user mosquitto, who cannot read this directory.
        if geteuid() == 0 { config += "user root\n" }
        if users.isEmpty {
            config += "allow_anonymous true\n"
        } else {
            let passwords = directory.file("passwords")
            FileManager.default.createFile(atPath: passwords, contents: nil)
            for (user, password) in users {
                let result = try runTool("/usr/bin/mosquitto_passwd", ["-b", passwords, user, password])
                guard result.status == 0 else { throw ToolFailure("mosquitto_passwd: \(result.output)") }
            }
            config += "allow_anonymous false\npassword_file \(passwords)\n"
        }
        config += "listener \(plainPort) 127.0.0.1\n"
        if let tls {
            config += "listener \(port) 127.0.0.1\ncafile \(tls.ca)\ncertfile \(tls.certificate)\nkeyfile \(tls.key)\n"
            config += "tls_version tlsv1.2\nrequire_certificate \(tls.requireClientCertificate)\n"
        }
        try config.write(toFile: directory.file("mosquitto.conf"), atomically: true, encoding: .utf8)
        // Twice at most: in CI (1813eef… 42175e4) a broker started while every
        // suite was starting showed no output and no listener for 30 s; a
        // second spawn tells a stuck start from a slow machine, and the
        // error says what the process was doing.
        var stuck: String?
        for attempt in 1...2 {
            pid = try spawn(
                Self.executable,
                ["-c", directory.file("mosquitto.conf")],
                environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=\(directory.path)"],
                output: directory.file("broker.log")
            )
            // 60 s in all: with every suite running at once on two cores, a TLS
            // listener took more than 10 s to appear (CI, b3d110f), and one
            // listener of two was still missing after 2 × 15 s (CI, 83ca710,
            // with the engines started alongside as slow).
            let deadline = Date().addingTimeInterval(30)
            while !Set(listeningPorts(of: pid)).isSuperset(of: [port, plainPort]) {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    pid = 0
                    throw ToolFailure("mosquitto exited while starting: \(log.suffix(2000))")
                }
                if Date() >= deadline { break }
                usleep(10_000)
            }
            if Set(listeningPorts(of: pid)).isSuperset(of: [port, plainPort]) {
                if let stuck { print("MosquittoBroker: the first start was stuck (\(stuck)); the second listens") }
                return
            }
            stuck =
                "attempt \(attempt): \(Self.processState(pid)), listening on \(listeningPorts(of: pid)), log: \(log.suffix(500))"
            kill()
        }
        throw ToolFailure("mosquitto did not listen on \(port) and \(plainPort) in 2 × 30 s: \(stuck ?? "")")
    }

    /// What `pid` is doing, from /proc: its command, state and wait channel.
    static func processState(_ pid: pid_t) -> String {
        let read = { (name: String) in readWholeProcFile("/proc/\(pid)/\(name)") }
        let state = read("status").split(separator: "\n").first { $0.hasPrefix("State:") } ?? "State: ?"
        let command = read("cmdline").replacingOccurrences(of: "\u{0}", with: " ")
        return "\(command.prefix(120)) \(state), wchan \(read("wchan"))"
    }

    /// Stops the broker gracefully (SIGTERM: a persistent one saves its
    /// sessions and queued messages) and reaps it.
    public func stop() { end(with: SIGTERM) }

    /// Freezes the broker (SIGSTOP): connections stay open, nothing is
    /// answered. ``kill()`` ends a frozen broker too.
    public func freeze() {
        if pid > 0 { Glibc.kill(pid, SIGSTOP) }
    }

    /// Lets a frozen broker go on (SIGCONT).
    public func thaw() {
        if pid > 0 { Glibc.kill(pid, SIGCONT) }
    }

    /// Kills the broker at once (SIGKILL) and reaps it.
    public func kill() { end(with: SIGKILL) }

    private func end(with signal: Int32) {
        guard pid > 0 else { return }
        Glibc.kill(pid, signal)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        pid = 0
    }

    deinit { kill() }

    public var log: String { (try? String(contentsOfFile: directory.file("broker.log"), encoding: .utf8)) ?? "" }

    /// A subscriber to `filter` at QoS 1 (MQTT 5), until released.
    public func subscribe(_ filter: String, user: (String, String)? = nil) throws -> Subscriber {
        try Subscriber(broker: self, filter: filter, user: user)
    }

    /// A port nothing listens on now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw ToolFailure("no free port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// `mosquitto_sub` writing `topic|user properties|payload` lines to a file.
    public final class Subscriber {
        public let file: String
        private var pid: pid_t = 0

        init(broker: MosquittoBroker, filter: String, user: (String, String)?) throws {
            file = broker.directory.file("subscriber-\(UUID().uuidString).log")
            var arguments = [
                "-h", "127.0.0.1", "-p", "\(broker.plainPort)", "-t", filter, "-q", "1", "-V", "mqttv5", "-F",
                "%t|%P|%p",
                "-i", "sub-\(UUID().uuidString.prefix(8))",
            ]
            if let (name, password) = user { arguments += ["-u", name, "-P", password] }
            pid = try spawn(
                "/usr/bin/mosquitto_sub",
                arguments,
                environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
                output: file
            )
            // Subscribed once a probe published to the filter comes through.
            let probe = filter.replacingOccurrences(of: "#", with: "probe").replacingOccurrences(of: "+", with: "probe")
            var publish = ["-h", "127.0.0.1", "-p", "\(broker.plainPort)", "-t", probe, "-m", Self.probe, "-q", "1"]
            if let (name, password) = user { publish += ["-u", name, "-P", password] }
            let deadline = Date().addingTimeInterval(10)
            while !((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").contains(Self.probe) {
                guard Date() < deadline else {
                    throw ToolFailure("mosquitto_sub did not receive a probe in 10 s: \(broker.log.suffix(1000))")
                }
                _ = try runTool("/usr/bin/mosquitto_pub", publish)
                usleep(50_000)
            }
        }

        static let probe = "subscriber-probe"

        deinit {
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }

        /// The messages received so far: topic, user properties (`name:value` pairs), payload.
        public func messages() -> [(topic: String, properties: String, payload: String)] {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                let parts = line.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
                guard parts.count == 3, parts[2] != Self.probe else { return nil }
                return (String(parts[0]), String(parts[1]), String(parts[2]))
            }
        }
    }
}

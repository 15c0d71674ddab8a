import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// NATS servers with JetStream (Debian's `nats-server`), started by a test
/// in its own directory on loopback ports: one node, or a cluster whose
/// nodes route to each other. Nodes can be killed (SIGKILL) and started
/// again on the same ports and store. Read back with ``JetStreamTool``, the
/// NATS C client (a second, independent implementation).
///
///     let cluster = try NATSCluster(nodes: 3)
///     try cluster.createStream("TELEMETRY", subject: "telemetry.>", replicas: 3)
///     cluster.kill(node: 1); try cluster.start(node: 1)
///     let messages = try cluster.messages("TELEMETRY")
public final class NATSCluster {
    public static let executable = "/usr/sbin/nats-server"
    public let directory: TemporaryDirectory
    public let clientPorts: [Int]
    let clusterPorts: [Int]
    private var pids: [pid_t]
    private var starts = 0
    private let extraConfig: String

    /// The nodes' URLs, `nats://127.0.0.1:PORT`.
    public var urls: [String] { clientPorts.map { "nats://127.0.0.1:\($0)" } }

    /// - Parameter extraConfig: more lines for every node's configuration
    ///   (an `authorization { … }` block, `max_payload: 512`, …).
    public init(nodes: Int = 1, extraConfig: String = "") throws {
        directory = try TemporaryDirectory()
        clientPorts = try (0..<nodes).map { _ in try MosquittoBroker.freePort() }
        clusterPorts = try (0..<nodes).map { _ in try MosquittoBroker.freePort() }
        pids = Array(repeating: 0, count: nodes)
        self.extraConfig = extraConfig
        for node in 0..<nodes { try start(node: node, waitForListener: false) }
        for node in 0..<nodes { try waitForListener(node) }
    }

    deinit { for node in pids.indices { kill(node: node) } }

    /// Starts node `node` (again) on its ports and store.
    public func start(node: Int, waitForListener wait: Bool = true) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw ToolFailure("nats-server is not installed: apt-get install nats-server")
        }
        var config = """
            server_name: n\(node)
            listen: 127.0.0.1:\(clientPorts[node])
            jetstream { store_dir: "\(directory.file("store-\(node)"))" }

            """
        if clientPorts.count > 1 {
            let routes = clusterPorts.map { "nats-route://127.0.0.1:\($0)" }.joined(separator: ", ")
            config += "cluster { name: test, listen: 127.0.0.1:\(clusterPorts[node]), routes: [\(routes)] }\n"
        }
        config += extraConfig
        let path = directory.file("node-\(node).conf")
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        starts += 1
        pids[node] = try spawn(
            Self.executable,
            ["-c", path],
            environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
            output: directory.file("node-\(node)-\(starts).log")
        )
        if wait { try waitForListener(node) }
    }

    private func waitForListener(_ node: Int) throws {
        let deadline = Date().addingTimeInterval(30)
        while !listeningPorts(of: pids[node]).contains(clientPorts[node]) {
            var status: Int32 = 0
            if waitpid(pids[node], &status, WNOHANG) == pids[node] {
                pids[node] = 0
                throw ToolFailure("nats-server n\(node) exited while starting: \(log(node).suffix(2000))")
            }
            guard Date() < deadline else { throw ToolFailure("nats-server n\(node) did not listen in 30 s") }
            usleep(10_000)
        }
    }

    /// Kills node `node` at once (SIGKILL) and reaps it.
    public func kill(node: Int) {
        guard pids[node] > 0 else { return }
        Glibc.kill(pids[node], SIGKILL)
        var status: Int32 = 0
        while waitpid(pids[node], &status, 0) == -1 && errno == EINTR {}
        pids[node] = 0
    }

    /// Freezes node `node` (SIGSTOP): connections stay open, nothing is answered.
    public func freeze(node: Int) {
        if pids[node] > 0 { Glibc.kill(pids[node], SIGSTOP) }
    }

    /// Lets a frozen node go on (SIGCONT).
    public func thaw(node: Int) {
        if pids[node] > 0 { Glibc.kill(pids[node], SIGCONT) }
    }

    /// What node `node` logged since its last start.
    public func log(_ node: Int) -> String {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasPrefix("node-\(node)-") && $0.hasSuffix(".log") }
            .sorted {
                Int($0.dropFirst("node-\(node)-".count).dropLast(4)) ?? 0 < Int(
                    $1.dropFirst("node-\(node)-".count).dropLast(4)
                ) ?? 0
            }
        return files.last.flatMap { try? String(contentsOfFile: directory.file($0), encoding: .utf8) } ?? ""
    }

    /// Creates a stream (file storage), retrying while the cluster elects
    /// its JetStream leader (a few seconds after a start).
    public func createStream(
        _ name: String,
        subject: String,
        replicas: Int = 1,
        duplicateWindowSeconds: Int = 120,
        maxMessageSize: Int? = nil,
        credentials: (String, String)? = nil
    ) throws {
        var arguments = ["create", servers(credentials), name, subject, "\(replicas)", "\(duplicateWindowSeconds)"]
        if let maxMessageSize { arguments.append("\(maxMessageSize)") }
        var last = ""
        for _ in 0..<60 {
            let result = try JetStreamTool.run(arguments)
            if result.status == 0 { return }
            last = result.output
            usleep(500_000)
        }
        throw ToolFailure("the stream \(name) could not be created in 30 s: \(last.suffix(1000))")
    }

    /// The servers for js-tool, with a user and password in each URL when given.
    func servers(_ credentials: (String, String)?) -> String {
        guard let (user, password) = credentials else { return urls.joined(separator: ",") }
        return clientPorts.map { "nats://\(user):\(password)@127.0.0.1:\($0)" }.joined(separator: ",")
    }

    /// The stream's state as the C client reads it: `messages`, `leader` (a
    /// node's name, `n0`…), `replicas`, `duplicate_window_s`, …
    public func info(_ stream: String) throws -> [String: String] {
        let result = try JetStreamTool.run(["info", urls.joined(separator: ","), stream])
        guard result.status == 0 else { throw ToolFailure("js-tool info: \(result.output.suffix(1000))") }
        var out: [String: String] = [:]
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { out[String(parts[0])] = String(parts[1]) }
        }
        return out
    }

    /// The node index of the stream's leader, if it has one now.
    public func leader(_ stream: String) -> Int? {
        guard let name = (try? info(stream))?["leader"], name.hasPrefix("n") else { return nil }
        return Int(name.dropFirst())
    }

    /// Every message of the stream, in order: its `Nats-Msg-Id`, subject and payload.
    public func messages(
        _ stream: String,
        credentials: (String, String)? = nil
    ) throws -> [(id: String, subject: String, payload: String)] {
        let result = try JetStreamTool.run(["dump", servers(credentials), stream])
        guard result.status == 0 else { throw ToolFailure("js-tool dump: \(result.output.suffix(1000))") }
        return result.output.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { return nil }
            return (String(parts[0]), String(parts[1]), String(parts[2]))
        }
    }
}

/// `Tests/Support/jetstream/js-tool.c`, built once per test process with
/// the system's C compiler against Debian's libnats-dev.
public enum JetStreamTool {
    private static let built: Result<String, ToolFailure> = {
        let source = repositoryRoot.appendingPathComponent("Tests/Support/jetstream/js-tool.c").path
        let output = NSTemporaryDirectory() + "js-tool-\(getpid())"
        guard let result = try? runTool("/usr/bin/cc", ["-O2", "-o", output, source, "-lnats"]) else {
            return .failure(ToolFailure("no C compiler at /usr/bin/cc"))
        }
        guard result.status == 0 else {
            return .failure(
                ToolFailure("js-tool did not build (apt-get install libnats-dev): \(result.output.suffix(1500))")
            )
        }
        return .success(output)
    }()

    /// The built tool's path.
    public static func path() throws -> String { try built.get() }

    public static func run(_ arguments: [String]) throws -> ToolResult {
        try runTool(try path(), arguments)
    }
}

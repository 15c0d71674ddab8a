import Foundation

/// The repository's root directory (this file is Tests/TestSupport/…).
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A helper script in Tests/Support, by file name.
public func supportScript(_ name: String) -> String {
    repositoryRoot.appendingPathComponent("Tests/Support/\(name)").path
}

/// A Python peer from Tests/Support (test backend, proxy, fake engine) on
/// loopback ports the kernel chose. The script writes its ports, separated
/// by spaces, to the file given with `--port-file` once it listens (written
/// aside and renamed, so a partial line is never read). Killed with
/// SIGKILL when released.
///
///     let proxy = try SupportScript("forward-proxy.py")
///     let url = "http://127.0.0.1:\(proxy.ports[0])"
public final class SupportScript {
    let process = Process()
    /// The ports the script reported, in its order.
    public let ports: [Int]

    public init(_ name: String, _ arguments: [String] = []) throws {
        let portFile = FileManager.default.temporaryDirectory.appendingPathComponent("edgeingest-peer-\(UUID()).port")
            .path
        defer { unlink(portFile) }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [supportScript(name), "--port-file", portFile] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var ports: [Int] = []
        for _ in 0..<200 where ports.isEmpty {
            ports = ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").split(separator: " ").compactMap {
                Int($0)
            }
            if ports.isEmpty { usleep(25_000) }
        }
        guard !ports.isEmpty else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw POSIXError(.ETIMEDOUT)
        }
        self.ports = ports
    }

    deinit {
        // SIGKILL: the peers keep no state, and a SIGTERM can arrive ignored
        // (dispositions set to SIG_IGN are inherited across exec).
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// An HTTP answer read by ``httpRequest(_:_:headers:body:)``.
public struct HTTPAnswer {
    /// The status code; -1 when curl got none (connection refused, timeout).
    public var status: Int
    public var text: String
    /// The body parsed as a JSON object, or empty.
    public var json: [String: Any]
}

/// One request to a loopback URL with curl (Foundation's URL loading needs
/// FoundationNetworking on Linux, which we do not link); `body` is sent as
/// is, without `Expect: 100-continue`.
public func httpRequest(
    _ method: String,
    _ url: String,
    headers: [String: String] = [:],
    body: [UInt8]? = nil
) throws -> HTTPAnswer {
    let dir = try TemporaryDirectory()
    var arguments = [
        "-sS", "--max-time", "10", "-X", method, "-o", dir.file("out"), "-w", "%{http_code}", "-H", "Expect:",
    ]
    for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
    if let body {
        try Data(body).write(to: URL(fileURLWithPath: dir.file("body")))
        arguments += ["--data-binary", "@" + dir.file("body")]
    }
    let result = try runTool("/usr/bin/curl", arguments + [url])
    let text = (try? String(contentsOfFile: dir.file("out"), encoding: .utf8)) ?? ""
    let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    return HTTPAnswer(status: Int(result.output.suffix(3)).flatMap { $0 == 0 ? nil : $0 } ?? -1, text: text, json: json)
}

/// The JSON object a loopback URL answers (empty if none).
public func fetchJSON(_ url: String, method: String = "GET", body: String? = nil) throws -> [String: Any] {
    try httpRequest(method, url, body: body.map { Array($0.utf8) }).json
}

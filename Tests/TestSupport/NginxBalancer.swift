import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP balancer (Debian's nginx with its stream module, as docs/FLEET.md
/// advises) on a loopback port, in front of `upstreams`: each new
/// connection goes to one of them, and to the next when a connect fails.
/// Killed when released.
///
///     let balancer = try NginxBalancer(upstreams: [gatewayA.port, gatewayB.port])
///     // clients connect to balancer.port
public final class NginxBalancer {
    public static let executable = "/usr/sbin/nginx"
    public static let streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"
    public let directory: TemporaryDirectory
    public let port: Int
    private var pid: pid_t = 0

    public init(upstreams: [Int]) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable),
            FileManager.default.fileExists(atPath: Self.streamModule)
        else {
            throw ToolFailure(
                "nginx with its stream module is not installed: apt-get install nginx-light libnginx-mod-stream"
            )
        }
        directory = try TemporaryDirectory()
        port = try MosquittoBroker.freePort()
        let servers = upstreams.map { "    server 127.0.0.1:\($0) max_fails=1 fail_timeout=2s;" }.joined(
            separator: "\n"
        )
        let config = """
            load_module \(Self.streamModule);
            daemon off;
            master_process off;
            error_log \(directory.file("error.log")) info;
            pid \(directory.file("nginx.pid"));
            events { worker_connections 1024; }
            stream {
              upstream gateways {
            \(servers)
              }
              server {
                listen 127.0.0.1:\(port);
                proxy_pass gateways;
                proxy_connect_timeout 1s;
                proxy_next_upstream on;
                proxy_next_upstream_tries 2;
              }
            }

            """
        try config.write(toFile: directory.file("nginx.conf"), atomically: true, encoding: .utf8)
        pid = try spawn(
            Self.executable,
            ["-p", directory.path, "-c", directory.file("nginx.conf")],
            environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
            output: directory.file("nginx.out")
        )
        let deadline = Date().addingTimeInterval(30)
        while !listeningPorts(of: pid).contains(port) {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                pid = 0
                throw ToolFailure("nginx exited while starting: \(log.suffix(2000))")
            }
            guard Date() < deadline else { throw ToolFailure("nginx did not listen on \(port) in 30 s") }
            usleep(10_000)
        }
    }

    deinit {
        guard pid > 0 else { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    public var log: String {
        ((try? String(contentsOfFile: directory.file("error.log"), encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: directory.file("nginx.out"), encoding: .utf8)) ?? "")
    }
}

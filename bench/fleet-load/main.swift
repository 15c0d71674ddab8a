// fleet-load: a light fleet of ingest-protocol clients for bench/fleet.sh
// (issue 23). CLIENTS keep-alive connections, one thread each, POST batches
// of realistic readings (~172 B: their own `_id`, an ISO-8601 `ts`) with
// real Idempotency-Keys to a gateway for SECONDS, each waiting for its
// answer before the next (as an edge uploader does); SLOW more connections
// trickle request heads (a slowloris, one thread for all of them, a header
// line each every second, reconnecting when cut off). Prints one JSON line:
// records stored (from the answers' "accepted"), requests by status, the
// answer latency's p50, p99 and max in milliseconds, and the CPU seconds
// the generator itself used (it shares the machine with the gateway).
//
//   fleet-load PORT API_KEY CLIENTS SECONDS [RECORDS_PER_BATCH [SLOW]]

#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 5, let port = UInt16(arguments[1]), let clients = Int(arguments[3]),
    let seconds = Double(arguments[4])
else {
    fputs("usage: fleet-load PORT API_KEY CLIENTS SECONDS [RECORDS_PER_BATCH [SLOW]]\n", stderr)
    exit(2)
}
let apiKey = arguments[2]
let perBatch = arguments.count > 5 ? Int(arguments[5]) ?? 300 : 300
let slowCount = arguments.count > 6 ? Int(arguments[6]) ?? 0 : 0

func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

func connectLoopback() -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard rc == 0 else {
        close(fd)
        return nil
    }
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    return fd
}

func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { return false }
        sent += n
    }
    return true
}

/// Reads one answer: (status, the body's "accepted" count), nil if the connection ended.
func readAnswer(_ fd: Int32) -> (status: Int, accepted: Int)? {
    var got: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        if let end = find(got, [13, 10, 13, 10]) {
            let head = String(decoding: got[0..<end], as: UTF8.self)
            let lines = head.split(separator: "\r\n")
            let status = lines.first.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
            let length =
                lines.first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingPrefix(" ")) } ?? 0
            if got.count - end - 4 >= length {
                let body = Array(got[(end + 4)..<(end + 4 + length)])
                var accepted = 0
                if let at = find(body, Array("\"accepted\":".utf8)) {
                    for byte in body[(at + 11)...] {
                        guard byte >= 48, byte <= 57 else { break }
                        accepted = accepted * 10 + Int(byte - 48)
                    }
                }
                return (status, accepted)
            }
        }
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return nil }
        got += chunk[0..<n]
    }
}

func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
        if Array(haystack[i..<(i + needle.count)]) == needle { return i }
    }
    return nil
}

let hex = Array("0123456789abcdef".utf8)

/// The wall clock's seconds, as an ObjectId's first 4 bytes.
func epochSeconds() -> Int {
    var t = timespec()
    clock_gettime(CLOCK_REALTIME, &t)
    return t.tv_sec
}

/// FLEET_IDS=random: `_id`s with random process and counter bytes (no two
/// in one bucket of the gateway's received-id groups), the worst case for
/// its deduplication; by default an edge box's counting ObjectIds.
let randomIDs = getenv("FLEET_IDS").map { String(cString: $0) } == "random"

/// One batch of `perBatch` readings for `client`, numbered from `first`.
/// `_id`s are shaped as a real edge box's ObjectIds: 4 bytes of seconds,
/// 5 bytes per client (its process), a 3-byte counter — unique across the
/// fleet, and in time order as the gateway receives real ones. Written
/// byte by byte (no `String` per reading), so the generator's own CPU
/// leaves the gateway room on the cores they share.
func body(client: Int, first: Int) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(perBatch * 180)
    let seconds = epochSeconds()
    let process = (client &* 0x9E37_79B9) & 0xFF_FFFF_FFFF
    for k in 0..<perBatch {
        let n = first + k
        out.append(contentsOf: #"{"_id":""#.utf8)
        appendHex(seconds, digits: 8, to: &out)
        if randomIDs {
            // Ids with nothing in common: each its own group at the gateway.
            appendHex(Int.random(in: 0...0xFF_FFFF_FFFF), digits: 10, to: &out)
            appendHex(Int.random(in: 0...0xFF_FFFF), digits: 6, to: &out)
        } else {
            appendHex(process, digits: 10, to: &out)
            appendHex(n & 0xFF_FFFF, digits: 6, to: &out)
        }
        out.append(contentsOf: #"","ts":"2026-11-26T10:"#.utf8)
        appendDigits((n / 60_000) % 60, count: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits((n / 1000) % 60, count: 2, to: &out)
        out.append(UInt8(ascii: "."))
        appendDigits(n % 1000, count: 3, to: &out)
        out.append(contentsOf: #"Z","deviceId":"WX1278UIT-"#.utf8)
        appendDigits(client % 100, count: 2, to: &out)
        out.append(contentsOf: #"","temperatureInFahrenheit":"#.utf8)
        appendDigits(55 + n % 40, count: 2, to: &out)
        out.append(UInt8(ascii: "."))
        appendDigits(n % 10, count: 1, to: &out)
        out.append(contentsOf: #","barometricPressureInHg":29."#.utf8)
        appendDigits(40 + n % 60, count: 2, to: &out)
        out.append(contentsOf: #","windSpeedInMph":"#.utf8)
        appendDigits(n % 45, count: n % 45 < 10 ? 1 : 2, to: &out)
        out.append(contentsOf: "}\n".utf8)
    }
    return out
}

func appendHex(_ value: Int, digits: Int, to out: inout [UInt8]) {
    for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) { out.append(hex[(value >> shift) & 15]) }
}

/// `value`'s last `count` decimal digits, zero-padded.
func appendDigits(_ value: Int, count: Int, to out: inout [UInt8]) {
    var divisor = 1
    for _ in 1..<max(count, 1) { divisor *= 10 }
    while divisor > 0 {
        out.append(UInt8(ascii: "0") + UInt8((value / divisor) % 10))
        divisor /= 10
    }
}

final class Results: @unchecked Sendable {  // under `lock`
    var lock = pthread_mutex_t()
    var accepted = 0
    var statuses: [Int: Int] = [:]
    var latencies: [Double] = []
    init() { pthread_mutex_init(&lock, nil) }
    func add(accepted: Int, status: Int, latency: Double?) {
        pthread_mutex_lock(&lock)
        self.accepted += accepted
        statuses[status, default: 0] += 1
        if let latency { latencies.append(latency) }
        pthread_mutex_unlock(&lock)
    }
}

let results = Results()
let deadline = now() + seconds

func clientLoop(_ client: Int) {
    var sequence = 0
    var fd: Int32? = nil
    while now() < deadline {
        if fd == nil { fd = connectLoopback() }
        guard let socket = fd else {
            usleep(10_000)
            continue
        }
        let payload = body(client: client, first: sequence * perBatch)
        let head =
            "POST /ingest/v1/batches HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer \(apiKey)\r\nContent-Type: application/x-ndjson\r\nIdempotency-Key: fleet-\(client)-\(sequence)\r\nEdgeIngest-Protocol: 1\r\nEdgeIngest-Record-Type: WeatherSensor\r\nContent-Length: \(payload.count)\r\n\r\n"
        let started = now()
        guard sendAll(socket, Array(head.utf8) + payload), let answer = readAnswer(socket) else {
            close(socket)
            fd = nil
            results.add(accepted: 0, status: -1, latency: nil)
            continue
        }
        results.add(accepted: answer.accepted, status: answer.status, latency: now() - started)
        if answer.status == 200 {
            sequence += 1
        } else if answer.status == 429 || answer.status == 503 {
            usleep(100_000)
        }
    }
    if let fd { close(fd) }
}

/// SLOW connections trickling heads: a header line each every second.
func slowloris() {
    var fds: [Int32] = []
    // Ten ticks a second, each sending to a tenth of the connections: a
    // header line per connection per second (it was one per tick, ten a
    // second, until the twentieth session).
    let ticks = max(1, min(10, slowCount))
    var tick = 0
    while now() < deadline {
        while fds.count < slowCount, let fd = connectLoopback() {
            _ = sendAll(fd, Array("POST /ingest/v1/batches HTTP/1.1\r\nHost: slow\r\n".utf8))
            fds.append(fd)
        }
        usleep(1_000_000 / UInt32(ticks))
        tick += 1
        var kept: [Int32] = []
        for (index, fd) in fds.enumerated() {
            if index % ticks != tick % ticks || sendAll(fd, Array("X-Slow: 1\r\n".utf8)) {
                kept.append(fd)
            } else {
                close(fd)
            }
        }
        fds = kept
    }
    for fd in fds { close(fd) }
}

var threads: [pthread_t] = []
func spawn(_ body: @escaping () -> Void) {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setstacksize(&attributes, 256 * 1024)
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    pthread_create(
        &thread,
        &attributes,
        { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        },
        box
    )
    threads.append(thread)
}

let started = now()
if slowCount > 0 { spawn { slowloris() } }
for client in 0..<clients { spawn { clientLoop(client) } }
for thread in threads { pthread_join(thread, nil) }
let elapsed = now() - started
let sorted = results.latencies.sorted()
func percentile(_ p: Double) -> Double {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000
}
var usage = rusage()
getrusage(RUSAGE_SELF.rawValue, &usage)
let cpuSeconds =
    Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
    + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
let statusText = results.statuses.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
print(
    "{\"clients\":\(clients),\"slow\":\(slowCount),\"seconds\":\(elapsed),\"records\":\(results.accepted),\"records_per_s\":\(Int(Double(results.accepted) / elapsed)),\"statuses\":{\(statusText)},\"p50_ms\":\(percentile(0.5)),\"p99_ms\":\(percentile(0.99)),\"max_ms\":\(percentile(1.0)),\"cpu_s\":\(cpuSeconds)}"
)

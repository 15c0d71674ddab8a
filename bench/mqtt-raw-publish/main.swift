// libmosquitto publishing in a loop, as fast as it can: every line of a file
// as one QoS 1 message, all handed to the library at once (it keeps as many
// in flight as the broker's Receive Maximum allows), then looping until every
// PUBACK came. The yardstick for the MQTT sink (bench/mqtt.sh): the same
// library, the same broker, the same messages, none of the agent's work.
//
//   mqtt-raw-publish PORT FILE [QOS [CHUNK]]   -> "published N messages in S s: R/s"
//
// CHUNK: hand over that many, wait for all their PUBACKs, then the next (as
// the sink does per batch); default all at once.
import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` to standard error.
func printError(_ text: String) {
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let port = Int32(arguments[1]) else {
    printError("usage: mqtt-raw-publish PORT FILE [QOS]\n")
    exit(64)
}
let qos = Int32(arguments.count > 3 ? arguments[3] : "1") ?? 1
/// Messages handed over before waiting for all their acknowledgements (all by default).
let chunk = Int(arguments.count > 4 ? arguments[4] : "") ?? Int.max
let lines = try readSmallFile(arguments[2], limit: 1 << 31).split(separator: UInt8(ascii: "\n"))
let library = try LibMosquitto.shared()

final class Counters: @unchecked Sendable {
    var connected: Int32?
    var acknowledged = 0
    var refused = 0
}
let counters = Counters()
guard let client = library.new("raw-publisher", true, Unmanaged.passUnretained(counters).toOpaque()) else { exit(70) }
_ = library.intOption(client, LibMosquitto.optionProtocolVersion, LibMosquitto.protocolV5)
library.connectV5CallbackSet(client) { _, context, code, _, _ in
    Unmanaged<Counters>.fromOpaque(context!).takeUnretainedValue().connected = code
}
library.publishV5CallbackSet(client) { _, context, _, reason, _ in
    let counters = Unmanaged<Counters>.fromOpaque(context!).takeUnretainedValue()
    counters.acknowledged += 1
    if reason >= 0x80 { counters.refused += 1 }
}
guard library.connectBindV5(client, "127.0.0.1", port, 30, nil, nil) == LibMosquitto.success else {
    printError("cannot connect to 127.0.0.1:\(port)\n")
    exit(69)
}
while counters.connected == nil { _ = library.loop(client, 100, 1) }
guard counters.connected == 0 else {
    printError("the broker refused the connection\n")
    exit(69)
}
let start = monotonicMilliseconds()
var sent = 0
while sent < lines.count {
    let end = min(lines.count, sent > lines.count - chunk ? lines.count : sent + chunk)
    for line in lines[sent..<end] {
        line.withUnsafeBytes { bytes in
            _ = library.publishV5(client, nil, "bench/raw", Int32(bytes.count), bytes.baseAddress, qos, false, nil)
        }
    }
    sent = end
    if qos > 0 {
        while counters.acknowledged < sent {
            guard library.loop(client, 100, 1) == LibMosquitto.success else {
                printError("the connection was lost\n")
                exit(69)
            }
        }
    }
}
if qos == 0 {
    for _ in 0..<100 { _ = library.loop(client, 10, 1) }
}
let seconds = Double(monotonicMilliseconds() - start) / 1000
_ = library.disconnect(client)
print(
    "published \(lines.count) messages in \(seconds) s: \(Int(Double(lines.count) / seconds))/s, \(counters.refused) refused"
)

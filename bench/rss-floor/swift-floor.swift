// The idle floor of a Swift agent built as ingestd is (-O, the Swift
// standard library linked statically, Debian's libcurl, libsqlite3 and
// libsystemd shared): floor.c's steps (floor_steps), then what every Swift
// program does (strings, a dictionary, a dynamic cast, a thread), then its
// memory as /proc/self/smaps_rollup counts it (floor_rollup).
//
//   bench/rss-floor.sh            (builds and runs it; docs/BENCHMARKS.md)
#if canImport(Glibc)
import Glibc
#endif

@_silgen_name("floor_steps") func floorSteps(_ url: UnsafePointer<CChar>, _ database: UnsafePointer<CChar>) -> Int32
@_silgen_name("floor_rollup") func floorRollup(_ who: UnsafePointer<CChar>)

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    fputs("usage: swift-floor URL DB_PATH\n", stderr)
    exit(2)
}
_ = floorSteps(arguments[1], arguments[2])
var table: [String: Int] = [:]
for i in 0..<1000 { table["key \(i)"] = i }
let boxed: Any = table
if let described = boxed as? CustomStringConvertible { _ = described.description.count }
var thread = pthread_t()
_ = pthread_create(&thread, nil, { _ in nil }, nil)
pthread_join(thread, nil)
floorRollup("idle (Swift, static stdlib)")

// bench/wakeup-floor/main.swift on ingestd's own executors
// (Sources/IngestAgent/Runtime, compiled in): the same task sleeping 5 s at a
// time, installed the way ingestd installs them. bench/wakeup-floor.sh
// counts its wakeups next to the libdispatch one's.
@main
enum Sleeper {
    static func main() {
        AgentExecutors.run {
            while true {
                try? await Task.sleep(for: .seconds(5))
            }
        }
    }
}

// bench/wakeup-floor/main.swift on ingestd's own executors, installed the
// way ingestd installs them: a task sleeping 5 s at a time, nothing else.
// bench/wakeup-floor.sh counts its wakeups next to the libdispatch one's.
import IngestAgent

AgentExecutors.run {
    while true {
        try? await Task.sleep(for: .seconds(5))
    }
}

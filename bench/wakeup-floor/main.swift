// The smallest Swift program that idles the way ingestd idles: one task
// sleeping 5 s at a time on Swift concurrency (statically linked runtime,
// as ingestd is built). bench/wakeup-floor.sh counts its wakeups.
while true {
    try await Task.sleep(for: .seconds(5))
}

import Foundation

/// Re-evaluates `condition` every 20 ms until it holds or `timeout` seconds
/// pass; returns whether it held. For waiting on another process (an agent,
/// a backend) without fixed sleeps.
public func eventually(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

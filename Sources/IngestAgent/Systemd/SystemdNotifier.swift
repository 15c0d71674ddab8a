import CSystemd

/// Talks to systemd over `$NOTIFY_SOCKET` (sd_notify(3)): readiness,
/// status text, watchdog keep-alives and stopping. Does nothing when the
/// agent does not run under systemd (no `NOTIFY_SOCKET`).
package struct SystemdNotifier: Sendable {
    /// The watchdog interval systemd expects pings within, if enabled
    /// (`WatchdogSec=` sets `$WATCHDOG_USEC`).
    package let watchdogMicroseconds: UInt64?

    package init() {
        var usec: UInt64 = 0
        watchdogMicroseconds = sd_watchdog_enabled(0, &usec) > 0 ? usec : nil
    }

    /// How often to ping: half the watchdog interval, as sd_watchdog_enabled(3) advises.
    package var watchdogPingMilliseconds: Int? {
        watchdogMicroseconds.map { max(1, Int($0 / 2_000)) }
    }

    package func ready() { send("READY=1") }
    package func stopping() { send("STOPPING=1") }
    /// A reload began; READY=1 says it ended (sd_notify(3)).
    package func reloading() { send("RELOADING=1") }
    package func watchdog() { send("WATCHDOG=1") }

    /// Sets the one-line status `systemctl status` shows.
    package func status(_ text: String) {
        send("STATUS=" + text.filter { $0 != "\n" })
    }

    private func send(_ state: String) {
        _ = sd_notify(0, state)
    }
}

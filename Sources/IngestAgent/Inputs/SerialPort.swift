#if canImport(Glibc)
import Glibc
#endif

/// Opens a tty in raw mode at a baud rate (termios(3)): no echo, no line
/// editing, no CR/LF translation, 8 data bits, receiver on, modem control
/// lines ignored (CLOCAL) so a missing carrier does not block the open.
enum SerialPort {
    static func open(path: String, baud: Int) throws -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw AgentError(.inputFailed, "Cannot open serial device '\(path)': \(String(cString: strerror(errno))).")
        }
        var options = termios()
        guard tcgetattr(fd, &options) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw AgentError(
                .inputFailed,
                "'\(path)' is not a terminal device (\(reason)): point the serial input at a tty."
            )
        }
        cfmakeraw(&options)
        options.c_cflag |= tcflag_t(CLOCAL | CREAD)
        // Block until at least one byte is there (poll does the waiting).
        withUnsafeMutableBytes(of: &options.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        if let speed = SerialSpeed.constant(baud) {
            cfsetispeed(&options, speed)
            cfsetospeed(&options, speed)
        }
        guard tcsetattr(fd, TCSANOW, &options) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw AgentError(.inputFailed, "Cannot configure serial device '\(path)' (\(reason)).")
        }
        return fd
    }
}

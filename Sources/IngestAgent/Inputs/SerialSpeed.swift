#if canImport(Glibc)
import Glibc
#endif

/// The baud rates termios can set, and their `speed_t` constants.
enum SerialSpeed {
    static let table: [(Int, speed_t)] = [
        (50, speed_t(B50)), (75, speed_t(B75)), (110, speed_t(B110)), (134, speed_t(B134)), (150, speed_t(B150)),
        (200, speed_t(B200)), (300, speed_t(B300)), (600, speed_t(B600)), (1200, speed_t(B1200)),
        (1800, speed_t(B1800)), (2400, speed_t(B2400)), (4800, speed_t(B4800)), (9600, speed_t(B9600)),
        (19200, speed_t(B19200)), (38400, speed_t(B38400)), (57600, speed_t(B57600)), (115200, speed_t(B115200)),
        (230400, speed_t(B230400)), (460800, speed_t(B460800)), (921600, speed_t(B921600)),
    ]

    static var supported: [Int] { table.map(\.0) }
    static func isSupported(_ baud: Int) -> Bool { table.contains { $0.0 == baud } }
    static func constant(_ baud: Int) -> speed_t? { table.first { $0.0 == baud }?.1 }
}

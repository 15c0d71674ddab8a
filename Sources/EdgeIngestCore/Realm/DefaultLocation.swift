#if canImport(Glibc)
import Glibc
#endif

/// Where an application's realms and cached users live when it names no
/// place: the seeds' default realm, on Linux.
enum DefaultLocation {
    /// The directory, first match wins:
    /// 1. `$STATE_DIRECTORY` (the first entry), set by systemd for a
    ///    service with `StateDirectory=`;
    /// 2. `$XDG_DATA_HOME/<program>`, when that variable holds an absolute path;
    /// 3. `$HOME/.local/share/<program>` (the XDG default; without `HOME`,
    ///    as for a service, the account's home directory from the password database);
    /// 4. the current directory.
    ///
    /// `<program>` is the executable's file name (`/proc/self/exe`).
    static func directory(
        environment: (String) -> String? = environmentValue,
        accountHome: () -> String? = accountHomeDirectory
    ) -> String {
        if let state = environment("STATE_DIRECTORY")?.split(separator: ":").first, state.hasPrefix("/") {
            return String(state)
        }
        let program = programName()
        if let data = environment("XDG_DATA_HOME"), data.hasPrefix("/") {
            return trimmed(data) + "/" + program
        }
        if let home = environment("HOME") ?? accountHome(), home.hasPrefix("/") {
            return trimmed(home) + "/.local/share/" + program
        }
        return "."
    }

    /// The running account's home directory (`getpwuid_r`), or nil.
    static func accountHomeDirectory() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil, let dir = entry.pw_dir
        else { return nil }
        let home = String(cString: dir)
        return home.isEmpty ? nil : home
    }

    static func environmentValue(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
    }

    private static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path == "/" ? "" : path
    }

    /// The executable's file name, or `edgeingest` if it cannot be read.
    static func programName() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "edgeingest" }
        let path = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        return name.isEmpty ? "edgeingest" : name
    }
}

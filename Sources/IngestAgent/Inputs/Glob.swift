#if canImport(Glibc)
import Glibc
#endif

/// Expands shell globs (`/var/log/sensors/*.ndjson`) to existing paths.
enum Glob {
    static func expand(_ patterns: [String]) -> [String] {
        var out: [String] = []
        for pattern in patterns {
            var result = glob_t()
            defer { globfree(&result) }
            guard glob(pattern, 0, nil, &result) == 0 else { continue }
            for i in 0..<Int(result.gl_pathc) {
                if let p = result.gl_pathv[i] { out.append(String(cString: p)) }
            }
        }
        return Array(Set(out)).sorted()
    }
}

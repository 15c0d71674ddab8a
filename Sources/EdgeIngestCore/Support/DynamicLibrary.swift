#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A C library opened with `dlopen` instead of linked: the agent's package
/// does not depend on it, a box that never uses the sink that needs it does
/// not install it, and one that does gets a clear error instead of a binary
/// that refuses to start (libpq for the PostgreSQL sink, libmosquitto for
/// the MQTT sink: docs/SINKS.md).
///
/// ```swift
/// guard var library = DynamicLibrary.open(firstOf: ["libpq.so.5", "libpq.so"]) else { /* not installed */ }
/// let status: (@convention(c) (OpaquePointer?) -> Int32)? = library.function("PQstatus")
/// guard let status else { library.close(); /* too old: library.missing names what it lacks */ }
/// ```
package struct DynamicLibrary {
    private let handle: UnsafeMutableRawPointer
    /// The functions asked for with ``function(_:as:)`` that the library lacks, in order.
    package private(set) var missing: [String] = []

    /// The first of `names` that loads (`RTLD_NOW | RTLD_LOCAL`); nil when none does.
    package static func open(firstOf names: [String]) -> DynamicLibrary? {
        for name in names {
            if let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) { return DynamicLibrary(handle: handle) }
        }
        return nil
    }

    /// The function `name` as the C function type `F`; nil, and `name`
    /// added to ``missing``, when the library has no such symbol. `F` must
    /// be the function's C signature: nothing checks it.
    package mutating func function<F>(_ name: String, as _: F.Type = F.self) -> F? {
        guard let pointer = dlsym(handle, name) else {
            missing.append(name)
            return nil
        }
        return unsafeBitCast(pointer, to: F.self)
    }

    /// Unloads the library (when it cannot be used: its functions must not be called after).
    package func close() { dlclose(handle) }
}

/// A library (or anything costly) made on first use and kept; a failure is
/// not kept, so once the operator installs the missing package the next
/// attempt finds it without a restart.
///
/// ```swift
/// private static let loaded = LoadedOnFirstUse { LibPQ.load(names: ["libpq.so.5", "libpq.so"]) }
/// let libpq = try loaded.get()
/// ```
package final class LoadedOnFirstUse<Value: Sendable, Failure: Error>: Sendable {
    private let cache = PlainMutex<Value?>(nil)
    private let load: @Sendable () -> Result<Value, Failure>

    package init(_ load: @escaping @Sendable () -> Result<Value, Failure>) {
        self.load = load
    }

    /// The value, made now (under the lock: two first users make it once) if not yet.
    package func get() throws(Failure) -> Value {
        try cache.withLock { (cached: inout Value?) throws(Failure) -> Value in
            if let cached { return cached }
            let value = try load().get()
            cached = value
            return value
        }
    }
}

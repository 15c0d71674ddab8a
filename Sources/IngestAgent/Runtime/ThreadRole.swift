#if canImport(Glibc)
import Glibc
#endif

/// What the current thread is doing for the executors: which ``JobLoop`` it
/// serves (nil: none) and, when the item it runs was started by a timer,
/// how many hops ago (see ``JobLoop/enqueue(_:)``; 0: not timer-started).
/// Kept in one thread-specific pointer: the loop's address (objects are
/// 16-byte aligned) with the depth in its low four bits.
struct ThreadRole {
    var loop: UnsafeMutableRawPointer?
    var quietDepth: UInt8

    static var current: ThreadRole {
        get {
            let bits = UInt(bitPattern: pthread_getspecific(key))
            return ThreadRole(loop: UnsafeMutableRawPointer(bitPattern: bits & ~0xF), quietDepth: UInt8(bits & 0xF))
        }
        set {
            let address = UInt(bitPattern: newValue.loop)
            precondition(
                address & 0xF == 0 && newValue.quietDepth <= 0xF,
                "ThreadRole cannot encode this loop or depth"
            )
            pthread_setspecific(key, UnsafeRawPointer(bitPattern: address | UInt(newValue.quietDepth)))
        }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left for the executors")
        return key
    }()
}

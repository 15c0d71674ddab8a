#if canImport(Glibc)
import Glibc
#endif

/// libmosquitto (the Eclipse Mosquitto client library), loaded with
/// `dlopen` the first time an MQTT sink connects, like libpq for the
/// PostgreSQL sink: the agent does not link it, a box that never uses the
/// `mqtt` sink needs no libmosquitto1, and one that does gets a clear error.
///
/// Only the calls the sink needs, with the C signatures of mosquitto.h
/// 2.0 (`libmosquitto.so.1`; Debian 12 ships 2.0.11).
// Unchecked: immutable C function pointers, set once by dlopen/dlsym;
// libmosquitto's calls are thread-safe per client, and a client is one sink's.
package struct LibMosquitto: @unchecked Sendable {
    package typealias Client = OpaquePointer
    package typealias Properties = OpaquePointer
    package typealias ConnectCallback =
        @convention(c) (Client?, UnsafeMutableRawPointer?, Int32, Int32, Properties?) -> Void
    package typealias PublishCallback =
        @convention(c) (Client?, UnsafeMutableRawPointer?, Int32, Int32, Properties?) -> Void
    package typealias DisconnectCallback =
        @convention(c) (Client?, UnsafeMutableRawPointer?, Int32, Properties?) -> Void

    package let libInit: @convention(c) () -> Int32
    package let new: @convention(c) (UnsafePointer<CChar>?, Bool, UnsafeMutableRawPointer?) -> Client?
    package let destroy: @convention(c) (Client?) -> Void
    package let intOption: @convention(c) (Client?, Int32, Int32) -> Int32
    package let usernamePasswordSet: @convention(c) (Client?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    package let tlsSet:
        @convention(c) (
            Client?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
            OpaquePointer?
        ) -> Int32
    package let connectBindV5:
        @convention(c) (Client?, UnsafePointer<CChar>?, Int32, Int32, UnsafePointer<CChar>?, Properties?) -> Int32
    package let connectBindAsync:
        @convention(c) (Client?, UnsafePointer<CChar>?, Int32, Int32, UnsafePointer<CChar>?) -> Int32
    package let disconnect: @convention(c) (Client?) -> Int32
    package let publishV5:
        @convention(c) (
            Client?, UnsafeMutablePointer<Int32>?, UnsafePointer<CChar>?, Int32, UnsafeRawPointer?, Int32, Bool,
            Properties?
        ) -> Int32
    package let loop: @convention(c) (Client?, Int32, Int32) -> Int32
    package let socket: @convention(c) (Client?) -> Int32
    package let connectV5CallbackSet: @convention(c) (Client?, ConnectCallback?) -> Void
    package let publishV5CallbackSet: @convention(c) (Client?, PublishCallback?) -> Void
    package let disconnectV5CallbackSet: @convention(c) (Client?, DisconnectCallback?) -> Void
    package let propertyAddStringPair:
        @convention(c) (UnsafeMutablePointer<Properties?>?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) ->
            Int32
    package let propertyFreeAll: @convention(c) (UnsafeMutablePointer<Properties?>?) -> Void
    package let strerror: @convention(c) (Int32) -> UnsafePointer<CChar>?
    package let reasonString: @convention(c) (Int32) -> UnsafePointer<CChar>?
    package let connackString: @convention(c) (Int32) -> UnsafePointer<CChar>?

    // Values from mosquitto.h and mqtt_protocol.h.
    package static let success: Int32 = 0
    package static let optionProtocolVersion: Int32 = 1
    package static let optionTCPNoDelay: Int32 = 11
    package static let protocolV311: Int32 = 4
    package static let protocolV5: Int32 = 5
    package static let propertyUserProperty: Int32 = 38

    /// The library, loaded (and initialised) on first use. A failure is not
    /// kept: once the operator installs libmosquitto1, the next attempt finds it.
    package static func shared() throws(MQTTError) -> LibMosquitto {
        try loaded.get()
    }
    private static let loaded = LoadedOnFirstUse<LibMosquitto, MQTTError> {
        load(names: ["libmosquitto.so.1", "libmosquitto.so"]).map { library in
            _ = library.libInit()
            return library
        }
    }

    static func load(names: [String]) -> Result<LibMosquitto, MQTTError> {
        guard var library = DynamicLibrary.open(firstOf: names) else {
            return .failure(
                MQTTError(
                    .configuration,
                    "libmosquitto.so.1 (the Mosquitto client library) is not installed: the mqtt sink needs it (apt-get install libmosquitto1)"
                )
            )
        }
        let libInit: (@convention(c) () -> Int32)? = library.function("mosquitto_lib_init")
        let new: (@convention(c) (UnsafePointer<CChar>?, Bool, UnsafeMutableRawPointer?) -> Client?)? =
            library.function(
                "mosquitto_new"
            )
        let destroy: (@convention(c) (Client?) -> Void)? = library.function("mosquitto_destroy")
        let intOption: (@convention(c) (Client?, Int32, Int32) -> Int32)? = library.function("mosquitto_int_option")
        let usernamePasswordSet: (@convention(c) (Client?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32)? =
            library.function("mosquitto_username_pw_set")
        let tlsSet:
            (
                @convention(c) (
                    Client?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
                    OpaquePointer?
                ) -> Int32
            )? = library.function("mosquitto_tls_set")
        let connectBindV5:
            (
                @convention(c) (Client?, UnsafePointer<CChar>?, Int32, Int32, UnsafePointer<CChar>?, Properties?) ->
                    Int32
            )? = library.function("mosquitto_connect_bind_v5")
        let connectBindAsync:
            (@convention(c) (Client?, UnsafePointer<CChar>?, Int32, Int32, UnsafePointer<CChar>?) -> Int32)? =
                library.function(
                    "mosquitto_connect_bind_async"
                )
        let disconnect: (@convention(c) (Client?) -> Int32)? = library.function("mosquitto_disconnect")
        let publishV5:
            (
                @convention(c) (
                    Client?, UnsafeMutablePointer<Int32>?, UnsafePointer<CChar>?, Int32, UnsafeRawPointer?, Int32, Bool,
                    Properties?
                ) -> Int32
            )? = library.function("mosquitto_publish_v5")
        let loop: (@convention(c) (Client?, Int32, Int32) -> Int32)? = library.function("mosquitto_loop")
        let socket: (@convention(c) (Client?) -> Int32)? = library.function("mosquitto_socket")
        let connectV5CallbackSet: (@convention(c) (Client?, ConnectCallback?) -> Void)? = library.function(
            "mosquitto_connect_v5_callback_set"
        )
        let publishV5CallbackSet: (@convention(c) (Client?, PublishCallback?) -> Void)? = library.function(
            "mosquitto_publish_v5_callback_set"
        )
        let disconnectV5CallbackSet: (@convention(c) (Client?, DisconnectCallback?) -> Void)? = library.function(
            "mosquitto_disconnect_v5_callback_set"
        )
        let propertyAddStringPair:
            (
                @convention(c) (UnsafeMutablePointer<Properties?>?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?)
                    -> Int32
            )? = library.function("mosquitto_property_add_string_pair")
        let propertyFreeAll: (@convention(c) (UnsafeMutablePointer<Properties?>?) -> Void)? = library.function(
            "mosquitto_property_free_all"
        )
        let strerror: (@convention(c) (Int32) -> UnsafePointer<CChar>?)? = library.function("mosquitto_strerror")
        let reasonString: (@convention(c) (Int32) -> UnsafePointer<CChar>?)? = library.function(
            "mosquitto_reason_string"
        )
        let connackString: (@convention(c) (Int32) -> UnsafePointer<CChar>?)? = library.function(
            "mosquitto_connack_string"
        )
        guard let libInit, let new, let destroy, let intOption, let usernamePasswordSet, let tlsSet, let connectBindV5,
            let connectBindAsync, let disconnect, let publishV5, let loop, let socket, let connectV5CallbackSet,
            let publishV5CallbackSet,
            let disconnectV5CallbackSet, let propertyAddStringPair, let propertyFreeAll, let strerror, let reasonString,
            let connackString
        else {
            library.close()
            return .failure(
                MQTTError(
                    .configuration,
                    "the installed libmosquitto lacks \(library.missing.joined(separator: ", ")): the mqtt sink needs libmosquitto 2.0 or later"
                )
            )
        }
        return .success(
            LibMosquitto(
                libInit: libInit,
                new: new,
                destroy: destroy,
                intOption: intOption,
                usernamePasswordSet: usernamePasswordSet,
                tlsSet: tlsSet,
                connectBindV5: connectBindV5,
                connectBindAsync: connectBindAsync,
                disconnect: disconnect,
                publishV5: publishV5,
                loop: loop,
                socket: socket,
                connectV5CallbackSet: connectV5CallbackSet,
                publishV5CallbackSet: publishV5CallbackSet,
                disconnectV5CallbackSet: disconnectV5CallbackSet,
                propertyAddStringPair: propertyAddStringPair,
                propertyFreeAll: propertyFreeAll,
                strerror: strerror,
                reasonString: reasonString,
                connackString: connackString
            )
        )
    }

    /// The text of a libmosquitto error number.
    package func errorText(_ code: Int32) -> String { strerror(code).map { String(cString: $0) } ?? "error \(code)" }
    /// The text of an MQTT 5 reason code.
    package func reasonText(_ code: Int32) -> String {
        reasonString(code).map { String(cString: $0) } ?? "reason \(code)"
    }
}

/// Why the MQTT sink could not deliver: `configuration` (fix and restart),
/// `refused` (the broker said no: a hold), `transient` (retry).
package struct MQTTError: Error, CustomStringConvertible {
    /// `configuration` and `refused` hold; `transient` retries; `tooLarge`
    /// splits the batch; `badRecord` bisects it down to the record (which
    /// becomes a dead letter).
    package enum Kind: Sendable { case configuration, refused, transient, tooLarge, badRecord }
    package let kind: Kind
    package let message: String
    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    package var description: String { message }
}

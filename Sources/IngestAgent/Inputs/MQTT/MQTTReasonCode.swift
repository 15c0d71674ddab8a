/// MQTT's reason codes (MQTT 5) and return codes (3.1.1) in words, for logs
/// and status.
enum MQTTReasonCode {
    static func connectRefusal(_ code: UInt8, version5: Bool) -> String {
        if !version5 {
            switch code {
            case 1: return "unacceptable protocol version (try mqtt_version = \"5\" or \"3.1.1\")"
            case 2: return "client identifier rejected (check client_id)"
            case 3: return "server unavailable"
            case 4: return "bad user name or password (check username and password_file)"
            case 5: return "not authorized (check username and password_file, and the broker's access rules)"
            default: return "return code \(code)"
            }
        }
        switch code {
        case 1: return "unacceptable protocol version: the broker speaks MQTT 3.1.1 only (set mqtt_version = \"3.1.1\")"
        case 0x84: return "unsupported protocol version (try mqtt_version = \"3.1.1\")"
        case 0x85: return "client identifier not valid (check client_id)"
        case 0x86: return "bad user name or password (check username and password_file)"
        case 0x87: return "not authorized (check username and password_file, and the broker's access rules)"
        case 0x88: return "server unavailable"
        case 0x89: return "server busy"
        case 0x8A: return "banned"
        case 0x8C: return "bad authentication method"
        case 0x9C, 0x9D: return "use another server"
        case 0x9F: return "connection rate exceeded"
        default: return "reason code 0x\(String(code, radix: 16))"
        }
    }

    /// Whether retrying soon may help (the broker is busy or restarting).
    static func isTransient(_ code: UInt8, version5: Bool) -> Bool {
        version5 ? [0x88, 0x89, 0x9F].contains(code) : code == 3
    }

    static func subscribeRefusal(_ code: UInt8) -> String {
        switch code {
        case 0x87: return "not authorized by the broker's access rules"
        case 0x8F: return "topic filter invalid"
        case 0x97: return "quota exceeded"
        case 0x9E: return "shared subscriptions not supported"
        case 0xA2: return "wildcard subscriptions not supported"
        default: return "reason code 0x\(String(code, radix: 16))"
        }
    }

    static func disconnectReason(_ code: UInt8) -> String {
        switch code {
        case 0: return "normal disconnection"
        case 0x8B: return "server shutting down"
        case 0x8D: return "keep-alive timeout"
        case 0x8E: return "session taken over (another client connected with the same client_id)"
        case 0x93: return "receive maximum exceeded"
        case 0x95: return "packet too large"
        case 0x9C, 0x9D: return "use another server"
        default: return "reason code 0x\(String(code, radix: 16))"
        }
    }
}

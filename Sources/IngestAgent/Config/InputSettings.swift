import EdgeIngestCore
import IngestGateway

/// One configured input.
package struct InputSettings: Sendable, Hashable {
    package enum Kind: String, Sendable, Hashable { case stdin, file, serial, http, socket, mqtt }
    package enum Format: String, Sendable, Hashable { case ndjson, csv }

    package var kind: Kind
    package var format: Format = .ndjson
    /// The record type of every reading, unless a reading names its own in
    /// `_type`. May be nil only when every reading carries `_type`.
    package var type: String?
    /// file: paths and globs to follow.
    package var paths: [String] = []
    /// serial: the tty device.
    package var device: String?
    /// serial: the baud rate. The default is 9600.
    package var baud = 9600
    /// Line delimiter byte. The default is "\n" (a trailing "\r" is dropped).
    package var delimiter: UInt8 = 0x0A
    /// Lines longer than this are rejected without being buffered whole. The default is 64 KiB.
    package var maxLineBytes = 64 * 1024
    /// file: how often to look for new data, rotations and new files. The default is 250 ms.
    package var pollIntervalMilliseconds = 250
    /// file: start at the end of files found at first start (true) or at their beginning (false, the default).
    package var startAtEnd = false
    /// A name for logs and status; the default is derived from the kind and path.
    package var name: String
    /// socket: the Unix socket `ingestd send` writes to. The default is
    /// `<state_directory>/ingestd.sock` (``AgentConfiguration/socketPath(of:)``).
    package var socket: String?
    /// socket: the group the socket is given (mode 0660), so its members may
    /// send; nil leaves it to the agent's user (mode 0600).
    package var socketGroup: String?
    /// http: the server's settings.
    package var http: GatewaySettings?
    /// mqtt: the broker and the subscriptions.
    package var mqtt: MQTTInputSettings?

    package init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }
}

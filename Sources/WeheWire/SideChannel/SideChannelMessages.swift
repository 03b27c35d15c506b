/// The fixed side-channel texts and the small parametrised ones (protocol.md section 5.2).
public enum SideChannelMessage {
    /// The "change spec" every normal client sends: no packet modification.
    public static let noChange = "[-1, null, null]"
    /// No iperf measurement follows.
    public static let noIperf = "NoIperf"
    /// An iperf rate follows in the next message (legacy).
    public static let willSendIperf = "WillSendIperf"
    /// No mobile statistics follow.
    public static let noMobileStats = "NoMobileStats"
    /// Mobile statistics JSON follows in the next message.
    public static let willSendMobileStats = "WillSendMobileStats"
    /// The server's acknowledgement.
    public static let ok = "OK"
    /// The client's closing request without the legacy result blob.
    public static let resultNo = "Result;No"
    /// The legacy request for a result blob.
    public static let resultYes = "Result;Yes"

    /// `DONE;<seconds>` sent by the client after its sending phase (C→S).
    public static func clientDone(durationSeconds: Double) -> String { "DONE;\(durationSeconds)" }

    /// Parses the client's `DONE;<seconds>` (any Java double spelling); `nil` if the body is something else.
    public static func parseClientDone(_ body: [UInt8]) -> Double? {
        let text = String(decoding: body.prefix(64), as: UTF8.self)
        guard text.hasPrefix("DONE;"), let value = Double(text.dropFirst(5)), value.isFinite, value >= 0 else {
            return nil
        }
        return value
    }

    /// The asynchronous UDP notifications the server sends (S→C): `STARTED;<clientPort5>` / `DONE;<clientPort5>`.
    public enum Notification: Sendable, Hashable {
        /// The server started streaming to this client port.
        case started(clientPort: UInt16)
        /// The server finished streaming to this client port.
        case done(clientPort: UInt16)

        /// The message body with a five-digit port.
        public var body: String {
            switch self {
            case .started(let port): "STARTED;" + Self.pad(port)
            case .done(let port): "DONE;" + Self.pad(port)
            }
        }

        /// Parses a notification; `nil` if the body is not one.
        public init?(parsing body: [UInt8]) {
            let text = String(decoding: body.prefix(32), as: UTF8.self)
            let parts = text.split(separator: ";")
            guard parts.count == 2, parts[1].count <= 5, parts[1].allSatisfy(\.isNumber), let port = UInt16(parts[1])
            else { return nil }
            switch parts[0] {
            case "STARTED": self = .started(clientPort: port)
            case "DONE": self = .done(clientPort: port)
            default: return nil
            }
        }

        static func pad(_ port: UInt16) -> String {
            let digits = String(port)
            return String(repeating: "0", count: max(0, 5 - digits.count)) + digits
        }
    }
}

/// The mobile statistics a client may send (protocol.md section 5.5), read defensively: every field is optional.
public struct MobileStats: Sendable, Hashable, Codable {
    /// Carrier name as the phone reports it.
    public var carrierName: String?
    /// `WIFI`, `LTE`, …
    public var networkType: String?
    /// Latitude rounded to 0.1°, as a string.
    public var latitude: String?
    /// Longitude rounded to 0.1°, as a string.
    public var longitude: String?
    /// Device manufacturer.
    public var manufacturer: String?
    /// Device model.
    public var model: String?

    /// Creates stats.
    public init(
        carrierName: String? = nil,
        networkType: String? = nil,
        latitude: String? = nil,
        longitude: String? = nil,
        manufacturer: String? = nil,
        model: String? = nil
    ) {
        self.carrierName = carrierName
        self.networkType = networkType
        self.latitude = latitude
        self.longitude = longitude
        self.manufacturer = manufacturer
        self.model = model
    }

    /// Parses the stats JSON; missing or mistyped keys become `nil`, and `"nil"` strings (iOS) become `nil`.
    public init(parsing body: [UInt8]) throws(WeheWireError) {
        let root = try JSONValue.parse(body)
        guard case .object = root else {
            throw WeheWireError(.unexpectedStructure, "mobile stats must be a JSON object", field: "mobileStats")
        }
        func text(_ value: JSONValue?) -> String? {
            switch value {
            case .string(let text)? where text != "nil" && !text.isEmpty: String(text.prefix(128))
            case .number(_, let text)?: text
            default: nil
            }
        }
        self.carrierName = text(root["carrierName"])
        self.networkType = text(root["networkType"])
        self.latitude = text(root["locationInfo"]?["latitude"])
        self.longitude = text(root["locationInfo"]?["longitude"])
        self.manufacturer = text(root["manufacturer"])
        self.model = text(root["model"])
    }
}

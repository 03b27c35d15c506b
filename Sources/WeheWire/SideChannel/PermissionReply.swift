/// The server's answer to an ID declaration (protocol.md section 5.2 #3 and 5.3).
public enum PermissionReply: Sendable, Hashable {
    /// `1;<clientIP>;<numSamples>`: go ahead; sample throughput into `sampleCount` buckets. `servesSlice`: the
    /// server serves the UDP slice the change spec asked for, said by a fourth field, `;slice` (our extension,
    /// `UDPSlice.changeSpec`; sent only to a client that asked for a slice).
    case granted(clientIP: String, sampleCount: Int, servesSlice: Bool = false)
    /// `0;<code>[;<numSamples>]`: refused.
    case denied(DenialReason, sampleCount: Int?)

    /// Why a replay was refused. Raw values are the wire codes.
    public enum DenialReason: Int, Sendable, Hashable, CaseIterable {
        /// `0;1`: the server does not have this replay (Java exit 15).
        case unknownReplay = 1
        /// `0;2`: another client with this address is running a test (Java exit 16).
        case addressBusy = 2
        /// `0;3`: the server is low on resources (Java exit 17).
        case lowResources = 3
        /// `0;4`: the server could not determine its resources (used by a third-party client; no published server).
        case resourcesUnknown = 4
        /// `0;5;<why>`: the server refused the change spec (a DPI probe naming a packet or region the replay does
        /// not have, or an unknown action); the reason text follows (our server; no published server sends it).
        case changeSpecRefused = 5

        /// A sentence for people.
        public var explanation: String {
            switch self {
            case .unknownReplay: "the server does not have this replay"
            case .addressBusy: "another test from your network address is running on the server"
            case .lowResources: "the server is low on resources; try again later"
            case .resourcesUnknown: "the server could not check its resources"
            case .changeSpecRefused: "the server refused the requested packet change"
            }
        }
    }

    /// The grant's fourth field when the server serves a slice.
    public static let sliceField = "slice"

    /// The message body.
    public var body: String {
        switch self {
        case .granted(let ip, let count, false): "1;\(ip);\(count)"
        case .granted(let ip, let count, true): "1;\(ip);\(count);\(Self.sliceField)"
        case .denied(let reason, let count?): "0;\(reason.rawValue);\(count)"
        case .denied(let reason, nil): "0;\(reason.rawValue)"
        }
    }

    /// Parses a reply; an unknown denial code becomes an error (Java maps it to exit 18).
    public init(parsing body: [UInt8]) throws(WeheWireError) {
        let fields = String(decoding: body.prefix(256), as: UTF8.self).split(
            separator: ";", omittingEmptySubsequences: false)
        guard let first = fields.first else {
            throw WeheWireError(.invalidValue, "empty permission reply", field: "permission")
        }
        switch first {
        case "1":
            guard fields.count == 3 || (fields.count == 4 && fields[3] == Self.sliceField),
                let count = Int(fields[2]), count > 0, count <= 100_000
            else {
                throw WeheWireError(.invalidValue, "grant must be '1;<ip>;<samples>[;slice]'", field: "permission")
            }
            self = .granted(clientIP: String(fields[1]), sampleCount: count, servesSlice: fields.count == 4)
        case "0":
            guard fields.count >= 2, let code = Int(fields[1]), let reason = DenialReason(rawValue: code) else {
                throw WeheWireError(
                    .invalidValue,
                    "refusal with unknown code '\(fields.dropFirst().first ?? "")'",
                    field: "permission"
                )
            }
            self = .denied(reason, sampleCount: fields.count >= 3 ? Int(fields[2]) : nil)
        default:
            throw WeheWireError(.invalidValue, "permission reply must start with 1 or 0", field: "permission")
        }
    }
}

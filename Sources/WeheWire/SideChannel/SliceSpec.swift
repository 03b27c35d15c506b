public import WeheCore

/// A UDP slice asked for in the side channel's change spec (protocol.md 5.2 #2), our extension:
/// `[-1, "Slice", [openingSeconds, from, seconds]]`.
///
/// The packet number −1 is the published protocol's "no change", so a server that does not know slices (the published
/// one) serves the whole replay as always, and its grant says nothing more. A server that serves the slice grants with
/// one more field, `1;<clientIP>;<numSamples>;slice` (`PermissionReply.granted(servesSlice:)`), which no published
/// client ever sees: it is sent only to a client that asked for a slice.
extension UDPSlice {
    /// The change spec's action name.
    public static let changeSpecAction = "Slice"

    /// The change spec that asks for this slice.
    public var changeSpec: String {
        "[-1, \"\(Self.changeSpecAction)\", [\(openingSeconds), \(from), \(seconds)]]"
    }

    /// The slice a change spec asks for; `nil` when it asks for none (any other spec, including the published
    /// no-change `[-1, null, null]` and the DPI probes' packet changes).
    /// - Throws: `WeheWireError` `.invalidValue` when the spec names the slice action with anything but three numbers
    ///   that make a slice (`UDPSlice.init`).
    public init?(changeSpec body: [UInt8]) throws(WeheWireError) {
        guard let value = try? JSONValue.parse(body), case .array(let items) = value, items.count == 3,
            case .number(-1, _) = items[0], case .string(Self.changeSpecAction) = items[1]
        else { return nil }
        guard case .array(let parts) = items[2], parts.count == 3,
            case .number(let opening, _) = parts[0], case .number(let from, _) = parts[1],
            case .number(let seconds, _) = parts[2]
        else {
            throw WeheWireError(
                .invalidValue, "a Slice change spec needs [openingSeconds, from, seconds]", field: "change spec")
        }
        guard let slice = UDPSlice(openingSeconds: opening, from: from, seconds: seconds) else {
            throw WeheWireError(
                .invalidValue,
                "a Slice needs 0 ≤ openingSeconds ≤ from, seconds > 0, each finite and at most "
                    + "\(Int(UDPSlice.longestSeconds)) s",
                field: "change spec")
        }
        self = slice
    }
}

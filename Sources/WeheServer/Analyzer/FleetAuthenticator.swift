import Crypto
package import Foundation

/// Proves that a `getMeasurements` request comes from a member of our server fleet: an HMAC-SHA256 of the request
/// under a secret every fleet member holds (`--fleet-secret-file`).
///
/// The requester sends two headers: `X-Wehe-Fleet-Date` (Unix seconds) and `X-Wehe-Fleet-Signature`, the lowercase
/// hex HMAC-SHA256 of `wehe-fleet-v1\n<METHOD>\n<request target>\n<date>` (the target is the path with its raw
/// query, exactly as sent). The server accepts a signature whose date lies within `window` of its own clock, so a
/// captured request cannot be replayed later, and a server whose clock is far off is refused with a reason that
/// says so.
package struct FleetAuthenticator: Sendable {
    /// Header carrying the request date.
    package static let dateHeader = "X-Wehe-Fleet-Date"
    /// Header carrying the signature.
    package static let signatureHeader = "X-Wehe-Fleet-Signature"
    /// Shortest secret accepted, bytes.
    package static let minimumSecretBytes = 32

    private let secret: [UInt8]
    private var key: SymmetricKey { SymmetricKey(data: secret) }
    /// Largest difference between the request date and this server's clock.
    package let window: TimeInterval

    /// The outcome of checking a request.
    package enum Check: Sendable, Equatable {
        /// The request is signed by a fleet member.
        case member
        /// It is not; the reason says why (missing headers, bad signature, date outside the window).
        case refused(String)
    }

    /// Creates an authenticator from the shared secret.
    /// - Throws: `ReplayServerError` `.invalidConfiguration` for a secret shorter than `minimumSecretBytes`.
    package init(secret: [UInt8], window: TimeInterval = 600) throws(ReplayServerError) {
        guard secret.count >= Self.minimumSecretBytes else {
            throw ReplayServerError(
                .invalidConfiguration,
                "the fleet secret has \(secret.count) bytes; at least \(Self.minimumSecretBytes) are needed")
        }
        self.secret = secret
        self.window = window
    }

    /// Reads the secret from a file (surrounding whitespace and newlines ignored).
    /// - Throws: `ReplayServerError` `.invalidConfiguration` when the file cannot be read or the secret is short.
    package static func load(secretFile path: String) throws(ReplayServerError) -> FleetAuthenticator {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ReplayServerError(.invalidConfiguration, "cannot read the fleet secret file \(path)")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return try FleetAuthenticator(secret: Array(text.utf8))
    }

    private static func message(method: String, target: String, date: Int) -> Data {
        Data("wehe-fleet-v1\n\(method.uppercased())\n\(target)\n\(date)".utf8)
    }

    /// The headers that sign a request to `target` (path and raw query) made at `now`.
    package func headers(method: String, target: String, now: Date) -> [(name: String, value: String)] {
        let date = Int(now.timeIntervalSince1970.rounded(.down))
        let code = HMAC<SHA256>.authenticationCode(
            for: Self.message(method: method, target: target, date: date), using: key)
        let hex = code.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
        return [(Self.dateHeader, String(date)), (Self.signatureHeader, hex)]
    }

    /// Checks the headers of a request to `target` received at `now`.
    package func check(method: String, target: String, date: String?, signature: String?, now: Date) -> Check {
        guard let date, let signature else { return .refused("no fleet credentials (fleet members sign requests)") }
        guard let seconds = Int(date.trimmingCharacters(in: .whitespaces)) else {
            return .refused("malformed \(Self.dateHeader)")
        }
        guard let code = Self.bytes(hex: signature.trimmingCharacters(in: .whitespaces)), code.count == 32 else {
            return .refused("malformed \(Self.signatureHeader)")
        }
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                code, authenticating: Self.message(method: method, target: target, date: seconds), using: key)
        else {
            return .refused("fleet signature does not match (a different secret, or a modified request)")
        }
        let skew = Double(seconds) - now.timeIntervalSince1970
        guard abs(skew) <= window else {
            return .refused(
                "fleet signature dated \(Int(skew)) s from this server's clock (more than \(Int(window)) s: clocks "
                    + "disagree or the request was replayed)")
        }
        return .member
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

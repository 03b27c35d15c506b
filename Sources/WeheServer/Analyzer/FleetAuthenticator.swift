import Crypto
package import Foundation
import Synchronization

/// Proves that a `getMeasurements` request comes from a member of our server fleet: an HMAC-SHA256 of the request
/// under a secret every fleet member holds (`--fleet-secret-file`).
///
/// The requester sends three headers: `X-Wehe-Fleet-Date` (Unix seconds), `X-Wehe-Fleet-Nonce` (16 to 64 hex
/// digits, new for every request) and `X-Wehe-Fleet-Signature`, the lowercase hex HMAC-SHA256 of
/// `wehe-fleet-v2\n<METHOD>\n<host>\n<request target>\n<date>\n<nonce>\n<hex SHA-256 of the body>` (host as in the
/// `Host` header without port, lowercased; target the path with its raw query, exactly as sent).
///
/// The receiver accepts a signature only when the signed host names itself (a request captured on its way to one
/// member cannot be replayed to another), the date lies within `window` of its own clock, and the nonce was not
/// seen within that window (a captured request cannot be replayed to the same member either).
///
/// The nonces are remembered by signed date, at most `nonceCapacity` of them. A flood of signed requests does not
/// lock the fleet out: when the store is full, the nonces of the oldest signed second are forgotten and every
/// request dated at or before that second is refused from then on, so a forgotten nonce can never be replayed,
/// while requests signed now (what members send) are still accepted.
package struct FleetAuthenticator: Sendable {
    /// Header carrying the request date.
    package static let dateHeader = "X-Wehe-Fleet-Date"
    /// Header carrying the request's single-use nonce.
    package static let nonceHeader = "X-Wehe-Fleet-Nonce"
    /// Header carrying the signature.
    package static let signatureHeader = "X-Wehe-Fleet-Signature"
    /// Shortest secret accepted, bytes.
    package static let minimumSecretBytes = 32
    /// Most nonces remembered at once by default (about 100 bytes each); beyond it the oldest are forgotten.
    package static let defaultNonceCapacity = 100_000

    private let secret: [UInt8]
    private var key: SymmetricKey { SymmetricKey(data: secret) }
    private let seenNonces: NonceStore
    /// Largest difference between the request date and this server's clock.
    package let window: TimeInterval

    /// The outcome of checking a request.
    package enum Check: Sendable, Equatable {
        /// The request is signed by a fleet member.
        case member
        /// It is not; the reason says why (missing headers, bad signature, another host, replay, stale date).
        case refused(String)
    }

    /// Creates an authenticator from the shared secret.
    /// - Throws: `ReplayServerError` `.invalidConfiguration` for a secret shorter than `minimumSecretBytes`.
    /// - Parameter nonceCapacity: most nonces remembered at once; when full, the oldest signed second is forgotten.
    package init(
        secret: [UInt8], window: TimeInterval = 600, nonceCapacity: Int = Self.defaultNonceCapacity
    ) throws(ReplayServerError) {
        guard secret.count >= Self.minimumSecretBytes else {
            throw ReplayServerError(
                .invalidConfiguration,
                "the fleet secret has \(secret.count) bytes; at least \(Self.minimumSecretBytes) are needed")
        }
        self.secret = secret
        self.window = window
        self.seenNonces = NonceStore(capacity: max(1, nonceCapacity))
    }

    /// Nonces remembered now (accepted requests whose date is still within the window).
    package var rememberedNonces: Int { seenNonces.count }

    /// Reads the secret from a file (surrounding whitespace and newlines ignored).
    /// - Throws: `ReplayServerError` `.invalidConfiguration` when the file cannot be read or the secret is short.
    package static func load(secretFile path: String) throws(ReplayServerError) -> FleetAuthenticator {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ReplayServerError(.invalidConfiguration, "cannot read the fleet secret file \(path)")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return try FleetAuthenticator(secret: Array(text.utf8))
    }

    /// The host part of a `Host` header (or a bare host): no port, no IPv6 brackets, lowercased.
    package static func hostName(_ header: String) -> String {
        var text = Substring(header.trimmingCharacters(in: .whitespaces).lowercased())
        if text.hasPrefix("[") {
            if let close = text.firstIndex(of: "]") { text = text[text.index(after: text.startIndex)..<close] }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = text[..<colon]
        }
        return AddressText.normalized(String(text))
    }

    private static func message(
        method: String, host: String, target: String, date: Int, nonce: String, body: [UInt8]
    ) -> Data {
        let digest = hex(Array(SHA256.hash(data: body)))
        return Data(
            "wehe-fleet-v2\n\(method.uppercased())\n\(hostName(host))\n\(target)\n\(date)\n\(nonce)\n\(digest)".utf8)
    }

    /// The headers that sign a request to `host` for `target` (path and raw query) with `body`, made at `now`.
    package func headers(
        method: String, host: String, target: String, body: [UInt8] = [], now: Date,
        nonce: String = Self.newNonce()
    ) -> [(name: String, value: String)] {
        let date = Int(now.timeIntervalSince1970.rounded(.down))
        let code = HMAC<SHA256>.authenticationCode(
            for: Self.message(method: method, host: host, target: target, date: date, nonce: nonce, body: body),
            using: key)
        return [
            (Self.dateHeader, String(date)), (Self.nonceHeader, nonce), (Self.signatureHeader, Self.hex(Array(code))),
        ]
    }

    /// A fresh nonce: 16 random bytes in hex.
    package static func newNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// Checks a request received at `now`.
    /// - Parameters:
    ///   - host: the request's `Host` header.
    ///   - ownHosts: the names and addresses this server answers to (the signed host must be one of them).
    package func check(
        method: String, host: String?, target: String, body: [UInt8], date: String?, nonce: String?,
        signature: String?, ownHosts: Set<String>, now: Date
    ) -> Check {
        guard let date, let signature, let nonce, let host else {
            return .refused("no fleet credentials (fleet members sign requests)")
        }
        guard let seconds = Int(date.trimmingCharacters(in: .whitespaces)) else {
            return .refused("malformed \(Self.dateHeader)")
        }
        let nonceText = nonce.trimmingCharacters(in: .whitespaces)
        guard (16...64).contains(nonceText.utf8.count), Self.bytes(hex: nonceText) != nil else {
            return .refused("malformed \(Self.nonceHeader)")
        }
        guard let code = Self.bytes(hex: signature.trimmingCharacters(in: .whitespaces)), code.count == 32 else {
            return .refused("malformed \(Self.signatureHeader)")
        }
        let message = Self.message(
            method: method, host: host, target: target, date: seconds, nonce: nonceText, body: body)
        guard HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: message, using: key) else {
            return .refused("fleet signature does not match (a different secret, or a modified request)")
        }
        let signedHost = Self.hostName(host)
        let signedBytes = AddressText.bytes(signedHost)
        guard
            ownHosts.contains(signedHost)
                || (signedBytes != nil && ownHosts.contains { AddressText.bytes($0) == signedBytes })
        else {
            return .refused("fleet request signed for another host (\(signedHost.prefix(64)))")
        }
        let skew = Double(seconds) - now.timeIntervalSince1970
        guard abs(skew) <= window else {
            return .refused(
                "fleet signature dated \(Int(skew)) s from this server's clock (more than \(Int(window)) s: clocks "
                    + "disagree or the request was replayed)")
        }
        let nowSeconds = Int(now.timeIntervalSince1970.rounded(.down))
        switch seenNonces.insert(
            nonceText.lowercased(), date: seconds, oldestKept: nowSeconds - Int(window.rounded(.up)) - 1)
        {
        case .fresh: return .member
        case .seen: return .refused("fleet request replayed (its nonce was already used)")
        case .forgotten:
            return .refused(
                "fleet request dated before the oldest nonce this server still remembers (a flood of fleet "
                    + "requests made it forget older ones); sign it anew")
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
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

/// The nonces of accepted fleet requests, grouped by signed date (Unix seconds), while that date can still pass the
/// date check. At most `capacity` nonces: when full, whole seconds are forgotten oldest first, and `floor`, the
/// latest forgotten second, refuses every request dated at or before it (its nonce may have been forgotten). A
/// replay carries its original date (the signature covers it), so it is either found or refused by the floor.
private final class NonceStore: Sendable {
    enum Outcome { case fresh, seen, forgotten }

    private struct State {
        var seconds: [Int: Set<String>] = [:]
        var count = 0
        var floor = Int.min
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { state.withLock { $0.count } }

    /// Records `nonce` signed at `date`; seconds before `oldestKept` are dropped when room is needed (the date
    /// check refuses them anyway).
    func insert(_ nonce: String, date: Int, oldestKept: Int) -> Outcome {
        state.withLock { state in
            guard date > state.floor else { return .forgotten }
            if state.seconds[date]?.contains(nonce) == true { return .seen }
            if state.count >= capacity {
                for (second, nonces) in state.seconds where second < oldestKept {
                    state.seconds[second] = nil
                    state.count -= nonces.count
                }
            }
            while state.count >= capacity, let oldest = state.seconds.keys.min() {
                state.count -= state.seconds.removeValue(forKey: oldest)?.count ?? 0
                state.floor = max(state.floor, oldest)
            }
            guard date > state.floor else { return .forgotten }
            state.seconds[date, default: []].insert(nonce)
            state.count += 1
            return .fresh
        }
    }
}

import Crypto
package import Foundation
import SwiftASN1
import X509

/// Creates the server's TLS material (`wehe-server certs`): a private CA and a server certificate it signs.
///
/// Clients trust the CA certificate (`ca.crt`; for the published Java client it replaces `res/main`); the server
/// presents `server.crt` with `server.key`. Keys are ECDSA P-256. An existing `ca.crt` + `ca.key` in the output
/// directory is reused, so re-issuing the server certificate does not invalidate what clients already trust.
package enum CertificateFactory {
    /// The files written, by role.
    package struct Output: Sendable, Hashable {
        /// The CA certificate (PEM) that clients must trust.
        package var caCertificate: String
        /// The CA private key (PEM); keep it away from servers that do not issue certificates.
        package var caKey: String
        /// The server certificate (PEM), signed by the CA.
        package var serverCertificate: String
        /// The server private key (PEM).
        package var serverKey: String
        /// Whether an existing CA was reused.
        package var reusedCA: Bool
    }

    /// Writes `ca.crt`, `ca.key` (unless present), `server.crt` and `server.key` into `directory`.
    /// - Parameters:
    ///   - directory: output directory (created if missing).
    ///   - hostNames: DNS names and IP literals put into the server certificate's subject alternative names; the
    ///     first is also its common name.
    ///   - validityDays: validity of the server certificate (the CA gets ten times as long).
    ///   - now: issue time.
    /// - Throws: `ReplayServerError` `.certificate`.
    package static func issue(
        into directory: String,
        hostNames: [String],
        validityDays: Int = 825,
        now: Date = Date()
    ) throws(ReplayServerError) -> Output {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let base = URL(fileURLWithPath: directory)
            let caCertURL = base.appendingPathComponent("ca.crt")
            let caKeyURL = base.appendingPathComponent("ca.key")
            let output = Output(
                caCertificate: caCertURL.path,
                caKey: caKeyURL.path,
                serverCertificate: base.appendingPathComponent("server.crt").path,
                serverKey: base.appendingPathComponent("server.key").path,
                reusedCA: FileManager.default.fileExists(atPath: caCertURL.path)
                    && FileManager.default.fileExists(atPath: caKeyURL.path)
            )
            let caKey: P256.Signing.PrivateKey
            let caCertificate: Certificate
            if output.reusedCA {
                caKey = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOf: caKeyURL, encoding: .utf8))
                caCertificate = try Certificate(pemEncoded: String(contentsOf: caCertURL, encoding: .utf8))
            } else {
                caKey = P256.Signing.PrivateKey()
                let name = try DistinguishedName {
                    OrganizationName("Wehe for Swift")
                    CommonName("Wehe for Swift private CA")
                }
                caCertificate = try Certificate(
                    version: .v3,
                    serialNumber: Certificate.SerialNumber(),
                    publicKey: Certificate.PublicKey(caKey.publicKey),
                    notValidBefore: now.addingTimeInterval(-3600),
                    notValidAfter: now.addingTimeInterval(Double(validityDays) * 10 * 86_400),
                    issuer: name,
                    subject: name,
                    signatureAlgorithm: .ecdsaWithSHA256,
                    extensions: try Certificate.Extensions {
                        Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                        Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    },
                    issuerPrivateKey: Certificate.PrivateKey(caKey)
                )
                try write(caKey.pemRepresentation, to: output.caKey, private: true)
                try write(try caCertificate.serializeAsPEM().pemString, to: output.caCertificate, private: false)
            }
            let names = hostNames.isEmpty ? ["localhost", "127.0.0.1"] : hostNames
            let serverKey = P256.Signing.PrivateKey()
            let subject = try DistinguishedName {
                OrganizationName("Wehe for Swift")
                CommonName(names[0])
            }
            let alternativeNames = names.map { name -> GeneralName in
                if let bytes = ipBytes(name) { return .ipAddress(ASN1OctetString(contentBytes: bytes[...])) }
                return .dnsName(name)
            }
            let serverCertificate = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: Certificate.PublicKey(serverKey.publicKey),
                notValidBefore: now.addingTimeInterval(-3600),
                notValidAfter: now.addingTimeInterval(Double(validityDays) * 86_400),
                issuer: caCertificate.subject,
                subject: subject,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([.serverAuth])
                    SubjectAlternativeNames(alternativeNames)
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey)
            )
            try write(serverKey.pemRepresentation, to: output.serverKey, private: true)
            try write(try serverCertificate.serializeAsPEM().pemString, to: output.serverCertificate, private: false)
            return output
        } catch let error as ReplayServerError {
            throw error
        } catch {
            throw ReplayServerError(.certificate, "cannot create certificates in \(directory)", underlying: error)
        }
    }

    private static func write(_ text: String, to path: String, private isPrivate: Bool) throws {
        let created = FileManager.default.createFile(
            atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: isPrivate ? 0o600 : 0o644])
        guard created else { throw ReplayServerError(.certificate, "cannot write \(path)") }
    }

    /// The network-order bytes of an IPv4 or IPv6 literal, `nil` for a host name.
    static func ipBytes(_ text: String) -> [UInt8]? {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4 {
            let values = octets.compactMap { UInt8($0) }
            if values.count == 4 { return values }
        }
        guard text.contains(":"), let address = try? SocketAddressBytes.ipv6(text) else { return nil }
        return address
    }
}

/// IPv6 literal parsing for certificate names.
private enum SocketAddressBytes {
    struct Invalid: Error {}

    static func ipv6(_ text: String) throws -> [UInt8] {
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { throw Invalid() }
        func groups(_ part: String) throws -> [UInt16] {
            guard !part.isEmpty else { return [] }
            return try part.split(separator: ":", omittingEmptySubsequences: false).map {
                guard let value = UInt16($0, radix: 16) else { throw Invalid() }
                return value
            }
        }
        let head = try groups(halves[0])
        let tail = halves.count == 2 ? try groups(halves[1]) : []
        let missing = 8 - head.count - tail.count
        guard missing >= 0, halves.count == 2 || missing == 0 else { throw Invalid() }
        let all = head + [UInt16](repeating: 0, count: halves.count == 2 ? missing : 0) + tail
        guard all.count == 8 else { throw Invalid() }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}

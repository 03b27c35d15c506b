import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Builds the TLS client context the published clients use: trust exactly the given certificate(s) (the Wehe CA,
/// or a server's self-signed certificate), never check host names (servers are reached by IP), no SNI for IPs.
enum TLSSettings {
    static func makeContext(trustedPEM: String?) throws(ReplayClientError) -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .noHostnameVerification
        if let trustedPEM {
            do {
                let certificates = try NIOSSLCertificate.fromPEMBytes(Array(trustedPEM.utf8))
                guard !certificates.isEmpty else {
                    throw ReplayClientError(.invalidInput, "the certificate file contains no PEM certificate")
                }
                configuration.trustRoots = .certificates(certificates)
            } catch let error as ReplayClientError {
                throw error
            } catch {
                throw ReplayClientError(.invalidInput, "the certificate file is not a PEM certificate: \(error)")
            }
        }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw ReplayClientError(.invalidInput, "cannot set up TLS: \(error)")
        }
    }

    /// The SNI name to send: none for IP literals.
    static func serverName(for host: String) -> String? {
        isIPLiteral(host) ? nil : host
    }

    /// Whether `host` is an IPv4 or IPv6 literal.
    static func isIPLiteral(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }

    /// Whether an address is loopback (127.0.0.0/8 or ::1).
    static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "::1" || host == "localhost"
    }
}

/// Classifies connection errors for people.
enum NetworkErrors {
    static func connectError(_ error: any Error, what: String, host: String, port: Int) -> ReplayClientError {
        if let error = error as? ReplayClientError { return error }
        if Task.isCancelled || error is CancellationError || error is ReadCancelled {
            return ReplayClientError(.cancelled, "the test was cancelled")
        }
        if isTLSError(error) {
            return ReplayClientError(.tlsFailed, "TLS with \(what) at \(host):\(port) failed: \(describe(error))")
        }
        return ReplayClientError(.unreachable, "cannot reach \(what) at \(host):\(port): \(describe(error))")
    }

    static func isTLSError(_ error: any Error) -> Bool {
        error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError
    }

    static func describe(_ error: any Error) -> String {
        // "connection refused", not NIO's "connection reset (error set): Connection refused) (errno: 111)".
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return "connection timed out"
            case .ioOnClosedChannel, .alreadyClosed, .eof: return "connection closed"
            default: return "\(error)"
            }
        }
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return describe(first.error) }
            if error.dnsAAAAError != nil || error.dnsAError != nil { return "host name not found" }
            return "connection failed"
        }
        if let error = error as? NIOSSLError {
            switch error {
            case .handshakeFailed(let inner): return "handshake failed (\(inner))"
            default: return "\(error)"
            }
        }
        return "\(error)"
    }
}

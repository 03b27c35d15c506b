import NIOSSL

// The TLS identity of the side channel and the analyzer, read from the configured files.
extension ReplayServer {
    static func tlsConfiguration(_ files: ReplayServerConfiguration.TLSFiles?) throws -> TLSConfiguration? {
        guard let files else { return nil }
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(files.certificateChainPath)
            let key = try NIOSSLPrivateKey(file: files.privateKeyPath, format: .pem)
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            tls.minimumTLSVersion = .tlsv12
            // TLS 1.2 only with forward secrecy and authenticated encryption; TLS 1.3's suites are all AEAD.
            tls.cipherSuiteValues = [
                .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
                .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
            ]
            return tls
        } catch {
            throw ReplayServerError(
                .certificate,
                "cannot read the TLS certificate \(files.certificateChainPath) or key \(files.privateKeyPath)",
                underlying: error
            )
        }
    }

    static func sslContext(_ files: ReplayServerConfiguration.TLSFiles?) throws -> NIOSSLContext? {
        guard let tls = try tlsConfiguration(files) else { return nil }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw ReplayServerError(
                .certificate, "the TLS certificate and key do not form a usable identity", underlying: error)
        }
    }
}

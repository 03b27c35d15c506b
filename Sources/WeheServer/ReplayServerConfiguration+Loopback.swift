package import Logging
package import WeheStore

extension ReplayServerConfiguration {
    /// A private server for one process (the demo, benchmarks, tests of the client): bound to `address`, the TLS
    /// side channel and HTTPS analyzer only, every port chosen by the system, certificates from `certificates`
    /// (see `CertificateFactory.issue`), data in `dataDirectory`.
    package static func privateTLS(
        replayDirectory: String,
        store: any ResultStore,
        logger: Logger,
        address: String,
        dataDirectory: String,
        certificates: CertificateFactory.Output
    ) -> ReplayServerConfiguration {
        var configuration = ReplayServerConfiguration(replayDirectory: replayDirectory, store: store, logger: logger)
        configuration.dataDirectory = dataDirectory
        configuration.bindAddress = address
        configuration.sideChannelTLSPort = 0
        configuration.sideChannelPlainPort = nil
        configuration.analyzerTLSPort = 0
        configuration.analyzerPlainPort = nil
        configuration.replayPorts = .ephemeral
        configuration.extraReplayPorts = []
        configuration.tls = .init(
            certificateChainPath: certificates.serverCertificate, privateKeyPath: certificates.serverKey)
        return configuration
    }
}

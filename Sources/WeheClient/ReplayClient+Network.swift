import WeheCore
import WeheWire

extension ReplayClient {
    /// The network of a test: the AS from the server's answer, else from the client's own table (looked up for the
    /// public address the server reported, else for the local source address towards the server), the provider
    /// name given, and the link kind towards the server.
    func network(serverAddress: String, publicAddress: String?, serverAS: ASTable.Entry?) -> NetworkProvider {
        var network = NetworkProvider(
            providerOverride: configuration.providerName,
            linkKind: configuration.linkKindDetector?.linkKind(towards: serverAddress) ?? .unknown)
        if let serverAS {
            network.asNumber = serverAS.number
            network.asName = serverAS.name
            network.asSource = .server
        } else if let table = configuration.asTable,
            let address = publicAddress ?? LinkKindDetector.localAddress(towards: serverAddress),
            let entry = table.lookup(address)
        {
            network.asNumber = entry.number
            network.asName = entry.name
            network.asSource = .local
        }
        return network
    }
}

import Foundation
import ServiceLifecycle
import WeheServer

/// Prints one line on standard output once the replay server listens, naming its side-channel and analyzer ports
/// (useful with port 0 and `--ephemeral-replay-ports`), then waits for shutdown.
struct PortAnnouncer: Service {
    /// The server watched.
    let server: ReplayServer

    func run() async throws {
        guard let ports = try? await server.listeningPorts() else { return }
        let fields = [
            ("side-channel-tls", ports.sideChannelTLS), ("side-channel", ports.sideChannelPlain),
            ("analyzer-tls", ports.analyzerTLS), ("analyzer", ports.analyzerPlain),
        ].map { "\($0.0)=\($0.1.map(String.init) ?? "off")" }
        // Unbuffered, so that a script reading a redirected stdout sees it at once.
        FileHandle.standardOutput.write(Data("wehe-server: listening \(fields.joined(separator: " "))\n".utf8))
        try? await gracefulShutdown()
    }
}

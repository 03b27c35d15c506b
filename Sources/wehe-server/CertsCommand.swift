import ArgumentParser
import WeheServer

/// `wehe-server certs --out <dir>`: creates a private CA and a server certificate signed by it.
struct CertsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certs",
        abstract: "Create a CA and a server certificate for the side channel and the HTTPS analyzer.",
        discussion: """
            Writes ca.crt, ca.key, server.crt and server.key. An existing ca.crt + ca.key in the directory is \
            reused, so clients that already trust it keep working. Clients must trust ca.crt: for the published \
            Java client (wehe-cmdline) copy it over res/main; the server reads server.crt and server.key.
            """
    )

    @Option(name: .long, help: "Output directory.")
    var out: String

    @Option(name: .long, help: "Host name or IP address for the server certificate (repeatable).")
    var host: [String] = []

    @Option(name: .long, help: "Validity of the server certificate in days.")
    var days: Int = 825

    func run() throws {
        guard days > 0, days <= 36_500 else { throw ValidationError("--days must lie in 1...36500") }
        let output: CertificateFactory.Output
        do {
            output = try CertificateFactory.issue(
                into: out, hostNames: host.isEmpty ? ["localhost", "127.0.0.1", "::1"] : host, validityDays: days)
        } catch {
            ServeCommand.printError("wehe-server: \(error)")
            throw ExitCode(1)
        }
        print(
            output.reusedCA
                ? "reused CA:           \(output.caCertificate)" : "created CA:          \(output.caCertificate)")
        print("server certificate:  \(output.serverCertificate)")
        print("server key:          \(output.serverKey)")
        print("client-side PEM (clients trust this; wehe-cmdline: copy to res/main): \(output.caCertificate)")
    }
}

import ArgumentParser
import WeheServer

/// Packet capture on a network interface: each test's packets, captured with libpcap and filtered on the client's
/// address and the replay's server ports, one pcap per test below the pcap directory (`--pcap`; in M-Lab mode the
/// spool, where pusher archives it). Needs libpcap (`WEHE_LIBPCAP` names the library file) and CAP_NET_RAW; without
/// them the server says so and tests run without a capture. Shared by `serve` and `mlab`.
struct CaptureOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Capture each test's packets on this interface with libpcap (needs --pcap and CAP_NET_RAW; off). "
                + "Without it, --pcap writes the server socket's view of each TCP replay connection."))
    var captureInterface: String?

    @Option(name: .long, help: "Bytes kept of each captured frame, 64-262144 (default 256).")
    var captureSnapLength: Int?

    @Option(name: .long, help: "Longest one test's capture runs, in seconds (default 900).")
    var captureMaxSeconds: Int?

    @Option(name: .long, help: "Captures running at once on this server (default 32).")
    var captureMaxConcurrent: Int?

    @Option(name: .long, help: "Captures running at once for one client /24 (IPv4) or /48 (IPv6) (default 2).")
    var captureMaxPerNetwork: Int?

    /// Sets `configuration.capture` from the options, else the file; `interface` (M-Lab's second argument) is the
    /// interface when given. The largest file per test is `--pcap-max-bytes`.
    func apply(
        to configuration: inout ReplayServerConfiguration, file: FileSettings, interface given: String? = nil
    ) throws {
        if given != nil, captureInterface != nil {
            throw ValidationError("give the capture interface once: the second argument of `mlab`")
        }
        guard let interface = given ?? captureInterface ?? file.captureInterface else {
            configuration.capture = nil
            return
        }
        guard configuration.pcapDirectory != nil else {
            throw ValidationError("--capture-interface needs --pcap (the directory the captures go to)")
        }
        var settings = InterfaceCaptureSettings(interface: interface)
        if let value = captureSnapLength ?? file.captureSnapLength {
            guard (64...262_144).contains(value) else {
                throw ValidationError("--capture-snap-length must be between 64 and 262144")
            }
            settings.snapLength = value
        }
        if let value = captureMaxSeconds ?? file.captureMaxSeconds {
            guard value >= 1 else { throw ValidationError("--capture-max-seconds must be at least 1") }
            settings.maximumDuration = .seconds(value)
        }
        if let value = captureMaxConcurrent ?? file.captureMaxConcurrent {
            guard value >= 1 else { throw ValidationError("--capture-max-concurrent must be at least 1") }
            settings.maximumConcurrent = value
        }
        if let value = captureMaxPerNetwork ?? file.captureMaxPerNetwork {
            guard value >= 1 else { throw ValidationError("--capture-max-per-network must be at least 1") }
            settings.maximumPerNetwork = value
        }
        settings.maximumBytes = configuration.pcapMaximumBytes
        configuration.capture = settings
    }
}

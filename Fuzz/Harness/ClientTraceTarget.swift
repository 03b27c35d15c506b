import WeheCore
import WeheWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Client replay files (`*.pcap_client_all.json`): read from disk with `ReplayFileReader`, decoded with
/// `ClientTraceDecoder`, checked with `problems()` and turned into the server side with
/// `ServerTrace(derivingFrom:)`, as the server's catalogue and the client load them.
///
/// Invariants: the reader returns the file's bytes and refuses a file one byte over its limit with `.tooLarge`; a
/// decoded trace written with `ClientTraceEncoder` decodes to the same trace; the derived server trace carries the
/// trace's upload and download byte counts and survives `ServerTraceCodec`; refusals are thrown with offsets inside
/// the input.
enum ClientTraceTarget {
    /// A private folder for the file the reader reads, made once per process.
    static let folder: String = {
        var template = Array("/tmp/wehe-fuzz-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { failed("mkdtemp failed") }
        return String(cString: made)
    }()

    static func check(_ input: [UInt8]) {
        readFile(input)
        let trace: ReplayTrace
        do {
            trace = try ClientTraceDecoder().decode(input)
        } catch {
            requireOffset(error, inside: input.count)
            return
        }
        let encoded = Array(ClientTraceEncoder().encode(trace).utf8)
        do {
            let again = try ClientTraceDecoder().decode(encoded)
            require(again == trace, "trace changed in an encode/decode round trip")
        } catch {
            failed("the encoding of a decoded trace is refused: \(error)")
        }
        _ = trace.problems()
        let server = ServerTrace(derivingFrom: trace)
        let tcpPackets = trace.packets.filter { if case .tcp = $0.kind { true } else { false } }
        let groups = server.tcpFlows.flatMap(\.groups)
        require(
            groups.reduce(0) { $0 + $1.requestLength } == tcpPackets.reduce(0) { $0 + $1.payload.count },
            "derived request lengths do not add up to the TCP bytes sent")
        require(
            groups.reduce(0) { $0 + $1.responseLength } == trace.bytesDown,
            "derived response lengths do not add up to bytesDown")
        guard !server.name.isEmpty else { return }
        do {
            let codec = ServerTraceCodec()
            let again = try codec.decode(Array(codec.encode(server).utf8))
            require(again == server, "derived server trace changed in a round trip")
        } catch {
            failed("the derived server trace's encoding is refused: \(error)")
        }
    }

    static func readFile(_ input: [UInt8]) {
        let path = folder + "/input.json"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        require(descriptor >= 0, "cannot create \(path)")
        input.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                require(written > 0, "cannot write \(path)")
                offset += written
            }
        }
        close(descriptor)
        do {
            let read = try ReplayFileReader(sizeLimit: input.count).read(path)
            require(read == input, "the reader returned \(read.count) bytes of a \(input.count)-byte file")
        } catch {
            failed("a file at its size limit is refused: \(error)")
        }
        guard !input.isEmpty else { return }
        do {
            _ = try ReplayFileReader(sizeLimit: input.count - 1).read(path)
            failed("a file over the size limit was read")
        } catch {
            require(error.code == .tooLarge, "a file over the limit is refused with \(error.code)")
        }
    }
}

import Foundation
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

@Suite("Published replays", .timeLimit(.minutes(3)), .enabled(if: TestResources.hasSharedReplays))
struct SharedReplaysTests {
    @Test("every published trace loads, and the listeners cover their TCP and UDP ports")
    func everyTraceServed() async throws {
        let files = try ReplayLibrary(directory: TestResources.sharedReplays).clientTraceFiles()
        let catalogue = try ReplayCatalogue(directory: TestResources.sharedReplays, logger: ServerHarness.logger)
        #expect(catalogue.replays.count == files.count)
        #expect(
            Set([80, 81, 443, 465, 853, 993, 995, 1194, 1701, 5061, 6881, 8080, 8443]).isSubset(of: catalogue.tcpPorts))
        #expect(Set([63308, 62065]).isSubset(of: catalogue.udpPorts))
        #expect(catalogue.replay(named: "Skype-06172024")?.senderCount == 1)
        #expect(catalogue.replay(named: "Pandora-05132024")?.senderCount == 0)
        let map = catalogue.portMap(tcpPort: { $0 + 20000 }, udpPort: { $0 })
        #expect(map.udp["010.110.049.082"]?["63308"] == PortMap.Endpoint(port: 63308))
        #expect(ReplayCatalogue.movedPort(63308, offset: 20000) == 18796)
        #expect(ReplayCatalogue.movedPort(443, offset: 20000) == 20443)
    }

    @Test(
        "Pandora and a port test replay their exact response byte counts",
        arguments: [
            "Pandora_05132024.pcap_client_all.json", "port_853.pcap_client_all.json",
        ])
    func publishedTCPReplay(file: String) async throws {
        let trace = try ReplayLibrary(directory: TestResources.sharedReplays).trace(file: file)
        try await ServerHarness.run(replays: TestResources.sharedReplays) { server in
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.grant == "1;127.0.0.1;100")
            #expect(outcome.responseBytes == trace.bytesDown)
            #expect(outcome.okAfterResult == "OK")
        }
    }
}

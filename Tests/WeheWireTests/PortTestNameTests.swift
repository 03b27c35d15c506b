import Testing
import WeheCore
import WeheWire

@Suite("port tests named with their size")
struct PortTestNameTests {
    @Test("the small and the large test of a port get different names, with the port, service, size class and size")
    func javaCatalog() throws {
        let json = #"""
            {"apps": [
              {"name": "80 HTTP", "size": 10, "time": 2, "image": "port80", "datafile": "port_80.pcap_client_all.json",
               "category": "SMALL_PORT"},
              {"name": "80 HTTP", "size": 50, "time": 10, "image": "port80",
               "datafile": "port_80_large.pcap_client_all.json", "category": "LARGE_PORT"},
              {"name": "1194 OpenVPN", "size": 2.5, "time": 2, "image": "port1194",
               "datafile": "port_1194.pcap_client_all.json", "category": "SMALL_PORT"},
              {"name": "YouTube", "size": 30, "time": 40, "image": "youtube", "datafile": "Youtube.pcap_client_all.json",
               "randomdatafile": "YoutubeRandom.pcap_client_all.json", "category": "VIDEO"}
            ], "port443small": "port_443.pcap_client_all.json", "port443large": "port_443_large.pcap_client_all.json"}
            """#
        let catalog = try CatalogDecoder().decode(Array(json.utf8))
        #expect(catalog.entry(named: "port80s")?.name == "Port 80 (HTTP), small (10 MB)")
        #expect(catalog.entry(named: "port80l")?.name == "Port 80 (HTTP), large (50 MB)")
        #expect(catalog.entry(named: "port1194s")?.name == "Port 1194 (OpenVPN), small (2.5 MB)")
        // Apps keep the catalog's name.
        #expect(catalog.entry(named: "youtube")?.name == "YouTube")
        let names = catalog.entries.map(\.name)
        #expect(Set(names).count == names.count)
    }

    @Test("a catalog name without a service, or without a size, still says port and size class")
    func bareNames() {
        #expect(
            CatalogEntry.portTestName(catalogName: "8081", port: "8081", large: false, sizeMB: nil)
                == "Port 8081, small")
        #expect(
            CatalogEntry.portTestName(catalogName: "Port 853 (DoT)", port: "853", large: true, sizeMB: 45)
                == "Port 853 (DoT), large (45 MB)")
    }

    /// Found by the `json` fuzz target in CI: a port test's catalog size of "1e300 MB" trapped in the conversion
    /// to a whole number, so one hostile catalog file ended the program.
    @Test("a size beyond a whole number's range names the test instead of trapping")
    func hugeSize() throws {
        #expect(
            CatalogEntry.portTestName(catalogName: "80 HTTP", port: "80", large: false, sizeMB: 1e300)
                == "Port 80 (HTTP), small (1e+300 MB)")
        #expect(
            CatalogEntry.portTestName(catalogName: "80 HTTP", port: "80", large: true, sizeMB: 9.3e18)
                == "Port 80 (HTTP), large (9.3e+18 MB)")
        let json = #"""
            {"apps": [{"name": "8081", "size": "1e300 MB", "time": 2, "icon": "port",
              "replayFile": "port_8081.pcap_client_all", "portTest": true, "largeTest": false, "appType": "port"}]}
            """#
        let catalog = try CatalogDecoder().decode(Array(json.utf8))
        #expect(catalog.entries.first?.name == "Port 8081, small (1e+300 MB)")
    }
}

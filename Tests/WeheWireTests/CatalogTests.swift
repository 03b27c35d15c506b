import Testing
import WeheCore
import WeheTestKit
import WeheWire

@Suite("catalog formats")
struct CatalogTests {
    @Test("the Java/Android catalog fixture loads with port tests and a missing app")
    func javaFormat() throws {
        let catalog = try ReplayLibrary(directory: TestResources.fixtureReplays).catalog()
        #expect(catalog.entries.map(\.id) == ["tinyweb", "tinysix", "tinycall", "port8081s", "absent"])
        let port = try #require(catalog.entry(named: "port8081s"))
        #expect(port.isPortTest)
        #expect(catalog.controlFile(for: port) == "port_443.pcap_client_all.json")
        #expect(catalog.entry(named: "absent")?.frenchOnly == true)
        #expect(catalog.entry(named: "Tiny Call")?.category == .conferencing)
    }

    @Test("the iOS/WeHeY catalog maps onto the same model")
    func iosFormat() throws {
        let catalog = try ReplayLibrary.catalog(at: TestResources.fixtureIOSCatalog)
        #expect(catalog.entries.count == 3)
        let web = try #require(catalog.entry(named: "tinyweb"))
        #expect(web.originalFile == "TinyWeb_11212026.pcap_client_all.json")
        #expect(web.controlFile == "TinyWebRandom_11212026.pcap_client_all.json")
        #expect(web.sizeMB == 1)
        #expect(web.category == .video)
        let port = try #require(catalog.entry(named: "port8081s"))
        #expect(port.category == .smallPort)
        #expect(port.controlFile == nil)
        #expect(catalog.controlFile(for: port) == "port_443.pcap_client_all.json")
        let hidden = try #require(catalog.entry(named: "tinycall"))
        #expect(hidden.hidden && hidden.englishOnly)
        #expect(hidden.category == .conferencing)
    }

    @Test(
        "malformed catalogs name the app index and field",
        arguments: [
            (#"[]"#, nil as Int?, nil as String?),
            (#"{"apps": 3}"#, nil, "apps"),
            (
                #"{"apps": [{"name": "A", "image": "a", "category": "VIDEO", "time": 3, "datafile": "a.json"}]}"#, 0,
                "randomdatafile"
            ),
            (
                #"{"apps": [{"name": "A", "image": "a", "category": "VIDEO", "time": -3, "datafile": "a.json", "randomdatafile": "b"}]}"#,
                0, "time"
            ),
            (
                #"{"apps": [{"name": "A", "image": "a", "category": "VIDEO", "time": "x", "datafile": "a.json", "randomdatafile": "b"}]}"#,
                0, "time"
            ),
            (
                #"{"apps": [{"name": "A", "image": "a", "category": "VIDEO", "time": 3, "datafile": "a", "randomdatafile": "b"}, {"name": "B", "image": "a", "category": "VIDEO", "time": 3, "datafile": "c", "randomdatafile": "d"}]}"#,
                1, "image"
            ),
            (#"{"apps": [{"name": 5}]}"#, 0, "name"),
            (#"{"apps": [{"name": "A", "image"#, nil, nil),
        ]
    )
    func malformed(text: String, entry: Int?, field: String?) {
        do {
            _ = try CatalogDecoder().decode(Array(text.utf8))
            Issue.record("decoded without error")
        } catch {
            #expect(error.entry == entry, "\(error)")
            #expect(error.field == field, "\(error)")
        }
    }
}

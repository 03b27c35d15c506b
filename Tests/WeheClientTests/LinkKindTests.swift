import Foundation
import Testing
import WeheClient
import WeheCore
import WeheTestKit

/// The link kind from a fake `/sys/class/net` tree: one interface of each kind.
@Suite("link kind from sysfs")
struct LinkKindTests {
    @Test("wireless directory → Wi-Fi, DEVTYPE=wwan → cellular, a device link → wired, virtual → unknown")
    func kinds() throws {
        let root = TestResources.temporaryDirectory("wehe-sysfs")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let files = FileManager.default
        func interface(_ name: String, uevent: String, wireless: Bool = false, device: Bool = false) throws {
            try files.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true)
            #expect(TestResources.write(uevent, to: root + "/" + name + "/uevent"))
            if wireless {
                try files.createDirectory(atPath: root + "/" + name + "/wireless", withIntermediateDirectories: true)
            }
            if device {
                try files.createDirectory(atPath: root + "/" + name + "/device", withIntermediateDirectories: true)
            }
        }
        try interface("wlan0", uevent: "INTERFACE=wlan0\nIFINDEX=3\n", wireless: true, device: true)
        try interface("wlp2s0", uevent: "DEVTYPE=wlan\nINTERFACE=wlp2s0\n", device: true)
        try interface("wwan0", uevent: "DEVTYPE=wwan\nINTERFACE=wwan0\n", device: true)
        try interface("enp3s0", uevent: "INTERFACE=enp3s0\nIFINDEX=2\n", device: true)
        try interface("br0", uevent: "DEVTYPE=bridge\nINTERFACE=br0\n")
        try interface("veth1", uevent: "INTERFACE=veth1\n")
        let detector = LinkKindDetector(sysfsRoot: root)
        #expect(detector.linkKind(ofInterface: "wlan0") == .wifi)
        #expect(detector.linkKind(ofInterface: "wlp2s0") == .wifi)
        #expect(detector.linkKind(ofInterface: "wwan0") == .cellular)
        #expect(detector.linkKind(ofInterface: "enp3s0") == .wired)
        #expect(detector.linkKind(ofInterface: "br0") == .unknown)
        #expect(detector.linkKind(ofInterface: "veth1") == .unknown)
        #expect(detector.linkKind(ofInterface: "absent0") == .unknown)
        #expect(detector.linkKind(ofInterface: "../wlan0") == .unknown)
    }

    @Test("the route to a loopback address leaves from 127.0.0.1 on the loopback interface: unknown")
    func loopbackRoute() {
        #expect(LinkKindDetector.localAddress(towards: "127.0.0.1") == "127.0.0.1")
        #expect(LinkKindDetector().linkKind(towards: "127.0.0.1") == .unknown)
        #expect(LinkKindDetector.localAddress(towards: "not an address") == nil)
    }

    @Test("the provider's display name: override or AS name with the number, the number alone, or nothing")
    func displayName() {
        #expect(NetworkProvider(asNumber: 3215, asName: "Orange").displayName == "Orange (AS3215)")
        #expect(
            NetworkProvider(asNumber: 3215, asName: "Orange", providerOverride: "Sosh").displayName == "Sosh (AS3215)")
        #expect(NetworkProvider(asNumber: 3215).displayName == "AS3215")
        #expect(NetworkProvider(providerOverride: "Sosh").displayName == "Sosh")
        #expect(NetworkProvider(providerOverride: "").displayName == nil)
        #expect(NetworkProvider().displayName == nil)
    }
}

import ArgumentParser

/// `wehe testbed …`: tools to check the detector against known throttling.
struct TestbedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "testbed",
        abstract: "Throttling testbed: a userspace middlebox to check detection against ground truth.",
        discussion: """
            The kernel testbed (network namespaces, iptables DPI and htb shaping; root only) is \
            scripts/testbed.sh in the source tree.
            """,
        subcommands: [TestbedProxy.self, TestbedProbe.self]
    )
}

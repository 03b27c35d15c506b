// swift-tools-version: 6.2
// Wehe for Swift: replay traces, statistics, results, server and client for traffic-differentiation tests.
// Layers and their rules are described in ARCHITECTURE.md and checked by Tests/ArchitectureTests.
import PackageDescription

/// Settings for every first-party target: Swift 6 mode comes from the tools version; warnings are errors in our
/// code (not in dependencies).
let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "wehe-swift",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "WeheClient", targets: ["WeheClient"]),
        .executable(name: "wehe", targets: ["wehe"]),
        .executable(name: "wehe-server", targets: ["wehe-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/sql-kit", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-kit", from: "2.17.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // DocC for the client library (`swift package generate-documentation --target WeheClient`), built in CI.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // layer 0
        .target(name: "WeheCore", exclude: ["README.md"], swiftSettings: strict),
        .target(name: "WeheStatistics", exclude: ["README.md"], swiftSettings: strict),
        .target(name: "WehePcap", swiftSettings: strict),
        // layer 1
        .target(name: "WeheWire", dependencies: ["WeheCore"], exclude: ["README.md"], swiftSettings: strict),
        .target(
            name: "WeheAnalysis",
            dependencies: ["WeheCore", "WeheStatistics"],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        .target(
            name: "WeheStore",
            dependencies: ["WeheCore", .product(name: "Logging", package: "swift-log")],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        .target(
            name: "WeheReplay",
            dependencies: ["WeheCore", .product(name: "Logging", package: "swift-log")],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        // layer 2
        .target(
            name: "WeheClient",
            dependencies: [
                "WeheCore", "WeheWire", "WeheReplay", "WeheAnalysis", "WeheStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        .target(
            name: "WeheStoreSQL",
            dependencies: [
                "WeheCore", "WeheStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        .target(
            name: "WeheServer",
            dependencies: [
                "WeheCore", "WeheWire", "WeheAnalysis", "WeheStore", "WehePcap",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        .target(
            name: "WeheRecord",
            dependencies: ["WeheCore", "WeheWire", "WehePcap", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        .target(
            name: "WeheTestbed",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        .target(
            name: "WeheWeb",
            dependencies: [
                "WeheCore", "WeheStatistics", "WeheAnalysis", "WeheStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // The templates and static files are embedded in the binary (EmbedResources), so a copied or installed
            // binary needs no resource bundle beside it.
            exclude: ["README.md", "Resources"],
            swiftSettings: strict,
            plugins: ["EmbedResources"]
        ),
        // layer 3
        .target(
            name: "WeheTestKit",
            dependencies: [
                "WeheCore", "WeheWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        // layer 4
        .executableTarget(
            name: "wehe",
            dependencies: [
                "WeheCore", "WeheWire", "WeheAnalysis", "WeheReplay", "WeheClient", "WeheStore", "WeheStoreSQL",
                "WeheTestbed", "WeheServer", "WeheWeb", "WeheRecord",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            exclude: ["DemoReplays"],
            swiftSettings: strict,
            plugins: ["EmbedResources"]
        ),
        .executableTarget(
            name: "wehe-server",
            dependencies: [
                "WeheCore", "WeheWire", "WeheStore", "WeheStoreSQL", "WeheServer", "WeheWeb",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "dashboard-demo",
            dependencies: [
                "WeheCore", "WeheStore", "WeheWeb",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/dashboard-demo",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "wehe-bench",
            dependencies: [
                "WeheCore", "WeheWire", "WeheStatistics", "WeheAnalysis", "WeheStore", "WeheStoreSQL", "WeheReplay",
                "WeheClient", "WeheServer", "WeheWeb",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/wehe-bench",
            swiftSettings: strict
        ),
        // build tools: the plugin that embeds resource folders into binaries, and its generator
        .executableTarget(name: "embed-resources", path: "Plugins/EmbedResourcesTool"),
        .plugin(name: "EmbedResources", capability: .buildTool(), dependencies: ["embed-resources"]),
        // tests
        .testTarget(name: "WeheCoreTests", dependencies: ["WeheCore", "WeheTestKit"], swiftSettings: strict),
        .testTarget(
            name: "WeheWireTests", dependencies: ["WeheCore", "WeheWire", "WeheTestKit"], swiftSettings: strict),
        .testTarget(
            name: "WeheStatisticsTests",
            dependencies: ["WeheStatistics"],
            resources: [.copy("Golden")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheAnalysisTests",
            dependencies: ["WeheCore", "WeheStatistics", "WeheAnalysis"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheStoreTests",
            dependencies: [
                "WeheCore", "WeheStore", "WeheStoreSQL", "WeheTestKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheTestbedTests",
            dependencies: [
                "WeheTestbed", "WeheTestKit", "WeheCore", "WeheWire", "WeheStore", "WeheServer", "WeheClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheReplayTests", dependencies: ["WeheCore", "WeheWire", "WeheReplay", "WeheTestKit"],
            swiftSettings: strict),
        .testTarget(
            name: "WeheClientTests",
            dependencies: [
                "WeheCore", "WeheWire", "WeheReplay", "WeheAnalysis", "WeheStore", "WeheClient", "WeheTestKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheServerTests",
            dependencies: [
                "WeheCore", "WeheWire", "WeheStore", "WeheStoreSQL", "WeheServer", "WeheTestKit",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheEndToEndTests",
            dependencies: [
                "WeheCore", "WeheWire", "WeheAnalysis", "WeheStore", "WeheStoreSQL", "WeheClient", "WeheServer",
                "WeheTestKit", "WeheTestbed", "WehePcap",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheWebTests",
            dependencies: [
                "WeheCore", "WeheAnalysis", "WeheStore", "WeheWeb", "WeheTestKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheRecordTests",
            dependencies: [
                "WeheCore", "WeheWire", "WeheRecord", "WeheTestKit", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ArchitectureTests", dependencies: ["WeheTestKit"], swiftSettings: strict),
        .testTarget(
            name: "WeheCLITests",
            dependencies: ["WeheCore", "WeheWire", "WeheTestKit", "WeheStore", "WeheStoreSQL", "WeheClient"],
            swiftSettings: strict),
    ]
)

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
        .library(name: "WeheClient", targets: ["WeheCore", "WeheWire"]),
        .executable(name: "wehe", targets: ["wehe"]),
        .executable(name: "wehe-server", targets: ["wehe-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/sql-kit", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-kit", from: "2.17.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
    ],
    targets: [
        // layer 0
        .target(name: "WeheCore", exclude: ["README.md"], swiftSettings: strict),
        .target(name: "WeheStatistics", exclude: ["README.md"], swiftSettings: strict),
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
        // layer 2
        .target(
            name: "WeheStoreSQL",
            dependencies: [
                "WeheCore", "WeheStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
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
            exclude: ["README.md"],
            resources: [.copy("Resources")],
            swiftSettings: strict
        ),
        // layer 3
        .target(
            name: "WeheTestKit",
            dependencies: ["WeheCore", "WeheWire"],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        // layer 4
        .executableTarget(
            name: "wehe",
            dependencies: [
                "WeheCore", "WeheWire", "WeheAnalysis",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "wehe-server",
            dependencies: [
                "WeheCore", "WeheStore", "WeheStoreSQL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
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
                "WeheCore", "WeheWire", "WeheStatistics", "WeheAnalysis", "WeheStore", "WeheStoreSQL", "WeheWeb",
            ],
            path: "Benchmarks/wehe-bench",
            swiftSettings: strict
        ),
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
            dependencies: ["WeheCore", "WeheStore", "WeheStoreSQL"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WeheWebTests",
            dependencies: [
                "WeheCore", "WeheStore", "WeheWeb",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ArchitectureTests", dependencies: ["WeheTestKit"], swiftSettings: strict),
        .testTarget(
            name: "WeheCLITests", dependencies: ["WeheCore", "WeheWire", "WeheTestKit"], swiftSettings: strict),
    ]
)

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// Every route against bad input: unknown ids are 404, malformed parameters 400, an unavailable store 503, and
/// no answer carries a Swift error dump or unescaped input.
@Suite("bad input on every route")
struct BadInputSweepTests {
    /// The person and operator routes that read the store, with valid parameters.
    static let storeRoutes = [
        "/", "/tests/demo-user/1", "/api/history", "/api/tests/demo-user/1", "/operator/", "/operator/findings",
        "/operator/data.json", "/operator/data.csv?table=matrix", "/operator/findings.json",
        "/operator/findings.csv",
    ]

    /// Text that only a leaked error dump would contain.
    static func expectNoDump(_ text: String, _ route: String) {
        for marker in ["WeheStoreError(", "WeheWebError(", "Fatal error", "Swift/", ".swift:", "underlying:"] {
            #expect(!text.contains(marker), "\(route) leaks '\(marker)'")
        }
    }

    @Test("with the store closed every route that reads it answers 503, as a page or as JSON")
    func storeClosedEverywhere() async throws {
        let harness = try Harness(localizations: StoreLocalizationListing(store: WeheStoreFixture.store()))
        _ = try await seedPerson(harness.store, count: 2)
        await harness.store.close()
        try await harness.test { client in
            for route in Self.storeRoutes {
                let response = try await client.execute(uri: route, method: .get)
                #expect(response.status == .serviceUnavailable, "\(route)")
                Self.expectNoDump(response.text, route)
            }
        }
    }

    @Test("a WeHeY listing whose store is closed makes the operator page a 503, not a crash")
    func localizationStoreClosed() async throws {
        let runs = InMemoryResultStore()
        await runs.close()
        let harness = try Harness(localizations: StoreLocalizationListing(store: runs))
        try await harness.test { client in
            let page = try await client.execute(uri: "/operator/", method: .get)
            #expect(page.status == .serviceUnavailable)
            Self.expectNoDump(page.text, "/operator/")
        }
    }

    @Test("unknown ids are 404 and malformed ones 400 on pages, APIs and run routes")
    func unknownAndMalformedIDs() async throws {
        let harness = try Harness()
        _ = try await seedPerson(harness.store, count: 2)
        try await harness.test { client in
            let cases: [(String, HTTPResponse.Status)] = [
                ("/tests/demo-user/99", .notFound), ("/api/tests/demo-user/99", .notFound),
                ("/tests/nobody/1", .notFound), ("/tests/demo-user/-1", .badRequest),
                ("/tests/demo-user/1e3", .badRequest), ("/api/tests/demo-user/abc", .badRequest),
                ("/tests/%00/1", .badRequest), ("/run/no-such-run", .notFound),
                ("/run/no-such-run/chart", .notFound), ("/api/runs/no-such-run", .notFound),
                ("/?before=abc", .badRequest), ("/?before=-4", .badRequest),
                ("/operator/?from=2026-1-1", .badRequest), ("/operator/findings?to=tomorrow", .badRequest),
                ("/operator/findings.csv?from=2026-02-31", .badRequest),
                ("/operator/data.csv?table=%3Cscript%3E", .badRequest),
            ]
            for (route, status) in cases {
                let response = try await client.execute(uri: route, method: .get)
                #expect(response.status == status, "\(route)")
                #expect(!response.text.contains("<script>"), "\(route)")
                Self.expectNoDump(response.text, route)
            }
        }
    }

    @Test("markup in ids and parameters comes back escaped")
    func reflectedInputIsEscaped() async throws {
        let harness = try Harness()
        try await harness.test { client in
            for route in [
                "/tests/%3Cb%3Ex%3C%2Fb%3E/1", "/operator/?provider=%3Cimg%20src%3Dx%3E",
                "/operator/?app=%22%3E%3Cscript%3E",
            ] {
                let response = try await client.execute(uri: route, method: .get)
                #expect(!response.text.contains("<b>x</b>"), "\(route)")
                #expect(!response.text.contains("<img src=x>"), "\(route)")
                #expect(!response.text.contains("\"><script>"), "\(route)")
            }
        }
    }
}

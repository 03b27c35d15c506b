package import Foundation
package import WeheStore

/// Lists WeHeY runs straight from a `ResultStore` (`ResultStore.localizationRuns(from:to:limit:)`): what a server
/// passes as `DashboardConfiguration.localizations` when its runs live in the same store as its tests.
package struct StoreLocalizationListing: LocalizationListing {
    /// The store read.
    package let store: any ResultStore

    /// Lists the runs of `store`.
    package init(store: any ResultStore) {
        self.store = store
    }

    /// See `LocalizationListing.localizationRuns(from:to:limit:)`.
    package func localizationRuns(from: Date?, to: Date?, limit: Int) async throws -> [LocalizationRun] {
        try await store.localizationRuns(from: from, to: to, limit: limit)
    }
}

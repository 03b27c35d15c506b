package import Foundation
package import WeheStore

/// Lists WeHeY localization runs across users for the operator dashboard.
///
/// `StoreLocalizationListing` reads them from a `ResultStore`; other sources (a fixed list in the demo) can stand
/// in. Without one the dashboard shows no WeHeY section.
package protocol LocalizationListing: Sendable {
    /// Runs requested in `[from, to)` (either bound optional), newest first, at most `limit`.
    func localizationRuns(from: Date?, to: Date?, limit: Int) async throws -> [LocalizationRun]
}

package import Foundation
package import WeheStore

/// Lists WeHeY localization runs across users for the operator dashboard.
///
/// `ResultStore` only reads the runs of one user, so the server provides this (an SQL query over its database,
/// or a store method once `ResultStore` offers one). Without it the dashboard shows no WeHeY section.
package protocol LocalizationListing: Sendable {
    /// Runs requested in `[from, to)` (either bound optional), newest first, at most `limit`.
    func localizationRuns(from: Date?, to: Date?, limit: Int) async throws -> [LocalizationRun]
}

package import Foundation
package import Logging
package import WeheAnalysis
package import WeheCore
package import WeheStore

/// Everything a `Dashboard` needs: the store it reads, the optional collaborators of each page, and plain
/// settings with defaults.
package struct DashboardConfiguration: Sendable {
    /// Where the results come from.
    package var store: any ResultStore
    /// Whose history the person pages show (`wehe dashboard` passes the local user id). `nil`: the history page
    /// reports that no user is configured.
    package var userID: String?
    /// Starts tests from the browser; `nil` disables the "new test" page's form.
    package var launcher: (any TestLauncher)?
    /// Shows and changes the person's settings (`wehe dashboard`); `nil` hides the settings page.
    package var settingsEditor: (any SettingsEditor)?
    /// App names and categories, to show `YouTube` instead of `Youtube-02202024`.
    package var catalog: AppCatalog?
    /// Server figures for the operator health panel.
    package var health: (any ServerHealthSource)?
    /// WeHeY runs across users for the operator page; `nil` hides the section.
    package var localizations: (any LocalizationListing)?
    /// The current time (injected so tests control it).
    package var now: @Sendable () -> Date
    /// Measures durations (database response time).
    package var clock: any Clock<Duration>
    /// Time zone in which dates are shown and date filters are read.
    package var timeZone: TimeZone
    /// Language when neither `?lang=` nor `Accept-Language` selects one.
    package var defaultLanguage: Language
    /// Path prefix of the person pages (`""`: at the root).
    package var personPath: String
    /// Path prefix of the operator pages.
    package var operatorPath: String
    /// Tests per history page.
    package var historyPageSize: Int
    /// Days shown by the operator page when no range is given.
    package var operatorDefaultDays: Int
    /// Longest date range the operator page accepts, in days.
    package var maximumRangeDays: Int
    /// Host headers accepted by the person and operator pages (`127.0.0.1:8080`, `localhost:8080`; an entry
    /// without a port, `127.0.0.1`, accepts that host on any port); `nil` accepts any. Guards a dashboard against
    /// DNS rebinding.
    package var allowedHosts: Set<String>?
    /// When set, the operator pages answer only requests that carry this token: `Authorization: Bearer <token>`, or
    /// HTTP Basic authentication with the token as the password (any user name; browsers ask for it).
    package var operatorToken: String?
    /// Settings of the crowd-sourced analysis behind the findings page.
    package var crowd: CrowdConfiguration
    /// Seed of the crowd analysis's random subsets (the same data gives the same findings).
    package var crowdSeed: UInt64
    /// The findings page refuses selections with more tests than this (narrow the filters instead).
    package var crowdTestLimit: Int
    /// How long computed findings are reused, seconds.
    package var crowdCacheSeconds: Double
    /// WeHeY runs listed on the operator page.
    package var localizationLimit: Int
    /// Logger for request failures and runs.
    package var logger: Logger

    /// Creates a configuration with defaults for everything but the store.
    package init(
        store: any ResultStore,
        userID: String? = nil,
        launcher: (any TestLauncher)? = nil,
        catalog: AppCatalog? = nil,
        health: (any ServerHealthSource)? = nil,
        localizations: (any LocalizationListing)? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        clock: any Clock<Duration> = ContinuousClock(),
        timeZone: TimeZone = .gmt,
        defaultLanguage: Language = .english,
        personPath: String = "",
        operatorPath: String = "/operator",
        historyPageSize: Int = 50,
        operatorDefaultDays: Int = 30,
        maximumRangeDays: Int = 3_660,
        allowedHosts: Set<String>? = nil,
        crowd: CrowdConfiguration = CrowdConfiguration(),
        crowdSeed: UInt64 = 0x5745_4845,
        crowdTestLimit: Int = 250_000,
        crowdCacheSeconds: Double = 600,
        localizationLimit: Int = 50,
        operatorToken: String? = nil,
        logger: Logger = Logger(label: "wehe.web"),
        settingsEditor: (any SettingsEditor)? = nil
    ) {
        self.settingsEditor = settingsEditor
        self.store = store
        self.userID = userID
        self.launcher = launcher
        self.catalog = catalog
        self.health = health
        self.localizations = localizations
        self.now = now
        self.clock = clock
        self.timeZone = timeZone
        self.defaultLanguage = defaultLanguage
        self.personPath = personPath
        self.operatorPath = operatorPath
        self.historyPageSize = historyPageSize
        self.operatorDefaultDays = operatorDefaultDays
        self.maximumRangeDays = maximumRangeDays
        self.allowedHosts = allowedHosts
        self.crowd = crowd
        self.crowdSeed = crowdSeed
        self.crowdTestLimit = crowdTestLimit
        self.crowdCacheSeconds = crowdCacheSeconds
        self.localizationLimit = localizationLimit
        self.operatorToken = operatorToken
        self.logger = logger
    }

    /// Checks the settings.
    /// - Throws: `WeheWebError` `.invalidConfiguration` naming the offending value.
    package func validated() throws(WeheWebError) -> DashboardConfiguration {
        var copy = self
        copy.personPath = try Self.normalized(personPath, name: "person path")
        copy.operatorPath = try Self.normalized(operatorPath, name: "operator path")
        let positives = [
            ("history page size", historyPageSize), ("operator default days", operatorDefaultDays),
            ("maximum range days", maximumRangeDays), ("crowd test limit", crowdTestLimit),
            ("localization limit", localizationLimit),
        ]
        for (name, value) in positives where value < 1 {
            throw WeheWebError(.invalidConfiguration, "\(name) must be at least 1, got \(value)")
        }
        guard historyPageSize <= 1_000 else {
            throw WeheWebError(.invalidConfiguration, "history page size must be at most 1000")
        }
        guard crowdCacheSeconds.isFinite, crowdCacheSeconds >= 0 else {
            throw WeheWebError(.invalidConfiguration, "crowd cache seconds must be a non-negative number")
        }
        do {
            _ = try crowd.validated()
        } catch {
            throw WeheWebError(.invalidConfiguration, "crowd configuration: \(error.message)", underlying: error)
        }
        return copy
    }

    /// `""` or `/a/b` without a trailing slash.
    private static func normalized(_ path: String, name: String) throws(WeheWebError) -> String {
        var trimmed = path
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard trimmed.isEmpty || trimmed.hasPrefix("/") else {
            throw WeheWebError(.invalidConfiguration, "\(name) must start with '/', got '\(path)'")
        }
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "/-_."))
        guard trimmed.unicodeScalars.allSatisfy({ allowed.contains($0) }) else {
            throw WeheWebError(.invalidConfiguration, "\(name) may hold only letters, digits, '/', '-', '_', '.'")
        }
        return trimmed
    }
}

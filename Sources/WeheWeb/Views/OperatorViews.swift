/// An option of a filter `<select>`.
struct FilterOption {
    var value: String
    var label: String
    var selected: Bool
}

/// The filter form shared by the operator pages.
struct FilterForm {
    var action: String
    var from: String
    var to: String
    var providers: [FilterOption]
    var apps: [FilterOption]
    var lang: String
    var resetHref: String
}

/// A figure of the summary strip.
struct SummaryCard {
    var label: String
    var value: String
}

/// A row of a verdict table.
struct BreakdownRow {
    var name: String
    var tests: String
    var differentiation: String
    var inconclusive: String
    var none: String
    var blocked: String
    var notAnalysed: String
    var share: String
    var bar: String
}

/// A cell of the matrix.
struct MatrixCellView {
    var text: String
    var share: String
    var label: String
    var shade: Int
    var empty: Bool
}

/// A row of the matrix.
struct MatrixRow {
    var provider: String
    var cells: [MatrixCellView]
}

/// A WeHeY row.
struct LocalizationRow {
    var requested: String
    var app: String
    var servers: String
    var verdict: String
    var verdictStyle: String
    var pValue: String
    var loss: String
}

/// A health row.
struct HealthRow {
    var name: String
    var value: String
    var status: String
    var statusLabel: String
    var symbol: String
}

/// A row of the findings table.
struct FindingRow {
    var provider: String
    var app: String
    var tests: String
    var positive: String
    var rates: String
    var hasRates: Bool
    var truePositives: String
    var note: String
}

/// A findings table with its time and downloads.
struct FindingsTable {
    var rows: [FindingRow]
    var isEmpty: Bool
    var computedAt: String
    var tooMany: String?
    var csvHref: String
    var jsonHref: String
}

/// The download links of a section.
struct Downloads {
    var csv: String
}

/// The operator overview page.
struct OperatorContent {
    var filter: FilterForm
    var cards: [SummaryCard]
    var dayChart: String
    var dayDownloads: Downloads
    var perApp: [BreakdownRow]
    var appDownloads: Downloads
    var perProvider: [BreakdownRow]
    var providerDownloads: Downloads
    var matrixApps: [String]
    var matrixRows: [MatrixRow]
    var matrixEmpty: Bool
    var matrixDownloads: Downloads
    var findings: FindingsTable?
    var findingsHref: String
    var localizationsAvailable: Bool
    var localizations: [LocalizationRow]
    var localizationsEmpty: Bool
    var weheyDownloads: Downloads
    var healthStatus: String
    var healthLabel: String
    var healthSymbol: String
    var health: [HealthRow]
    var healthStarted: String?
    var healthDownloads: Downloads
    /// The figures that are not OK, worst first.
    var attention: [HealthRow]
    var hasAttention: Bool
    var attentionSummary: String
    var refreshNote: String
    var jsonHref: String
}

/// The findings page.
struct FindingsContent {
    var filter: FilterForm
    var table: FindingsTable
}

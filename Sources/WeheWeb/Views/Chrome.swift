/// The parts of every page around its content: language, title, navigation, stylesheet, language switch.
struct Chrome {
    struct Link {
        var href: String
        var label: String
        var current: Bool
    }

    struct LanguageLink {
        var href: String
        var name: String
        var code: String
        var current: Bool
    }

    var lang: String
    var title: String
    var staticPath: String
    var nav: [Link]
    var languages: [LanguageLink]
    /// Seconds after which the page reloads when scripts are off (run pages), if any.
    var refreshSeconds: Int?
    /// Whether the page loads the run script.
    var runScript: Bool
    /// Seconds after which the page reloads itself, scripts or not (operator pages stay current), if any.
    var autoRefreshSeconds: Int?
    /// Whether the page uses the wider layout (operator tables).
    var wide: Bool

    /// Which navigation entry is current.
    enum Section {
        case history, run, timeline, operatorOverview, findings, dpi, none
    }

    init(
        info: RequestInfo, title: String, basePath: String, operatorLinks: Bool, section: Section,
        refreshSeconds: Int? = nil, runScript: Bool = false, autoRefreshSeconds: Int? = nil
    ) {
        self.lang = info.language.rawValue
        self.title = title
        self.staticPath = basePath + "/static"
        let strings = info.strings
        let suffix = "?lang=" + info.language.rawValue
        if operatorLinks {
            nav = [
                Link(
                    href: basePath + "/" + suffix, label: strings["nav_operator"], current: section == .operatorOverview
                ),
                Link(
                    href: basePath + "/findings" + suffix, label: strings["nav_findings"], current: section == .findings
                ),
                Link(href: basePath + "/dpi" + suffix, label: strings["nav_dpi"], current: section == .dpi),
                Link(
                    href: basePath + "/timeline" + suffix, label: strings["nav_timeline"],
                    current: section == .timeline),
            ]
        } else {
            nav = [
                Link(href: basePath + "/" + suffix, label: strings["nav_history"], current: section == .history),
                Link(href: basePath + "/run" + suffix, label: strings["nav_run"], current: section == .run),
                Link(
                    href: basePath + "/timeline" + suffix, label: strings["nav_timeline"],
                    current: section == .timeline),
            ]
        }
        languages = Language.allCases.map {
            LanguageLink(
                href: info.url(language: $0), name: $0.nativeName, code: $0.rawValue, current: $0 == info.language)
        }
        self.refreshSeconds = refreshSeconds
        self.runScript = runScript
        self.autoRefreshSeconds = autoRefreshSeconds
        self.wide = operatorLinks
        if !operatorLinks && info.hasSettings {
            let href = basePath + "/settings"
            nav.append(Link(href: href + suffix, label: strings["nav_settings"], current: info.path == href))
        }
    }
}

/// The object a page template renders: chrome, the words of the page's language, and the page's own content.
struct PageContext<Content> {
    var chrome: Chrome
    var t: [String: String]
    var page: Content
}

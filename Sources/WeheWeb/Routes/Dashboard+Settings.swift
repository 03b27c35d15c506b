import Foundation
import HTTPTypes
import Hummingbird

/// One row of the settings form.
struct SettingRow {
    var key: String
    /// The value in the input (what was submitted, after a refused change).
    var value: String
    /// The value the page showed, sent back so that only the keys the person edited are written.
    var shown: String
    var help: String
}

/// The settings page.
struct SettingsContent {
    var available: Bool
    var actionHref: String
    var lang: String
    var token: String
    var fields: [SettingRow]
    /// "Saved: p-threshold" after a change; "Nothing changed." after a form without edits.
    var saved: String?
    /// Why a change was refused (nothing was written then).
    var problem: String?
}

extension Dashboard {
    /// The settings routes of the person pages: `GET /settings` shows the form, `POST /settings` changes the
    /// edited keys.
    func addSettingsRoutes<Router: RouterMethods>(to router: Router) {
        let base = configuration.personPath
        router.get(RouterPath(base + "/settings")) { request, _ in
            await page(request, operatorPage: false) { info in
                try await settingsHTML(info, saved: info.value("saved"), problem: nil, submitted: [:])
            }
        }
        router.post(RouterPath(base + "/settings")) { request, _ in
            await changeSettings(request)
        }
    }

    /// The form: every setting with its value and what it accepts; `submitted` keeps the values of a refused form.
    func settingsHTML(
        _ info: RequestInfo, saved: String?, problem: String?, submitted: [String: String]
    ) async throws -> String {
        let strings = info.strings
        var rows: [SettingRow] = []
        if let editor = configuration.settingsEditor {
            let fields: [SettingField]
            do {
                fields = try await editor.fields()
            } catch {
                throw WeheWebError(.launcherUnavailable, strings["settings_unreadable"], underlying: error)
            }
            rows = fields.map {
                SettingRow(key: $0.key, value: submitted[$0.key] ?? $0.value, shown: $0.value, help: $0.help)
            }
        }
        let savedText: String? =
            switch saved {
            case nil: nil
            case "": strings["settings_unchanged"]
            case let keys?: strings.format("settings_saved", ["keys": keys])
            }
        let content = SettingsContent(
            available: configuration.settingsEditor != nil, actionHref: configuration.personPath + "/settings",
            lang: info.language.rawValue, token: configuration.settingsEditor?.formToken ?? "", fields: rows,
            saved: savedText, problem: problem)
        let context = PageContext(
            chrome: Chrome(
                info: info, title: strings["settings_title"], basePath: configuration.personPath, operatorLinks: false,
                section: .none),
            t: strings.table, page: content)
        return try renderer.render("settings", context)
    }

    /// `POST /settings`: from this dashboard's own page only (host, `Origin` and the form's token checked), writes
    /// the keys whose submitted value differs from the value the page showed, all at once or none; then back to the
    /// page (303) saying what was saved, or the page again with the refusal and the submitted values (400).
    func changeSettings(_ request: Request) async -> Response {
        let info = RequestInfo(request: request, configuration: configuration)
        do {
            guard let editor = configuration.settingsEditor else {
                try checkHost(request, operatorPage: false)
                throw WeheWebError(.launcherUnavailable, info.strings["settings_unavailable"])
            }
            let form = try await postedForm(request)
            func last(_ name: String) -> String? { form.last { $0.name == name }?.value }
            guard let token = last("token"), Self.sameSecret(token, editor.formToken) else {
                throw WeheWebError(.forbidden, info.strings["settings_forbidden"])
            }
            let language = last("lang").flatMap { Language.match($0) } ?? info.language
            let changes = Self.settingChanges(form)
            if !changes.isEmpty {
                do {
                    try await editor.apply(changes)
                } catch {
                    let submitted = Dictionary(
                        form.compactMap { field in
                            field.name.hasPrefix("value.") ? (String(field.name.dropFirst(6)), field.value) : nil
                        }, uniquingKeysWith: { $1 })
                    let html = try await settingsHTML(
                        info, saved: nil, problem: String(describing: error), submitted: submitted)
                    return Response(
                        status: .badRequest, headers: Self.baseHeaders(contentType: "text/html; charset=utf-8"),
                        body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
                }
            }
            let location =
                configuration.personPath + "/settings?"
                + RequestInfo.encodeQuery([
                    ("saved", changes.map(\.key).joined(separator: ", ")), ("lang", language.rawValue),
                ])
            var headers = Self.baseHeaders(contentType: "text/plain; charset=utf-8")
            headers[.location] = location
            return Response(
                status: .seeOther, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: location)))
        } catch {
            return errorPage(translate(error, request: request), info: info, operatorPage: false)
        }
    }

    /// The keys the person edited: `value.<key>` differs from `shown.<key>` (the value the page showed). A key
    /// the form did not edit is not written, so a change another command made meanwhile is kept.
    static func settingChanges(_ form: [(name: String, value: String)]) -> [(key: String, value: String)] {
        var shown: [String: String] = [:]
        for field in form where field.name.hasPrefix("shown.") { shown[String(field.name.dropFirst(6))] = field.value }
        var changes: [(key: String, value: String)] = []
        for field in form where field.name.hasPrefix("value.") {
            let key = String(field.name.dropFirst(6))
            guard !key.isEmpty, shown[key] != field.value, !changes.contains(where: { $0.key == key }) else { continue }
            changes.append((key, field.value))
        }
        return changes
    }

    /// Compares two secrets in time independent of where they differ.
    static func sameSecret(_ left: String, _ right: String) -> Bool {
        let a = Array(left.utf8)
        let b = Array(right.utf8)
        guard a.count == b.count, !b.isEmpty else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

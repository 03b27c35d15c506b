import Foundation
import Mustache

/// The dashboard's templates and static files, loaded once from the target's resources.
struct Renderer: Sendable {
    /// A static file: its bytes and content type.
    struct Asset: Sendable {
        var bytes: [UInt8]
        var contentType: String
    }

    let library: MustacheLibrary
    let assets: [String: Asset]

    /// Template names every page needs; a missing one fails `init`.
    static let requiredTemplates = [
        "head", "foot", "filters", "findings-table", "history", "test", "run", "run-progress", "operator", "findings",
        "error", "dpi-section", "dpi-rules",
    ]

    /// Loads the templates (`Resources/templates/*.mustache`) and static files (`Resources/static/*`).
    /// - Throws: `WeheWebError` `.resourceMissing` when a resource is absent or a template does not parse.
    init() throws(WeheWebError) {
        guard let root = Bundle.module.url(forResource: "Resources", withExtension: nil) else {
            throw WeheWebError(.resourceMissing, "the dashboard's resource bundle is missing")
        }
        var library = MustacheLibrary()
        let templates = root.appendingPathComponent("templates")
        for name in Self.requiredTemplates {
            let url = templates.appendingPathComponent(name + ".mustache")
            do {
                let text = try String(contentsOf: url, encoding: .utf8)
                try library.register(text, named: name)
            } catch {
                throw WeheWebError(.resourceMissing, "template \(name) could not be loaded: \(error)")
            }
        }
        var assets: [String: Asset] = [:]
        let types = ["css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"]
        let directory = root.appendingPathComponent("static")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names {
            let ext = (name as NSString).pathExtension
            guard let type = types[ext],
                let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
            else { continue }
            assets[name] = Asset(bytes: Array(data), contentType: type)
        }
        guard assets["dashboard.css"] != nil, assets["run.js"] != nil else {
            throw WeheWebError(.resourceMissing, "the dashboard's stylesheet or script is missing")
        }
        self.library = library
        self.assets = assets
    }

    /// Renders a template with a context object.
    func render(_ template: String, _ context: Any) throws(WeheWebError) -> String {
        guard let text = library.render(context, withTemplate: template) else {
            throw WeheWebError(.resourceMissing, "template \(template) is not loaded")
        }
        return text
    }
}

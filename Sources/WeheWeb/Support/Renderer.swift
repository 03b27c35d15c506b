import Foundation
import Mustache

/// The dashboard's templates and static files, loaded once from the resources embedded in the binary.
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
        "error", "dpi-section", "dpi-rules", "timeline", "timeline-print", "timeline-body", "settings",
    ]

    /// Loads the templates (`Resources/templates/*.mustache`) and static files (`Resources/static/*`), which the
    /// build embeds in the binary (`EmbeddedResources`), so a copied or installed binary renders its pages.
    /// - Throws: `WeheWebError` `.resourceMissing` when a resource is absent or a template does not parse.
    init() throws(WeheWebError) {
        try self.init(files: EmbeddedResources.files)
    }

    /// Loads the templates and static files from `files` (path relative to `Resources/` to bytes).
    init(files: [String: [UInt8]]) throws(WeheWebError) {
        var library = MustacheLibrary()
        for name in Self.requiredTemplates {
            guard let bytes = files["templates/" + name + ".mustache"] else {
                throw WeheWebError(.resourceMissing, "template \(name) is missing")
            }
            do {
                try library.register(String(decoding: bytes, as: UTF8.self), named: name)
            } catch {
                throw WeheWebError(.resourceMissing, "template \(name) could not be loaded: \(error)")
            }
        }
        var assets: [String: Asset] = [:]
        let types = ["css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"]
        for (path, bytes) in files where path.hasPrefix("static/") {
            let name = String(path.dropFirst("static/".count))
            guard let type = types[(name as NSString).pathExtension], !name.contains("/") else { continue }
            assets[name] = Asset(bytes: bytes, contentType: type)
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

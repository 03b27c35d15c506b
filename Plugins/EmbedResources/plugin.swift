// EmbedResources: a build tool plugin that embeds a target's resource folder into its binary (see the tool,
// Plugins/EmbedResourcesTool). The folder is the first of `Resources` and `DemoReplays` that the target has; the
// generated type is `EmbeddedResources`.
import Foundation
import PackagePlugin

@main
struct EmbedResources: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let root = target.directoryURL
        guard
            let folder = ["Resources", "DemoReplays"].map({ root.appendingPathComponent($0) })
                .first(where: { FileManager.default.fileExists(atPath: $0.path) })
        else { return [] }
        var files: [URL] = []
        if let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) {
            for case let url as URL in walker
            where (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
                files.append(url)
            }
        }
        files.sort { $0.path < $1.path }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedResources.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) files of \(target.name)/\(folder.lastPathComponent)",
                executable: try context.tool(named: "embed-resources").url,
                arguments: [output.path, "EmbeddedResources", folder.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}

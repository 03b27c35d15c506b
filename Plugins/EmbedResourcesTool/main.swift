// embed-resources: writes a Swift file that holds every file of a resource folder, so that a binary copied anywhere
// (a package, a tarball, a container) carries its templates and data instead of looking for a bundle beside itself.
//
//   embed-resources <output.swift> <type name> <folder> <file>...
//
// Each file becomes one base64 string keyed by its path relative to <folder>; the generated type decodes on first
// use. Base64 keeps the literal free of escaping questions and compiles fast even for tens of kilobytes.
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: embed-resources <output.swift> <type> <folder> <file>...\n".utf8))
    exit(64)
}
let output = URL(fileURLWithPath: arguments[1])
let typeName = arguments[2]
let folder = URL(fileURLWithPath: arguments[3]).standardizedFileURL.path
let files = arguments.dropFirst(4).map { URL(fileURLWithPath: $0).standardizedFileURL.path }.sorted()

var text = """
    // Generated at build time by the EmbedResources plugin from \(URL(fileURLWithPath: folder).lastPathComponent)/.
    // Do not edit: change the files in that folder instead.
    import Foundation

    /// The files of the target's resource folder, embedded in the binary: relative path to bytes.
    enum \(typeName) {
        /// Every embedded file's bytes by its path relative to the resource folder (for example `templates/head.mustache`).
        static let files: [String: [UInt8]] = {
            var files: [String: [UInt8]] = [:]
            for (path, base64) in encoded {
                if let data = Data(base64Encoded: base64) { files[path] = [UInt8](data) }
            }
            return files
        }()

        private static let encoded: [(String, String)] = [

    """
for path in files {
    guard path.hasPrefix(folder + "/") else { continue }
    let relative = String(path.dropFirst(folder.count + 1))
    guard let data = FileManager.default.contents(atPath: path) else {
        FileHandle.standardError.write(Data("embed-resources: cannot read \(path)\n".utf8))
        exit(1)
    }
    let escaped = relative.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    text += "        (\"\(escaped)\", \"\(data.base64EncodedString())\"),\n"
}
text += "    ]\n}\n"
do {
    try text.write(to: output, atomically: true, encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("embed-resources: cannot write \(output.path): \(error)\n".utf8))
    exit(1)
}

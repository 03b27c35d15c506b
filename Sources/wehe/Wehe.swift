import ArgumentParser

@main
struct Wehe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "wehe", abstract: "Wehe for Swift")
}

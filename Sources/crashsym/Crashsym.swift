import ArgumentParser

/// The crashsym command-line tool.
@main
struct Crashsym: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crashsym",
        abstract: "Crash symbolication and debug-symbol upload for native code on Linux."
    )
}

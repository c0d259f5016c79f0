import Foundation

/// The real cores `scripts/build-core-fixtures` makes (a few small programs crashed and dumped),
/// built once per test run into a temporary directory, for every target that reads them.
public enum CoreFixtures {
    /// The directory of the cores and their programs; nil when the script failed.
    public static let directory: String? = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let directory = NSTemporaryDirectory() + "crashsym-corewalk-" + UUID().uuidString
        guard let run = try? Tool.run("/bin/bash", [url.path + "/scripts/build-core-fixtures", directory]), run.status == 0 else { return nil }
        return directory
    }()
}

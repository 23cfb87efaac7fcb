// What Foundation has on Apple platforms and swift-corelibs-foundation lacks, used by our
// iOS files. Imported implicitly by scripts/ios-typecheck (as FoundationNetworking is), so
// the files keep their plain `import Foundation`.
import Foundation

extension FileManager {
    /// developer.apple.com/documentation/foundation/filemanager/containerurl(forsecurityapplicationgroupidentifier:)
    /// — `func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL?`
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? { fatalError("stand-in") }
}

import Foundation

/// `--ca-file` *adds* a CA to the ones the system trusts (DESIGN §4: "extra CA bundle").
/// libcurl's CAINFO replaces the default bundle, so the two are concatenated once at
/// startup into a private file.
enum CABundle {
    static let systemBundles = [
        "/etc/ssl/certs/ca-certificates.crt",   // Debian, Ubuntu
        "/etc/pki/tls/certs/ca-bundle.crt",     // Fedora, RHEL
        "/etc/ssl/cert.pem",                    // macOS, Alpine
    ]

    /// The path of a bundle holding the system CAs followed by `extra`.
    static func combined(with extra: String) throws -> String {
        guard let added = FileManager.default.contents(atPath: extra) else {
            throw ServerStartError("--ca-file \(extra) cannot be read")
        }
        var bundle = Data()
        if let system = systemBundles.lazy.compactMap({ FileManager.default.contents(atPath: $0) }).first {
            bundle.append(system)
            bundle.append(Data("\n".utf8))
        }
        bundle.append(added)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-ca-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("bundle.pem").path
        guard FileManager.default.createFile(atPath: path, contents: bundle, attributes: [.posixPermissions: 0o644]) else {
            throw ServerStartError("cannot write the combined CA bundle to \(path)")
        }
        return path
    }
}

import Foundation

/// `--ca-file` *adds* a CA to the ones the system trusts (docs/contract.md §5: "extra CA bundle").
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
        // A fresh private directory (mkdtemp, mode 0700): a predictable path in /tmp could
        // be prepared by another local user with a CA of their own.
        var template = Array((FileManager.default.temporaryDirectory.path + "/portaria-ca-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkdtemp($0) != nil } ?? false }
        guard made else { throw ServerStartError("cannot create a private directory for the CA bundle") }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/bundle.pem"
        guard FileManager.default.createFile(atPath: path, contents: bundle, attributes: [.posixPermissions: 0o600]) else {
            throw ServerStartError("cannot write the combined CA bundle to \(path)")
        }
        return path
    }
}

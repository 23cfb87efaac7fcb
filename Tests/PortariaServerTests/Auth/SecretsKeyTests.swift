import Foundation
@testable import PortariaServer
import Testing

@Suite("Secrets key (AES-256-GCM wrapping)")
struct SecretsKeyTests {
    static let key = try! SecretsKey(bytes: (0..<32).map { UInt8($0) })

    @Test("a wrapped secret opens with the same key and place only, and not after tampering")
    func sealAndOpen() throws {
        let secret = Crypto.randomBytes(32)
        let sealed = Self.key.seal(secret, context: "signing_keys:k1")
        #expect(sealed.hasPrefix("enc:v1:"))
        #expect(try Self.key.open(sealed, context: "signing_keys:k1") == secret)
        // Fresh nonce each time.
        #expect(Self.key.seal(secret, context: "signing_keys:k1") != sealed)
        #expect(throws: SecretsError.self) { try Self.key.open(sealed, context: "signing_keys:k2") }
        let other = try SecretsKey(bytes: [UInt8](repeating: 7, count: 32))
        #expect(throws: SecretsError.self) { try other.open(sealed, context: "signing_keys:k1") }
        var bytes = Array(sealed.utf8)
        bytes[bytes.count - 3] = bytes[bytes.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: SecretsError.self) { try Self.key.open(String(decoding: bytes, as: UTF8.self), context: "signing_keys:k1") }
        #expect(throws: SecretsError.self) { try Self.key.open("enc:v1:AAAA", context: "signing_keys:k1") }
    }

    /// Computed once with Python's `cryptography` (`AESGCM(bytes(range(32)))`, nonce
    /// bytes 100…111): the format databases already hold must keep opening whatever
    /// OpenSSL calls the code makes.
    @Test("a value wrapped by an independent AES-256-GCM implementation opens, and only for its place")
    func knownAnswer() throws {
        let sealed = "enc:v1:ZGVmZ2hpamtsbW5vPHO7Rja9Br5OBy-YvxdG3XHwJmjyGJYBh73DJpyChGk83m9SFRrmJEz9yPIfEnaL"
        #expect(try Self.key.open(sealed, context: "service_state:otp_pepper") == Array("the OTP pepper, 32 bytes long!!!".utf8))
        #expect(throws: SecretsError.self) { try Self.key.open(sealed, context: "signing_keys:k1") }
    }

    @Test("key files: 32 raw bytes, 64 hex digits or base64; anything else is refused")
    func keyFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let raw = (0..<32).map { UInt8($0) }
        let forms: [Data] = [Data(raw), Data((raw.map { String(format: "%02x", $0) }.joined() + "\n").utf8),
                             Data((Data(raw).base64EncodedString() + "\n").utf8)]
        for (index, form) in forms.enumerated() {
            let path = directory.appendingPathComponent("k\(index)").path
            try form.write(to: URL(fileURLWithPath: path))
            let loaded = try SecretsKey.load(path: path)
            #expect(try loaded.open(Self.key.seal([1, 2, 3], context: "c"), context: "c") == [1, 2, 3], "form \(index)")
        }
        // 64 fullwidth hex digits: hex to `Character.isHexDigit`, refused rather than a trap.
        let fullwidth = Data(String(repeating: "ａ", count: 64).utf8)
        for bad in [Data("short".utf8), Data(repeating: 1, count: 31), Data(repeating: 1, count: 33), fullwidth] {
            let path = directory.appendingPathComponent("bad").path
            try bad.write(to: URL(fileURLWithPath: path))
            #expect(throws: SecretsError.self) { try SecretsKey.load(path: path) }
        }
        #expect(throws: SecretsError.self) { try SecretsKey.load(path: directory.appendingPathComponent("missing").path) }
    }

    @Test("loadOrCreate wraps plaintext secrets with a key, keeps the same values, and refuses a wrapped database without it", arguments: VisitsFixture.backends)
    func wrapsExistingSecrets(backend: Backend) async throws {
        try await StorageFixture.with(backend) { fixture in
            try await Migrator().migrate(fixture.database)
            let plain = try await ServiceSecrets.loadOrCreate(fixture.database)
            #expect(plain.plaintext && plain.wrappedAtStart == 0)
            let wrapped = try await ServiceSecrets.loadOrCreate(fixture.database, key: Self.key)
            #expect(!wrapped.plaintext && wrapped.wrappedAtStart == 2)
            #expect(wrapped.otpPepper == plain.otpPepper)
            #expect(wrapped.jwt.currentKeyID == plain.jwt.currentKeyID)
            let again = try await ServiceSecrets.loadOrCreate(fixture.database, key: Self.key)
            #expect(again.wrappedAtStart == 0 && again.otpPepper == plain.otpPepper)
            await #expect(throws: SecretsError.self) { _ = try await ServiceSecrets.loadOrCreate(fixture.database) }
            await #expect(throws: SecretsError.self) { _ = try await ServiceSecrets.rotate(fixture.database) }
            _ = try await ServiceSecrets.rotate(fixture.database, key: Self.key)
            #expect(try await ServiceSecrets.loadOrCreate(fixture.database, key: Self.key).jwt.currentKeyID != plain.jwt.currentKeyID)
        }
    }
}

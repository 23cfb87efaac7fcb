import COpenSSL
import Foundation
import PortariaCore

/// The key that wraps the secrets the database keeps (JWT signing keys, the OTP pepper):
/// AES-256-GCM with OpenSSL's EVP interface, the key itself kept outside the database
/// (`--secrets-key-file` / `PORTARIA_SECRETS_KEY_FILE`), so a copied database file or
/// backup does not hand out the means to forge sessions.
///
/// A wrapped value is `enc:v1:` + base64url(nonce ‖ ciphertext ‖ tag), with a fresh 96-bit
/// nonce per value and the value's place (`signing_keys:<id>`, `service_state:otp_pepper`)
/// as additional data, so a wrapped value moved to another row does not open.
public struct SecretsKey: Sendable {
    static let prefix = "enc:v1:"
    let bytes: [UInt8]

    public init(bytes: [UInt8]) throws {
        guard bytes.count == 32 else { throw SecretsError("a secrets key must be 32 bytes (256 bits), got \(bytes.count)") }
        self.bytes = bytes
    }

    /// Reads a key file: 32 raw bytes, or one line of 64 hex digits or base64 of 32 bytes
    /// (`openssl rand -base64 32`).
    public static func load(path: String) throws -> SecretsKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SecretsError("--secrets-key-file: cannot read \(path)")
        }
        let raw = Array(data)
        if raw.count == 32 { return try SecretsKey(bytes: raw) }
        let text = String(decoding: raw, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.count == 64, text.allSatisfy(\.isASCIIHexDigit) {
            var bytes: [UInt8] = []
            var index = text.startIndex
            while index < text.endIndex {
                let next = text.index(index, offsetBy: 2)
                bytes.append(UInt8(text[index..<next], radix: 16)!)
                index = next
            }
            return try SecretsKey(bytes: bytes)
        }
        let standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let padded = standard + String(repeating: "=", count: (4 - standard.count % 4) % 4)
        if let decoded = Data(base64Encoded: padded), decoded.count == 32 { return try SecretsKey(bytes: Array(decoded)) }
        throw SecretsError("--secrets-key-file: \(path) must hold 32 bytes: raw, 64 hex digits or base64 (openssl rand -base64 32)")
    }

    static func isWrapped(_ text: String) -> Bool { text.hasPrefix(prefix) }

    /// Wraps `plaintext` for the place named `context`.
    func seal(_ plaintext: [UInt8], context: String) -> String {
        let nonce = Crypto.randomBytes(12)
        var tag = [UInt8](repeating: 0, count: 16)
        // Encryption with a valid key cannot fail short of a broken libcrypto.
        guard let ciphertext = aesGCM(encrypt: true, plaintext, nonce: nonce, aad: Array(context.utf8), tag: &tag) else {
            fatalError("OpenSSL AES-256-GCM encryption failed")
        }
        return Self.prefix + Base64URL.encode(nonce + ciphertext + tag)
    }

    /// Opens a value `seal` made for `context`; throws when the key or the place is wrong
    /// or the value was altered.
    func open(_ text: String, context: String) throws -> [UInt8] {
        guard Self.isWrapped(text), let sealed = Base64URL.decode(String(text.dropFirst(Self.prefix.count))),
              sealed.count >= 12 + 16 else {
            throw SecretsError("a wrapped secret (\(context)) is malformed")
        }
        var tag = Array(sealed.suffix(16))
        guard let plaintext = aesGCM(encrypt: false, Array(sealed.dropFirst(12).dropLast(16)), nonce: Array(sealed.prefix(12)),
                                     aad: Array(context.utf8), tag: &tag) else {
            throw SecretsError("a wrapped secret (\(context)) does not open with this --secrets-key-file (wrong key?)")
        }
        return plaintext
    }

    /// AES-256-GCM through OpenSSL's direction-neutral `EVP_Cipher*` calls: encrypting
    /// fills `tag`; decrypting checks the data against `tag` and answers nil when it does
    /// not authenticate (wrong key, wrong `aad`, altered bytes).
    private func aesGCM(encrypt: Bool, _ input: [UInt8], nonce: [UInt8], aad: [UInt8], tag: inout [UInt8]) -> [UInt8]? {
        guard let cipher = EVP_CIPHER_CTX_new() else { fatalError("OpenSSL: no cipher context") }
        defer { EVP_CIPHER_CTX_free(cipher) }
        let direction: Int32 = encrypt ? 1 : 0
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var length: Int32 = 0
        guard EVP_CipherInit_ex(cipher, EVP_aes_256_gcm(), nil, nil, nil, direction) == 1,
              EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_IVLEN, 12, nil) == 1,
              EVP_CipherInit_ex(cipher, nil, nil, bytes, nonce, direction) == 1,
              EVP_CipherUpdate(cipher, nil, &length, aad, Int32(aad.count)) == 1,
              EVP_CipherUpdate(cipher, &output, &length, input, Int32(input.count)) == 1 else { return nil }
        var total = Int(length)
        // The expected tag goes in before the final step, which checks it.
        if !encrypt, EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_TAG, 16, &tag) != 1 { return nil }
        guard output.withUnsafeMutableBufferPointer({ EVP_CipherFinal_ex(cipher, $0.baseAddress! + total, &length) }) == 1 else {
            return nil
        }
        total += Int(length)
        if encrypt, EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_GET_TAG, 16, &tag) != 1 { return nil }
        return Array(output.prefix(total))
    }
}

/// A problem with the wrapped secrets, worth one line at startup.
public struct SecretsError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

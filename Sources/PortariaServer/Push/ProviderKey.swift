import COpenSSL
import Foundation

/// A private key for provider JWTs: the APNs `.p8` (EC P-256, ES256) or the FCM service
/// account's RSA key (RS256). Owns its `EVP_PKEY` and frees it in `deinit`.
public final class ProviderKey: @unchecked Sendable {
    // EVP_PKEY is read-only after loading; OpenSSL 3 allows concurrent signing with one key
    // as long as each signature uses its own EVP_MD_CTX, which `sign` does.
    private let key: OpaquePointer

    public enum Algorithm: String, Sendable { case es256 = "ES256", rs256 = "RS256" }
    public let algorithm: Algorithm

    public struct KeyError: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description + Self.openSSLReason() }
        static func openSSLReason() -> String {
            let code = ERR_get_error()
            // One reason is enough; the rest of this thread's queue would otherwise be
            // reported as the reason of some later, unrelated failure.
            defer { ERR_clear_error() }
            guard code != 0 else { return "" }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            return " (" + String(decoding: text, as: UTF8.self) + ")"
        }
    }

    /// An owned `EVP_PKEY` from PEM private key text, or nil (also used by `P256Key`).
    static func readPrivateKey(pem: String) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        // Errors an earlier call left on this thread are not this key's.
        ERR_clear_error()
        return bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
    }

    /// Loads a PEM private key (PKCS#8 `BEGIN PRIVATE KEY`, as Apple's .p8 and Google's JSON hold).
    public init(pem: String) throws {
        guard let loaded = Self.readPrivateKey(pem: pem) else { throw KeyError("not a PEM private key") }
        // The key is checked before `self` owns it: an initializer that throws before every
        // stored property is set never runs `deinit`, so a refused key (P-384, short RSA,
        // Ed25519) stored first would never be freed.
        do {
            algorithm = try Self.algorithm(of: loaded)
        } catch {
            EVP_PKEY_free(loaded)
            throw error
        }
        key = loaded
    }

    /// What a loaded key signs with, or why it cannot serve as a provider key.
    private static func algorithm(of key: OpaquePointer) throws -> Algorithm {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_EC:
            // APNs accepts only P-256 keys (ES256).
            guard EVP_PKEY_get_bits(key) == 256 else { throw KeyError("EC key is not P-256") }
            return .es256
        case EVP_PKEY_RSA:
            guard EVP_PKEY_get_bits(key) >= 2048 else { throw KeyError("RSA key shorter than 2048 bits") }
            return .rs256
        default:
            throw KeyError("unsupported key type (need EC P-256 or RSA)")
        }
    }

    public convenience init(pemFile path: String) throws {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw KeyError("cannot read key file \(path)")
        }
        try self.init(pem: text)
    }

    deinit { EVP_PKEY_free(key) }

    /// Signs with SHA-256. ES256 signatures come back as JOSE wants them (RFC 7518 §3.4):
    /// raw R‖S, 32 bytes each — OpenSSL produces DER, which APNs rejects.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw KeyError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        try check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key), "EVP_DigestSignInit")
        var length = 0
        try message.withUnsafeBufferPointer { input in
            try check(EVP_DigestSign(context, nil, &length, input.baseAddress, input.count), "EVP_DigestSign (size)")
        }
        var signature = [UInt8](repeating: 0, count: length)
        try message.withUnsafeBufferPointer { input in
            try check(EVP_DigestSign(context, &signature, &length, input.baseAddress, input.count), "EVP_DigestSign")
        }
        signature.removeSubrange(length...)
        return algorithm == .es256 ? try Self.rawECDSA(der: signature) : signature
    }

    /// DER `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` → R‖S, each left-padded to 32 bytes.
    static func rawECDSA(der: [UInt8]) throws -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw KeyError("ECDSA signature is not DER") }
        defer { ECDSA_SIG_free(parsed) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(parsed, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { buffer -> (Int32, Int32) in
            (BN_bn2binpad(r, buffer.baseAddress, 32), BN_bn2binpad(s, buffer.baseAddress! + 32, 32))
        }
        guard written == (32, 32) else { throw KeyError("ECDSA component longer than 32 bytes") }
        return raw
    }

    private func check(_ result: Int32, _ what: String) throws {
        guard result == 1 else { throw KeyError("\(what) failed") }
    }

    /// `header.claims.signature`, base64url, with `alg` set from the key.
    public func jwt(header: [String: JSONValueLike], claims: [String: JSONValueLike]) throws -> String {
        var header = header
        header["alg"] = .string(algorithm.rawValue)
        let signingInput = Base64URL.encode(Array(JSONValueLike.object(header).json.utf8)) + "."
            + Base64URL.encode(Array(JSONValueLike.object(claims).json.utf8))
        return signingInput + "." + Base64URL.encode(try sign(Array(signingInput.utf8)))
    }
}

/// The little JSON a JWT header or claim set needs, serialised with sorted keys.
public enum JSONValueLike: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case object([String: JSONValueLike])

    var json: String {
        switch self {
        case .string(let text):
            let data = (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8)
            return String(decoding: data, as: UTF8.self)
        case .int(let value): return String(value)
        case .object(let object):
            return "{" + object.keys.sorted().map { JSONValueLike.string($0).json + ":" + object[$0]!.json }.joined(separator: ",") + "}"
        }
    }
}

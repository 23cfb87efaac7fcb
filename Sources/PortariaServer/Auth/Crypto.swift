import COpenSSL
import Foundation

/// The few primitives auth needs, all from OpenSSL's libcrypto.
public enum Crypto {
    /// Tells libcrypto not to register its `atexit` cleanup; call it first thing in `main`,
    /// before any other OpenSSL use (libcurl's and libpq's included: the first call to
    /// initialise libcrypto decides). `exit()` does not stop the process's other threads,
    /// and that cleanup frees libcrypto's global state under them: a pool thread still
    /// hashing would use freed memory, and a thread exiting after it never frees its own
    /// state (the deleted thread-local keys skip OpenSSL's destructor — LeakSanitizer reports
    /// a thread's two DRBGs lost that way, decision 0053). The process is ending; the
    /// kernel takes the memory back, and what libcrypto still holds stays reachable from
    /// its globals, so LeakSanitizer still reports any handle of ours that leaked.
    public static func skipCleanupAtExit() {
        _ = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
    }

    /// Cryptographically secure random bytes (OpenSSL's CSPRNG).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else {
            fatalError("OpenSSL RAND_bytes failed: no secure randomness, refusing to continue")
        }
        return bytes
    }

    public static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        hmac(EVP_sha256(), key: key, data: data)
    }

    /// HMAC-SHA1: only where a protocol fixes it, the TURN REST API credential that
    /// coturn (`use-auth-secret`) recomputes. Not for anything we choose ourselves.
    public static func hmacSHA1(key: [UInt8], data: [UInt8]) -> [UInt8] {
        hmac(EVP_sha1(), key: key, data: data)
    }

    private static func hmac(_ digest: OpaquePointer?, key: [UInt8], data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { keyBuffer in
            data.withUnsafeBufferPointer { dataBuffer in
                HMAC(digest, keyBuffer.baseAddress, Int32(keyBuffer.count),
                     dataBuffer.baseAddress, dataBuffer.count, &output, &length)
            }
        }
        // HMAC only fails on allocation failure or a broken libcrypto; a wrong MAC
        // would fail open somewhere else, so stop here.
        guard result != nil else { fatalError("OpenSSL HMAC failed") }
        return Array(output.prefix(Int(length)))
    }

    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = data.withUnsafeBufferPointer { SHA256($0.baseAddress, $0.count, &output) }
        return output
    }

    /// Compares in time independent of where the inputs differ.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { aBytes in
            b.withUnsafeBytes { bBytes in CRYPTO_memcmp(aBytes.baseAddress, bBytes.baseAddress, a.count) == 0 }
        }
    }

    /// A random opaque token (32 bytes, base64url): refresh tokens, OTP tokens, tickets.
    public static func opaqueToken() -> String { Base64URL.encode(randomBytes(32)) }

    /// What the database keeps of an opaque token: its SHA-256, hex. A leaked table gives
    /// no usable token.
    public static func tokenHash(_ token: String) -> String {
        sha256(Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Base64url without padding (RFC 4648 §5), as JWTs use.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = base64.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64).map(Array.init)
    }
}

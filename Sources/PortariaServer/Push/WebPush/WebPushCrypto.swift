import COpenSSL
import Foundation

/// A P-256 key — a pair, or a peer's public key only — owning its `EVP_PKEY`.
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never mutated after creation, and every
/// operation (ECDH, PEM export) uses its own OpenSSL context, which OpenSSL 3 allows
/// concurrently on one key.
final class P256Key: @unchecked Sendable {
    let pkey: OpaquePointer

    struct KeyError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private init(_ pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    static func generate() throws -> P256Key {
        guard let pkey = portaria_p256_generate() else { throw KeyError("P-256 key generation failed") }
        return P256Key(pkey)
    }

    /// The pair of a 32-byte private scalar (RFC 8291's test vector fixes the sender's key).
    convenience init(privateScalar: [UInt8]) throws {
        guard let pkey = privateScalar.withUnsafeBufferPointer({ portaria_p256_from_private($0.baseAddress, $0.count) }) else {
            throw KeyError("not a P-256 private scalar")
        }
        self.init(pkey)
    }

    /// A peer's key from its uncompressed point (65 bytes, `0x04‖X‖Y`). Throws when the
    /// bytes are not a point on P-256: a subscription's `p256dh` is untrusted input.
    convenience init(publicPoint: [UInt8]) throws {
        guard let pkey = publicPoint.withUnsafeBufferPointer({ portaria_p256_from_public($0.baseAddress, $0.count) }) else {
            throw KeyError("not an uncompressed point on P-256")
        }
        self.init(pkey)
    }

    /// Loads a PEM private key (PKCS#8 or SEC1) that must be P-256.
    convenience init(pem: String) throws {
        guard let loaded = ProviderKey.readPrivateKey(pem: pem) else { throw KeyError("not a PEM private key") }
        guard EVP_PKEY_get_base_id(loaded) == EVP_PKEY_EC, EVP_PKEY_get_bits(loaded) == 256 else {
            EVP_PKEY_free(loaded)
            throw KeyError("the key is not EC P-256")
        }
        self.init(loaded)
        _ = try publicPoint()  // a P-256 key whose point cannot be read is of no use
    }

    /// The uncompressed public point, 65 bytes.
    func publicPoint() throws -> [UInt8] {
        var point = [UInt8](repeating: 0, count: 65)
        guard point.withUnsafeMutableBufferPointer({ portaria_p256_public_point(pkey, $0.baseAddress) }) == 1 else {
            throw KeyError("cannot read the public point")
        }
        return point
    }

    /// PKCS#8 PEM of the private key (what `--vapid-key-file` holds and the database stores).
    func privatePEM() throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw KeyError("BIO_new failed") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else { throw KeyError("PEM export failed") }
        let pending = Int(BIO_ctrl_pending(bio))
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(pending)) }
        guard read == Int32(pending) else { throw KeyError("PEM export failed") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// ECDH: the shared secret (the X coordinate, 32 bytes) of this private key and `peer`.
    func sharedSecret(with peer: P256Key) throws -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else { throw KeyError("EVP_PKEY_CTX_new failed") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer.pkey) == 1 else {
            throw KeyError("ECDH setup failed")
        }
        var length = 0
        guard EVP_PKEY_derive(context, nil, &length) == 1, length == 32 else { throw KeyError("ECDH size") }
        var secret = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_derive(context, &secret, &length) == 1, length == 32 else { throw KeyError("ECDH failed") }
        return secret
    }
}

/// Message encryption for Web Push: `aes128gcm` content coding (RFC 8188) with the key
/// derivation of RFC 8291, one record.
///
/// ```
/// ecdh_secret = ECDH(as_private, ua_public)
/// IKM   = HKDF(salt: auth_secret, ikm: ecdh_secret, info: "WebPush: info\0" ‖ ua_public ‖ as_public, 32)
/// CEK   = HKDF(salt: salt, ikm: IKM, info: "Content-Encoding: aes128gcm\0", 16)
/// NONCE = HKDF(salt: salt, ikm: IKM, info: "Content-Encoding: nonce\0", 12)
/// body  = salt(16) ‖ rs(4, big-endian) ‖ idlen(1) = 65 ‖ as_public(65) ‖ AES-128-GCM(CEK, NONCE, plaintext ‖ 0x02) ‖ tag(16)
/// ```
enum WebPushEncryption {
    /// The record size written in the header; the whole message is one record.
    static let recordSize = 4096
    /// Bytes the coding adds: header (16 + 4 + 1 + 65), the padding delimiter, the tag.
    static let overhead = 86 + 1 + 16
    /// Push services must accept 4096-byte bodies (RFC 8030 §7.2), not more.
    static let maxBody = 4096
    static var maxPlaintext: Int { maxBody - overhead }

    struct EncryptionError: Error, CustomStringConvertible {
        let description: String
    }

    /// Encrypts `plaintext` for the subscription (`p256dh`, `auth`). `salt` and `serverKey`
    /// are fresh per message; tests pass RFC 8291's fixed ones.
    static func encrypt(_ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8],
                        salt: [UInt8] = Crypto.randomBytes(16), serverKey: P256Key? = nil) throws -> [UInt8] {
        guard plaintext.count <= maxPlaintext else {
            throw EncryptionError(description: "payload of \(plaintext.count) bytes > \(maxPlaintext)")
        }
        guard salt.count == 16, auth.count == 16 else { throw EncryptionError(description: "salt and auth secret must be 16 bytes") }
        let receiver = try P256Key(publicPoint: p256dh)
        let sender = try serverKey ?? P256Key.generate()
        let senderPublic = try sender.publicPoint()
        let ecdhSecret = try sender.sharedSecret(with: receiver)

        let keyInfo = Array("WebPush: info".utf8) + [0] + p256dh + senderPublic
        let ikm = hkdf(salt: auth, ikm: ecdhSecret, info: keyInfo, length: 32)
        let cek = hkdf(salt: salt, ikm: ikm, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = hkdf(salt: salt, ikm: ikm, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)

        // One record, so it is the last: the delimiter is 0x02, no padding after it.
        let sealed = try aes128gcm(key: cek, nonce: nonce, plaintext: plaintext + [2])
        let rs = UInt32(recordSize)
        let header = salt + [UInt8(rs >> 24), UInt8((rs >> 16) & 0xff), UInt8((rs >> 8) & 0xff), UInt8(rs & 0xff)]
            + [UInt8(senderPublic.count)] + senderPublic
        return header + sealed
    }

    /// HKDF-SHA-256 (RFC 5869) for outputs of at most one block (32 bytes), all Web Push needs.
    static func hkdf(salt: [UInt8], ikm: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length <= 32, "one HMAC block")
        let prk = Crypto.hmacSHA256(key: salt, data: ikm)
        return Array(Crypto.hmacSHA256(key: prk, data: info + [1]).prefix(length))
    }

    /// AES-128-GCM: ciphertext ‖ 16-byte tag.
    static func aes128gcm(key: [UInt8], nonce: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        guard key.count == 16, nonce.count == 12 else { throw EncryptionError(description: "bad key or nonce size") }
        guard let context = EVP_CIPHER_CTX_new() else { throw EncryptionError(description: "EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, 12, nil) == 1,
              EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1 else {
            throw EncryptionError(description: "AES-GCM setup failed")
        }
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0
        guard EVP_EncryptUpdate(context, &output, &written, plaintext, Int32(plaintext.count)) == 1 else {
            throw EncryptionError(description: "AES-GCM failed")
        }
        var final: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + Int(written), &final)
        }
        guard ok == 1 else { throw EncryptionError(description: "AES-GCM final failed") }
        let length = Int(written + final)
        let tagged = output.withUnsafeMutableBufferPointer { buffer in
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, buffer.baseAddress! + length)
        }
        guard tagged == 1 else { throw EncryptionError(description: "AES-GCM tag failed") }
        return Array(output.prefix(length + 16))
    }
}

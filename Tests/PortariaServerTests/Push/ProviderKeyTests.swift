import Foundation
@testable import PortariaServer
import Testing

/// The error paths of the two classes that own an OpenSSL `EVP_PKEY` (ProviderKey,
/// P256Key): every refused key must be freed. Before the fix, `ProviderKey(pem:)` stored the
/// loaded key and then threw for a P-384, short RSA or Ed25519 key — a throwing initializer
/// never runs `deinit`, so the key leaked; under `scripts/sanitize address` LeakSanitizer
/// reported it at this test process's exit (with `leak:libcrypto.so.3` no longer suppressed).
@Suite("Provider keys refuse unusable keys and free them")
struct ProviderKeyTests {
    // Throw-away keys made with `openssl genpkey` for these tests only.
    static let p384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDCAY8NyBDq3GUFCPm9W
        R3Wr4mvao/JEsZUetX4AdHmLZ+onv7B+gly//UXZoA7K/GKhZANiAATVhjXmyB3t
        2GsKAmcBIq0bfDfwAxgiLeHxBVJplxvJYNNq/kqN8QDbhe5r257mPnnzUOlzHI3S
        sd+UDqF+o+ISnN6Re8EREhKmWZwpvrp/8KwEjay1eHKHMHZWu5rE/BM=
        -----END PRIVATE KEY-----
        """
    static let ed25519 = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEIHrpyM6XRVcb/WBJDYK3QPcOBFf3oOGP06Vyt49Yeqs5
        -----END PRIVATE KEY-----
        """
    static let rsa1024 = """
        -----BEGIN PRIVATE KEY-----
        MIICdgIBADANBgkqhkiG9w0BAQEFAASCAmAwggJcAgEAAoGBAN6EAdJUMlroquwk
        uP4/W4d68QzdEyWUoARvsyMq+efbMZsd7TuYlN88TJI74XTkQ0b/BAYXXeLWAtKR
        S//HACD7uIYYgf9N2rXSmNAtsAxEpercGJgI8kAyogt2UMgfRhLIsEOWtT/NAWKy
        XFGBG37ukNdgR3xaRIRjAjQYnrv3AgMBAAECgYBqtbm96Tzg1fWqG45P94hod3AE
        MD0PZ7A5kGvDMMf6BedLMVXkn669Q8ig1HCxwwn0kTWXyjrvHpzp6F4fAosvYTzk
        pH2Ktgs273rN7o6sFVOYX/VcXutKAqnSQ4+H9J/ygS+ZPGf2V1OrvqUJDdigzHRg
        4Brkbybo7zYcrvdCsQJBAO9ZFMZNw1JZRpUAvSQm8Xpmf9dup4/DN/8riazd9eGM
        2Qy0ukPuc3K77E62gKxRuhgK4KzmzALjQ9d94jIFaH8CQQDt/yISapYnnxNbADel
        ynlVQj81QtdPZIoUM9RtK+2ZnKij5VyB8+jC3617Vg8acyE4x3UrZKB1IcyYVEFO
        3jCJAkEA5vDaJbk0pIl1nCHZXj+hMkwiQDkJvqJLro9QyRZlwBrJ9wOO0isLBAKl
        MRHRN/Onjrk4LjyHTqYAeLWDAmbLewJAHytFxBGvfprnxwg9QXpF77OQYaJSXnR1
        XPX4wR96q56Hu4dDWUWfWz4+EyQPMFCZrjz5DGjOVujJSb3nG7QfuQJAOnits8IK
        2BrCQhDZmLTz94zHaOeWr1wYudy2FeFcXmf547m7WOaXLx51IqMHZfIgTaR9gVNf
        6Z8h1KpAfPchxQ==
        -----END PRIVATE KEY-----
        """
    static let p256 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnWOEEevjjt8MHqUS
        P/JvgLw1atpv5gSeh25GJt/k0+2hRANCAARBtvOXN8i54Y2F2T3VWeYAHM2KJbAm
        3klmvhW82HuBG+1VHl9xTI1znogySmEcg/bYdfr4TiWUGuhVnZLUrsZ7
        -----END PRIVATE KEY-----
        """

    static func message(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("a P-384, a 1024-bit RSA and an Ed25519 key are refused by ProviderKey, each with its reason")
    func providerKeyRefusesUnusableKeys() throws {
        let p384 = Self.message { _ = try ProviderKey(pem: Self.p384) }
        #expect(p384?.contains("EC key is not P-256") == true, "\(p384 ?? "accepted")")
        let rsa = Self.message { _ = try ProviderKey(pem: Self.rsa1024) }
        #expect(rsa?.contains("RSA key shorter than 2048 bits") == true, "\(rsa ?? "accepted")")
        let ed25519 = Self.message { _ = try ProviderKey(pem: Self.ed25519) }
        #expect(ed25519?.contains("unsupported key type") == true, "\(ed25519 ?? "accepted")")
        // Not a key at all, and a PEM whose base64 is cut short.
        #expect(Self.message { _ = try ProviderKey(pem: "no key here") }?.contains("not a PEM private key") == true)
        let truncated = String(Self.p256.prefix(80)) + "\n-----END PRIVATE KEY-----\n"
        #expect(Self.message { _ = try ProviderKey(pem: truncated) }?.contains("not a PEM private key") == true)
    }

    @Test("a refused key's OpenSSL errors do not leak into the next refusal's reason")
    func errorQueueIsDrained() throws {
        _ = Self.message { _ = try ProviderKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        // No OpenSSL call failed for this one: its reason must be ours alone.
        let rsa = try #require(Self.message { _ = try ProviderKey(pem: Self.rsa1024) })
        #expect(rsa.hasSuffix("RSA key shorter than 2048 bits"), "\(rsa)")
    }

    @Test("a P-256 key loads, signs ES256 as raw R‖S, and non-DER signatures are refused")
    func p256KeySigns() throws {
        let key = try ProviderKey(pem: Self.p256)
        #expect(key.algorithm == .es256)
        #expect(try key.sign(Array("signing input".utf8)).count == 64)
        #expect(throws: ProviderKey.KeyError.self) { try ProviderKey.rawECDSA(der: [0x30, 0x03, 0x02, 0x01]) }
        #expect(throws: ProviderKey.KeyError.self) { try ProviderKey.rawECDSA(der: []) }
    }

    @Test("P256Key refuses keys of other curves and types, and points off the curve")
    func p256KeyRefusesOthers() throws {
        for pem in [Self.p384, Self.rsa1024, Self.ed25519, "no key here"] {
            #expect(throws: P256Key.KeyError.self) { try P256Key(pem: pem) }
        }
        let point = try P256Key(pem: Self.p256).publicPoint()
        var offCurve = point
        offCurve[64] ^= 0x01
        #expect(throws: P256Key.KeyError.self) { try P256Key(publicPoint: offCurve) }
        #expect(throws: P256Key.KeyError.self) { try P256Key(publicPoint: Array(point.prefix(33))) }
        #expect(throws: P256Key.KeyError.self) { try P256Key(privateScalar: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: P256Key.KeyError.self) { try P256Key(privateScalar: [UInt8](repeating: 0xff, count: 32)) }
    }
}

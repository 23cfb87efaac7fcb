import CArgon2
import Foundation
import PortariaCore

/// argon2id password hashing with the OWASP ASVS 5.0 minimum (m = 19 MiB, t = 2, p = 1).
///
/// Hashing is deliberately slow and memory-hungry, so it runs on its own queue with a
/// bounded number of concurrent hashes: a login storm costs latency, not the process's
/// memory or the threads that serve everything else.
public struct PasswordHasher: Sendable {
    public var memoryKiB: UInt32 = 19 * 1024
    public var iterations: UInt32 = 2
    public var parallelism: UInt32 = 1
    /// One serial queue per core: at most that many hashes at once, on threads of their
    /// own (see `BlockingQueues` for why not a concurrent queue).
    private static let queues = BlockingQueues(label: "portaria.argon2", count: ProcessInfo.processInfo.activeProcessorCount)

    public init() {}

    public static let minimumLength = 8
    public static let maximumLength = 128

    /// Length in characters as people count them (grapheme clusters); no composition rules.
    public static func validate(_ password: String) -> String? {
        if password.count < minimumLength { return "password must have at least \(minimumLength) characters" }
        if password.count > maximumLength { return "password must have at most \(maximumLength) characters" }
        return nil
    }

    /// The PHC-encoded hash (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`).
    public func hash(_ password: String) async -> String {
        let (memory, iterations, parallelism) = (memoryKiB, self.iterations, self.parallelism)
        return await Self.run {
            let salt = Crypto.randomBytes(16)
            let bytes = Array(password.utf8)
            let length = argon2_encodedlen(iterations, memory, parallelism, UInt32(salt.count), 32, Argon2_id)
            var encoded = [CChar](repeating: 0, count: length)
            let code = argon2id_hash_encoded(iterations, memory, parallelism, bytes, bytes.count,
                                             salt, salt.count, 32, &encoded, length)
            precondition(code == ARGON2_OK.rawValue, "argon2id_hash_encoded failed: \(code)")
            return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Verifies a password against a stored hash. With `nil` (unknown user) it hashes
    /// anyway against a fixed dummy so both answers take the same time.
    public func verify(_ password: String, against encoded: String?) async -> Bool {
        let target = encoded ?? Self.dummyHash
        let known = encoded != nil
        return await Self.run {
            let bytes = Array(password.utf8)
            let ok = argon2id_verify(target, bytes, bytes.count) == ARGON2_OK.rawValue
            return ok && known
        }
    }

    /// A valid hash of a random secret nobody knows, with the same cost parameters.
    private static let dummyHash: String = {
        let salt = Crypto.randomBytes(16)
        let secret = Crypto.randomBytes(24)
        let length = argon2_encodedlen(2, 19 * 1024, 1, 16, 32, Argon2_id)
        var encoded = [CChar](repeating: 0, count: length)
        _ = argon2id_hash_encoded(2, 19 * 1024, 1, secret, secret.count, salt, salt.count, 32, &encoded, length)
        return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    private static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        // `work` does not throw, so neither does the hop.
        try! await queues.run(work)
    }
}

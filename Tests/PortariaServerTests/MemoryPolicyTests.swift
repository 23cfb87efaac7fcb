#if canImport(Glibc)
import Foundation
import Glibc
import Testing
@testable import PortariaServer

/// The allocator policy `portaria serve` sets (see `MemoryPolicy`): a block the size of
/// argon2id's work area goes back to the kernel when freed, every time — glibc's default
/// would keep it in an arena after the first one, which is how the server's RSS grew.
@Suite("Memory policy")
struct MemoryPolicyTests {
    /// Only what is deterministic in this process: glibc accepts the thresholds. Whether a
    /// freed 19 MiB block leaves the process is checked in a fresh server
    /// (`MemoryPolicyServerTests`): here, after hundreds of tests, an arena sometimes holds a
    /// free hole that large and glibc serves the block from it without `mmap` (1 run in 5).
    @Test("glibc takes the thresholds and the arena limit")
    func glibcTakesTheThresholds() throws {
        #expect(MemoryPolicy.apply(), "mallopt refused the thresholds (or this is not glibc)")
        #expect(MemoryPolicy.apply(), "a second call reports the policy in place")
        MemoryPolicy.trim()
    }
}
#endif

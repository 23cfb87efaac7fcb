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
    /// Whether the page holding `address` is mapped in this process.
    static func isMapped(_ address: UnsafeMutableRawPointer) -> Bool {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let page = UnsafeMutableRawPointer(bitPattern: Int(bitPattern: address) & ~(pageSize - 1))!
        var residency: UInt8 = 0
        return mincore(page, pageSize, &residency) == 0
    }

    @Test("glibc takes the thresholds; a 19 MiB block is unmapped on free, again and again")
    func largeBlocksGoBack() throws {
        #expect(MemoryPolicy.apply(), "mallopt refused the thresholds (or this is not glibc)")
        for round in 1...3 {
            let size = 19 << 20
            let block = try #require(malloc(size))
            memset(block, 0x5A, size)  // touched, as argon2 does
            #expect(Self.isMapped(block))
            free(block)
            #expect(!Self.isMapped(block), "round \(round): the freed block is still mapped (kept by an arena)")
        }
        MemoryPolicy.trim()
    }
}
#endif

import Foundation
@testable import PortariaServer
import Testing

@Suite("SQL value conversions")
struct SQLValueConversionTests {
    // A REAL read where a store expects an integer is truncated as before; one that has no
    // Int64 (NaN, infinities, beyond ±9.2e18) is nil, which a required read reports as a
    // RowDecodingError instead of trapping the process.
    @Test("a REAL read as an integer: truncated when it fits, nil (not a trap) when it cannot")
    func realAsInteger() {
        #expect(SQLValue.real(3.7).asInteger == 3)
        #expect(SQLValue.real(-3.7).asInteger == -3)
        #expect(SQLValue.real(1e30).asInteger == nil)
        #expect(SQLValue.real(-1e30).asInteger == nil)
        #expect(SQLValue.real(.nan).asInteger == nil)
        #expect(SQLValue.real(.infinity).asInteger == nil)
        #expect(SQLValue.real(1e30).asDate == nil)
    }

    @Test("a required integer column holding an out-of-range REAL throws, naming the column")
    func requiredRealOutOfRange() {
        let row = SQLRow(columns: ["consecutive_failures"], values: [.real(1e300)])
        #expect(throws: RowDecodingError.self) { try row.required.int("consecutive_failures") }
    }
}

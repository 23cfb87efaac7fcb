import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
@testable import PortariaServer

/// The gate POST's statements are a fixed set: none is repeated per resident of the unit
/// (decision 0122), so the POST costs the same round trips on PostgreSQL in a unit of one
/// resident as in a unit of many.
@Suite("Gate POST statements")
struct GateStatementTests {
    @Test("a gate POST runs as many statements for a unit of four residents as for a unit of one",
          arguments: VisitsFixture.backends)
    func statementsDoNotGrowWithResidents(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { fixture in
            let counting = CountingDatabase(inner: fixture.database)
            var configuration = VisitsConfiguration()
            configuration.dataDirectory = fixture.dataDirectory
            let bus = EventBus()
            bus.listen(VisitPushes())
            let service = VisitService(database: counting, clock: fixture.clock, bus: bus, configuration: configuration)
            let limit = VisitService.GateRateLimit(address: "10.0.0.9", max: 1000, perUnit: 1000, perGate: 1000)
            let unit = try #require(fixture.units["B-201"])
            let request = try JSONDecoder().decode(CreateVisitRequest.self, from: Data("""
                {"unit_id": "\(unit)", "kind": "visit", "visitor_name": "Visita da Ana"}
                """.utf8))
            func statements() async throws -> (count: Int, visit: PublicVisit) {
                let before = counting.statements.current
                let created = try await service.createVisit(gateToken: "demo-gate", request: request, rateLimit: limit)
                return (counting.statements.current - before, created.visit)
            }

            let one = try await statements()
            // B-201 has no ring order: its residents are rung by name, each checked for `visits.view`.
            let directory = Directory(database: fixture.database)
            let residents = try await directory.sectorID(company: fixture.demo, "Moradores")
            for number in 1...3 {
                let user = try await directory.createUser(username: "morador\(number)", name: "Morador \(number)")
                try await directory.addMember(user: user, company: fixture.demo, units: [unit], sectors: [residents])
            }
            let four = try await statements()

            #expect(one.count > 0)
            #expect(four.count == one.count, "\(one.count) statements with one resident, \(four.count) with four")
            // The ring still starts with the first resident by name.
            let rung = try await fixture.database.read { db in try VisitStore.rungUsers(db, visitID: VisitID(rawValue: four.visit.id)!) }
            #expect(rung == [fixture.users["ana"]!])
        }
    }
}

/// A database that counts the statements run on the connections it hands to read and write
/// bodies. A write's last work (`SQLConnection.lastWork`) runs on the inner connection and
/// is not counted.
struct CountingDatabase: SQLDatabase {
    let inner: any SQLDatabase
    let statements = Locked(0)

    var dialect: SQLDialect { inner.dialect }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        let statements = statements
        return try await inner.read { db in try body(CountingConnection(inner: db, statements: statements)) }
    }

    func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        let statements = statements
        return try await inner.readSnapshot { db in try body(CountingConnection(inner: db, statements: statements)) }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        let statements = statements
        return try await inner.write { db in try body(CountingConnection(inner: db, statements: statements)) }
    }

    func writeNotDurable<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        let statements = statements
        return try await inner.writeNotDurable { db in try body(CountingConnection(inner: db, statements: statements)) }
    }

    func ping() async throws { try await inner.ping() }
    func close() async { await inner.close() }
}

private struct CountingConnection: SQLConnection {
    let inner: any SQLConnection
    let statements: Locked<Int>

    var dialect: SQLDialect { inner.dialect }
    var transactionHooks: TransactionHooks { inner.transactionHooks }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        statements.withLock { $0 += 1 }
        return try inner.execute(sql, parameters)
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow] {
        statements.withLock { $0 += 1 }
        return try inner.query(sql, parameters)
    }
}

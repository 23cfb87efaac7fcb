import Foundation
import PortariaCore

/// The demo of docs/contract.md §6, seeded by `portaria serve --demo` into an empty database.
public enum DemoData {
    public static let password = "demo1234"

    /// Seeds when there is no company yet; returns whether it did.
    @discardableResult
    public static func seedIfEmpty(_ database: any SQLDatabase, log: Log = .shared) async throws -> Bool {
        let companies = try await database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM companies", [])?.int("n") ?? 0 }
        guard companies == 0 else { return false }
        let directory = Directory(database: database)

        let demo = try await directory.createCompany(name: "Residencial Demo", gateLat: -23.561684, gateLon: -46.655981, radius: 50)
        try await directory.createGate(company: demo, token: "demo-gate", allowGuessable: true)
        let a101 = try await directory.createUnit(company: demo, label: "A-101")
        _ = try await directory.createUnit(company: demo, label: "A-102")
        let b201 = try await directory.createUnit(company: demo, label: "B-201")
        let residents = try await directory.createSector(company: demo, name: "Moradores",
                                                         permissions: [Permission.visits, Permission.unitsSettings, Permission.devicesManage])
        let concierge = try await directory.createSector(company: demo, name: "Portaria",
                                                         permissions: [Permission.operator, Permission.visits])
        let management = try await directory.createSector(company: demo, name: "Administração",
                                                          permissions: [Permission.admin, Permission.operator, Permission.visits])

        let azul = try await directory.createCompany(name: "Condomínio Azul", gateLat: -22.9068, gateLon: -43.1729, radius: 50)
        try await directory.createGate(company: azul, token: "azul-gate", allowGuessable: true)
        let azul101 = try await directory.createUnit(company: azul, label: "101")
        let azulResidents = try await directory.createSector(company: azul, name: "Moradores",
                                                             permissions: [Permission.visits, Permission.unitsSettings, Permission.devicesManage])

        let maria = try await directory.createUser(username: "maria", name: "Maria Souza", phone: "+5511999990001", password: password)
        let joao = try await directory.createUser(username: "joao", name: "João Souza", phone: "+5511999990002", password: password)
        let ana = try await directory.createUser(username: "ana", name: "Ana Lima", phone: "+5511999990003", password: password)
        let portaria = try await directory.createUser(username: "portaria", name: "Portaria Residencial Demo", phone: "+5511999990004", password: password)
        let admin = try await directory.createUser(username: "admin", name: "Administração Residencial Demo", phone: "+5511999990005", password: password)
        let carlos = try await directory.createUser(username: "carlos", name: "Carlos Reis", phone: "+5521999990006", password: password)

        try await directory.addMember(user: maria, company: demo, units: [a101], sectors: [residents])
        try await directory.addMember(user: joao, company: demo, units: [a101], sectors: [residents])
        try await directory.addMember(user: ana, company: demo, units: [b201], sectors: [residents])
        try await directory.addMember(user: portaria, company: demo, sectors: [concierge])
        try await directory.addMember(user: admin, company: demo, sectors: [management])
        try await directory.addMember(user: maria, company: azul, units: [azul101], sectors: [azulResidents])
        try await directory.addMember(user: carlos, company: azul, units: [azul101], sectors: [azulResidents])

        // A-101 rings Maria then João, 20 s each; deliveries ask.
        try await directory.setRingOrder(unit: a101, users: [maria, joao])
        try await directory.setDeliveryRule(unit: a101, rule: "ask")
        try await directory.setRingOrder(unit: azul101, users: [maria, carlos])
        log.info("demo data seeded", ["companies": .array([.string("Residencial Demo"), .string("Condomínio Azul")]),
                                      "password": .string("demo1234 (demo users only)")])
        return true
    }
}

import Foundation
import PortariaCore
import PortariaWebSocket

/// The buildings an open-loop run spreads its gate POSTs over: the demo's Residencial Demo
/// (A-101, Maria and João) and, for `--buildings N` above 1, N − 1 more shaped like it — a
/// company with its gate, unit A-101, a "Moradores" sector with the demo residents'
/// permissions, two residents in a ring order.
///
/// The server has no HTTP route that creates companies, so the extra buildings are made
/// the way an operator makes them: `portaria admin` on the server's database (`--portaria`
/// names the binary, `--database` the URL; the admin commands also read the server's
/// `PORTARIA_*` environment, such as `PORTARIA_DATA_DIR`). When the last building's gate
/// already answers, a second run on the same database seeds nothing.
struct BenchBuildings {
    /// One building as the load uses it.
    struct Building: Sendable {
        var gate: String
        var unitID: String
        var residents: [(token: String, companyID: String)]
    }

    static let residentPermissions = [Permission.visits, Permission.unitsSettings, Permission.devicesManage]

    let count: Int
    let portaria: String?
    let database: String?

    init(options: Options) throws {
        count = try options.count("buildings", default: 1)
        guard count <= 500 else { throw BenchError("--buildings must be 1–500") }
        portaria = options.string("portaria")
        database = options.string("database")
        if count > 1 && (portaria == nil || database == nil) {
            throw BenchError("--buildings above 1 needs --portaria (the portaria binary) and --database (the server's database URL)")
        }
    }

    static func name(_ number: Int) -> String { String(format: "Bench Building %03d", number) }
    /// Long enough for the gate's minimum token length.
    static func gateToken(_ number: Int) -> String { String(format: "bench-building-%03d-gate-token", number) }
    static func username(_ number: Int, _ letter: String) -> String { String(format: "bench%03d%@", number, letter) }

    /// The demo building, then the others, each with its residents logged in.
    func prepare(_ http: BenchHTTP, demo target: DemoTarget) async throws -> [Building] {
        var buildings = [Building(gate: target.gate, unitID: try await http.unitID(gate: target.gate, label: target.unitLabel),
                                  residents: try await target.residents(http))]
        guard count > 1, let portaria, let database else { return buildings }
        // Only the last building's gate is asked for: every unknown token counts against this
        // address's guessing limit, and buildings are made in order, each gate last.
        if try await http.send("GET", "/v1/gates/\(Self.gateToken(count))").status != 200 {
            let started = MonotonicClock.now()
            for number in 2...count { try seed(number, portaria: portaria, database: database, password: target.password) }
            print(String(format: "  seeded %d buildings with portaria admin in %.1f s", count - 1,
                         milliseconds(from: started, to: MonotonicClock.now()) / 1000))
        }
        for number in 2...count {
            let gate = Self.gateToken(number)
            var residents: [(token: String, companyID: String)] = []
            for letter in ["a", "b"] {
                residents.append(try await http.login(Self.username(number, letter), password: target.password, company: Self.name(number)))
            }
            buildings.append(Building(gate: gate, unitID: try await http.unitID(gate: gate, label: "A-101"), residents: residents))
        }
        return buildings
    }

    private func seed(_ number: Int, portaria: String, database: String, password: String) throws {
        let company = Self.name(number)
        let (first, second) = (Self.username(number, "a"), Self.username(number, "b"))
        let steps: [[String]] = [
            ["create-company", "--name", company, "--gate-lat", "-23.561684", "--gate-lon", "-46.655981", "--gate-radius", "50"],
            ["create-unit", "--company", company, "--label", "A-101"],
            ["create-sector", "--company", company, "--name", "Moradores", "--permissions", Self.residentPermissions.joined(separator: ",")],
            ["create-user", "--username", first, "--name", "Morador \(number) A"],
            ["create-user", "--username", second, "--name", "Morador \(number) B"],
            ["add-member", "--user", first, "--company", company, "--units", "A-101", "--sectors", "Moradores"],
            ["add-member", "--user", second, "--company", company, "--units", "A-101", "--sectors", "Moradores"],
            ["set-ring-order", "--company", company, "--unit", "A-101", "--users", "\(first),\(second)"],
            // Last: the gate answering is what marks the building as complete.
            ["create-gate", "--company", company, "--token", Self.gateToken(number)],
        ]
        for step in steps {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: portaria)
            process.arguments = ["admin"] + step + ["--database", database]
            var environment = ProcessInfo.processInfo.environment
            environment["PORTARIA_PASSWORD"] = password
            process.environment = environment
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let text = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw BenchError("portaria admin \(step.joined(separator: " ")) exited \(process.terminationStatus): "
                                 + String(decoding: text.prefix(400), as: UTF8.self))
            }
        }
    }
}

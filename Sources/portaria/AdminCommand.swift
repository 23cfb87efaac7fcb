import Foundation
import PortariaCore
import PortariaServer

/// `portaria admin <action> [options]`: administration straight on the database.
enum AdminCommand {
    static let actions = """
        admin actions (all take --database URL, --data-dir DIR and --json):
          create-company --name N [--gate-lat X --gate-lon Y --gate-radius M --timezone TZ]
          create-unit    --company C --label L
          create-gate    --company C [--token T] [--name N]   (without --token: a random 128-bit token)
          create-user    --username U --name N [--phone +55…] [--password-file F] [--master] [--driver]
          create-sector  --company C --name N --permissions p1,p2
          add-member     --user U --company C [--units L1,L2] [--sectors S1,S2] [--permissions p1,p2]
          grant          --user U --company C --permission P
          set-password   --user U --password-file F   (or PORTARIA_PASSWORD in the environment); ends U's sessions
          set-ring-order --company C --unit L --users u1,u2
          rotate-jwt-key [--secrets-key-file F]   (default: the secrets key in --data-dir, as serve keeps it)
          push-test      --user U [--text T]   sends a test push to each of U's devices (APNs/FCM options as for serve)
          list           companies|users|units|gates|sectors|memberships
          audit          [--company C] [--since ISO] [--until ISO]   the audit trail, oldest first (all companies without --company)
          export-user    --user U   everything the database holds about U, as JSON (LGPD)
          erase-user     --user U   removes U's personal data; the audit trail keeps the facts under a pseudonym (LGPD)
          backup         --to FILE   online copy of a SQLite database (mode 0600; FILE must not exist);
                         PostgreSQL: pg_dump (docs/ops.md). Keep the data dir's key file with it.
        C, U, S and L may be ids or names; permissions: \(Permission.catalogue.sorted().joined(separator: ", "))
        Passwords: --password-file F (first line) or PORTARIA_PASSWORD; --password P still works but any
        user of the machine can read it in ps.
        """

    static let specs: [OptionSpec] = ServerConfiguration.databaseOptions + [
        OptionSpec("json", takesValue: false, help: "machine-readable output"),
        OptionSpec("name", help: ""), OptionSpec("gate-lat", help: ""), OptionSpec("gate-lon", help: ""),
        OptionSpec("gate-radius", help: ""), OptionSpec("timezone", help: ""), OptionSpec("company", help: ""),
        OptionSpec("label", help: ""), OptionSpec("token", help: ""), OptionSpec("username", help: ""),
        OptionSpec("phone", help: ""), OptionSpec("password", help: ""), OptionSpec("password-file", help: ""),
        OptionSpec("master", takesValue: false, help: ""),
        OptionSpec("driver", takesValue: false, help: ""), OptionSpec("permissions", help: ""), OptionSpec("user", help: ""),
        OptionSpec("units", help: ""), OptionSpec("sectors", help: ""), OptionSpec("permission", help: ""),
        OptionSpec("unit", help: ""), OptionSpec("users", help: ""), OptionSpec("text", help: ""),
        OptionSpec("provider", help: "", hidden: true), OptionSpec("count", help: "", hidden: true),
        OptionSpec("concurrency", help: "", hidden: true), OptionSpec("secrets-key-file", help: ""), OptionSpec("data-dir", help: ""),
        OptionSpec("since", help: ""), OptionSpec("until", help: ""),
        OptionSpec("to", help: ""),
    ] + ServerConfiguration.serveOptions.filter { pushOptionNames.contains($0.name) }

    /// The serve options `push-test` shares, read from the environment like serve does.
    static let pushOptionNames: Set<String> = ["apns-key-file", "apns-key-id", "apns-team-id", "apns-topic", "apns-endpoint",
                                               "fcm-service-account", "fcm-endpoint", "ca-file"]

    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let action = arguments.first, action != "--help", action != "help" else {
            print(actions)
            return arguments.isEmpty ? 64 : 0
        }
        // Only the database URL is read from the environment here: a stray PORTARIA_NAME must
        // not silently fill an admin option.
        var environment: [String: String] = [:]
        var keys = ["PORTARIA_DATABASE", "PORTARIA_PASSWORD", "PORTARIA_SECRETS_KEY_FILE", "PORTARIA_DATA_DIR"]
        keys += pushOptionNames.map { "PORTARIA_" + $0.uppercased().replacingOccurrences(of: "-", with: "_") }
        for key in keys { environment[key] = ProcessInfo.processInfo.environment[key] }
        let options = try ParsedOptions.parse(Array(arguments.dropFirst()), specs: specs, environment: environment)
        let json = options.flag("json")
        let configuration = try ServerConfiguration.from(options)
        if action == "backup" { return try backup(configuration, to: options.value("to"), json: json) }
        let database = try await DatabaseFactory.open(url: configuration.databaseURL)
        defer { Task { await database.close() } }
        try await Migrator().migrate(database)
        let directory = Directory(database: database)

        func required(_ name: String) throws -> String {
            guard let value = options.value(name), !value.isEmpty else { throw UsageError("\(action) needs --\(name)") }
            return value
        }
        func list(_ name: String) -> [String] {
            (options.value(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        func double(_ name: String) throws -> Double? {
            guard let text = options.value(name) else { return nil }
            guard let value = Double(text) else { throw UsageError("--\(name) must be a number") }
            return value
        }
        func report(_ message: String, _ fields: [String: JSONValue]) {
            print(json ? JSONValue.object(fields).jsonText : message)
        }
        /// An administration change, in the audit trail under the `cli` role.
        func audit(_ name: String, company: String? = nil, object: (type: String, id: String)? = nil, subject: String? = nil,
                   detail: [String: JSONValue] = [:]) async throws {
            let entry = AuditEntry(companyID: company, actorUserID: nil, actorRole: "cli", action: "admin." + name,
                                   objectType: object?.type, objectID: object?.id, subjectUserID: subject, detail: detail, at: Date())
            try await database.write { db in try AuditLog.append(db, entry) }
        }
        func date(_ name: String) throws -> Date? {
            guard let text = options.value(name) else { return nil }
            guard let date = Timestamp.parse(text) else { throw UsageError("--\(name) must be an ISO 8601 timestamp (2026-01-31T00:00:00Z)") }
            return date
        }
        /// The password from --password-file, PORTARIA_PASSWORD or (warned) --password.
        func password() throws -> String? {
            if let file = options.value("password-file") {
                return try SecretFile.read(file, option: "--password-file")
            }
            if arguments.contains(where: { $0 == "--password" || $0.hasPrefix("--password=") }) {
                CommandLineTool.fail("portaria admin: warning: --password on the command line is visible to every user of this machine (ps); use --password-file or PORTARIA_PASSWORD")
            }
            return options.value("password")
        }

        do {
            switch action {
            case "create-company":
                let name = try required("name")
                let id = try await directory.createCompany(name: name, gateLat: try double("gate-lat"), gateLon: try double("gate-lon"),
                                                           radius: try double("gate-radius") ?? 50,
                                                           timezone: options.value("timezone") ?? "America/Sao_Paulo")
                try await audit("create_company", company: id, object: ("company", id))
                report("created company \(name) (\(id))", ["id": .string(id), "name": .string(name)])
            case "create-unit":
                let company = try await directory.companyID(try required("company"))
                let label = try required("label")
                let id = try await directory.createUnit(company: company, label: label)
                try await audit("create_unit", company: company, object: ("unit", id))
                report("created unit \(label) (\(id))", ["id": .string(id), "label": .string(label)])
            case "create-gate":
                let company = try await directory.companyID(try required("company"))
                let (id, token) = try await directory.createGate(company: company, token: options.value("token"),
                                                                 name: options.value("name") ?? "Portão principal")
                try await audit("create_gate", company: company, object: ("gate", id))
                report("created gate \(token) (\(id)); its page is /gate/\(token)", ["id": .string(id), "token": .string(token)])
            case "create-user":
                let username = try required("username")
                let id = try await directory.createUser(username: username, name: try required("name"), phone: options.value("phone"),
                                                        password: try password(),
                                                        master: options.flag("master"), driver: options.flag("driver"))
                try await audit("create_user", object: ("user", id), subject: id)
                report("created user \(username) (\(id))", ["id": .string(id), "username": .string(username)])
            case "create-sector":
                let company = try await directory.companyID(try required("company"))
                let name = try required("name")
                let id = try await directory.createSector(company: company, name: name, permissions: list("permissions"))
                try await audit("create_sector", company: company, object: ("sector", id),
                                detail: ["permissions": .array(list("permissions").map(JSONValue.string))])
                report("created sector \(name) (\(id))", ["id": .string(id), "name": .string(name)])
            case "add-member":
                let user = try await directory.userID(try required("user"))
                let company = try await directory.companyID(try required("company"))
                var units: [String] = []
                for unit in list("units") { units.append(try await directory.unitID(company: company, unit)) }
                var sectors: [String] = []
                for sector in list("sectors") { sectors.append(try await directory.sectorID(company: company, sector)) }
                try await directory.addMember(user: user, company: company, units: units, sectors: sectors, permissions: list("permissions"))
                try await audit("add_member", company: company, object: ("user", user), subject: user,
                                detail: ["units": .array(units.map(JSONValue.string)), "sectors": .array(sectors.map(JSONValue.string)),
                                         "permissions": .array(list("permissions").map(JSONValue.string))])
                report("membership updated", ["user_id": .string(user), "company_id": .string(company)])
            case "grant":
                let user = try await directory.userID(try required("user"))
                let company = try await directory.companyID(try required("company"))
                let permission = try required("permission")
                try await directory.grant(user: user, company: company, permission: permission)
                try await audit("grant", company: company, object: ("user", user), subject: user, detail: ["permission": .string(permission)])
                report("granted \(permission)", ["user_id": .string(user), "permission": .string(permission)])
            case "set-password":
                let user = try await directory.userID(try required("user"))
                guard let newPassword = try password(), !newPassword.isEmpty else {
                    throw UsageError("set-password needs --password-file F (or PORTARIA_PASSWORD)")
                }
                let ended = try await directory.setPassword(user: user, password: newPassword)
                report("password set; \(ended) session(s) ended", ["user_id": .string(user), "sessions_ended": .number(Double(ended))])
            case "set-ring-order":
                let company = try await directory.companyID(try required("company"))
                let unit = try await directory.unitID(company: company, try required("unit"))
                var users: [String] = []
                for user in list("users") { users.append(try await directory.userID(user)) }
                try await directory.setRingOrder(unit: unit, users: users)
                try await audit("set_ring_order", company: company, object: ("unit", unit), detail: ["users": .array(users.map(JSONValue.string))])
                report("ring order set", ["unit_id": .string(unit), "users": .array(users.map(JSONValue.string))])
            case "rotate-jwt-key":
                // The same key serve uses (made, and any plaintext secrets wrapped with it, when
                // the database holds no wrapped secret).
                let secrets = try await ServiceSecrets.open(database, keyFile: configuration.secretsKeyFile,
                                                            dataDirectory: configuration.dataDirectory, log: Log(minimumLevel: .warning))
                let id = try await ServiceSecrets.rotate(database, key: secrets.key)
                report("new signing key \(id); restart instances to sign with it", ["kid": .string(id)])
            case "push-test":
                return try await pushTest(database: database, directory: directory, configuration: configuration,
                                          user: try required("user"), text: options.value("text"), json: json)
            case "push-bench":
                // Hidden: bench/push drives it against the local fakes.
                return try await PushBench.run(configuration: configuration, provider: try required("provider"),
                                               count: try options.integer("count", default: 20_000, range: 1...10_000_000),
                                               concurrency: try options.integer("concurrency", default: 200, range: 1...10_000))
            case "audit":
                var company: String?
                if let name = options.value("company") { company = try await directory.companyID(name) }
                let (since, until) = (try date("since"), try date("until"))
                var records: [AuditLog.Record] = []
                var cursor: Int64?
                // Newest first in pages, printed oldest first.
                while true {
                    let page = try await database.read { [company, cursor] db in
                        try AuditLog.list(db, companyID: company, since: since, until: until, before: cursor, limit: 1000)
                    }
                    records += page
                    guard page.count == 1000, let last = page.last else { break }
                    cursor = last.id
                }
                records.reverse()
                if json {
                    print(JSONValue.array(records.map(\.json)).jsonText)
                } else {
                    for record in records {
                        let entry = record.entry
                        var line = "\(Timestamp.format(entry.at))  \(entry.action)  \(entry.actorRole)"
                        if let actor = entry.actorUserID { line += " \(actor)" }
                        if let type = entry.objectType { line += "  \(type) \(entry.objectID ?? "-")" }
                        if let subject = entry.subjectUserID, subject != entry.actorUserID { line += "  about \(subject)" }
                        if let device = entry.device { line += "  device \(device)" }
                        if let address = entry.address, !address.isEmpty { line += "  from \(address)" }
                        if !entry.detail.isEmpty { line += "  " + JSONValue.object(entry.detail).jsonText }
                        print(line)
                    }
                }
            case "export-user":
                let user = try await directory.userID(try required("user"))
                print(try await PersonalData.export(database, userID: user).jsonText)
            case "erase-user":
                let user = try await directory.userID(try required("user"))
                guard let erased = try await PersonalData.erase(database, userID: user) else {
                    CommandLineTool.fail("portaria admin erase-user: no such user")
                    return 65
                }
                report("erased \(user): audit facts kept under \(erased.pseudonym) (\(erased.auditRowsPseudonymized) row(s))",
                       ["user_id": .string(user), "pseudonym": .string(erased.pseudonym),
                        "audit_rows_pseudonymized": .number(Double(erased.auditRowsPseudonymized))])
            case "list":
                guard let kind = options.positional.first else { throw UsageError("list what? companies, users, units, gates, sectors or memberships") }
                let rows = try await directory.list(kind)
                if json {
                    print(JSONValue.array(rows.map(JSONValue.object)).jsonText)
                } else {
                    for row in rows {
                        print(row.keys.sorted().map { key in "\(key)=\(Self.plain(row[key]!))" }.joined(separator: "  "))
                    }
                }
            default:
                throw UsageError("unknown admin action '\(action)' (try portaria admin help)")
            }
        } catch let error as Directory.DirectoryError {
            CommandLineTool.fail("portaria admin \(action): \(error.description)")
            return 65
        } catch let error as SecretsError {
            CommandLineTool.fail("portaria admin \(action): \(error.description)")
            return 65
        } catch let error as ServerStartError {
            CommandLineTool.fail("portaria admin \(action): \(error.description)")
            return 65
        }
        return 0
    }

    /// Enqueues a `test` push per device of the user through the outbox and delivers them
    /// at once with the configured providers, printing each provider's answer.
    static func pushTest(database: any SQLDatabase, directory: Directory, configuration: ServerConfiguration,
                         user: String, text: String?, json: Bool) async throws -> Int32 {
        let userID = try await directory.userID(user)
        let log = Log(minimumLevel: .warning)
        let push = try Application.pushProviders(configuration, log: log)
        defer { push.shutdown() }
        let devices = try await DeviceStore(database: database).devices(userID: userID)
        let message = PushMessage(text: text ?? "Teste de notificação enviado por portaria admin push-test")
        let jobs = try await database.write { db in
            try PushOutbox.enqueue(db, PushRequest(userID: userID, kind: .test, message: message, deadline: Date().addingTimeInterval(300)))
        }
        let worker = PushWorker(database: database, providers: push.providers, instanceID: "push-test", log: log)
        let results = try await worker.deliverNow(jobs.map(\.pushID))
        var failures = 0
        var lines: [JSONValue] = []
        for device in devices {
            let name = device.deviceName ?? device.installationID
            guard let job = jobs.first(where: { $0.deviceID == device.id }),
                  let (_, provider, result) = results.first(where: { $0.pushID == job.pushID }) else {
                print(json ? "" : "\(name) [\(device.platform)]: skipped (no active push token: \(device.pushTokenStatus))")
                lines.append(.object(["device_id": .string(device.id), "skipped": .string("no active push token")]))
                continue
            }
            if result.outcome != .accepted { failures += 1 }
            lines.append(.object(["device_id": .string(device.id), "platform": .string(device.platform), "push_id": .string(job.pushID),
                                  "provider": .string(provider), "outcome": .string(result.outcome.rawValue),
                                  "status": result.httpStatus.map { .number(Double($0)) } ?? .null,
                                  "reason": result.reason.map(JSONValue.string) ?? .null,
                                  "provider_id": result.providerID.map(JSONValue.string) ?? .null]))
            if !json {
                var line = "\(name) [\(device.platform)] push \(job.pushID): \(provider) → \(result)"
                if result.outcome == .retry { line += " (left in the outbox: a running server retries it)" }
                print(line)
            }
        }
        if json { print(JSONValue.array(lines).jsonText) }
        if devices.isEmpty && !json { print("\(user) has no registered device") }
        return devices.isEmpty || failures > 0 ? 1 : 0
    }

    static func plain(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .null: return "-"
        default: return value.jsonText
        }
    }

    /// `backup --to FILE`: SQLite's online backup; nothing is opened for writing, so a
    /// running server goes on undisturbed.
    static func backup(_ configuration: ServerConfiguration, to destination: String?, json: Bool) throws -> Int32 {
        guard let destination, !destination.isEmpty else { throw UsageError("backup needs --to FILE") }
        guard configuration.databaseURL.hasPrefix("sqlite://") else {
            throw UsageError("backup copies SQLite databases; back up PostgreSQL with pg_dump (docs/ops.md, Backups)")
        }
        let source = String(configuration.databaseURL.dropFirst("sqlite://".count))
        try SQLiteBackup.copy(from: source, to: destination)
        let size = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int) ?? 0
        print(json ? JSONValue.object(["backup": .string(destination), "bytes": .number(Double(size))]).jsonText
                   : "backed up \(source) to \(destination) (\(size) bytes)")
        return 0
    }
}

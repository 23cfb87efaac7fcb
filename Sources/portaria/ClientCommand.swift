import Foundation
import PortariaClient
import PortariaCore
import PortariaServer

/// `portaria client …`: a resident's session on the terminal, through the same
/// `SessionManager` the apps use.
enum ClientCommand {
    static let help = """
        client actions:
          login  --url URL --username U --password P [--company NAME|ID]
          otp    --url URL --phone +55… [--code 123456]     (without --code: sends the SMS)
          me     [--url URL]
          logout [--url URL]
        The session is kept in --session-file (default ~/.portaria/session.json, mode 0600).
        """

    static let specs: [OptionSpec] = [
        OptionSpec("url", help: ""), OptionSpec("username", help: ""), OptionSpec("password", help: ""),
        OptionSpec("company", help: ""), OptionSpec("phone", help: ""), OptionSpec("code", help: ""),
        OptionSpec("session-file", help: ""), OptionSpec("json", takesValue: false, help: ""),
    ]

    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let action = arguments.first, action != "help", action != "--help" else {
            print(help)
            return arguments.isEmpty ? 64 : 0
        }
        var environment: [String: String] = [:]
        for key in ["PORTARIA_URL", "PORTARIA_SESSION_FILE", "PORTARIA_PASSWORD"] { environment[key] = ProcessInfo.processInfo.environment[key] }
        let options = try ParsedOptions.parse(Array(arguments.dropFirst()), specs: specs, environment: environment)
        let sessionFile = options.value("session-file")
            ?? (FileManager.default.homeDirectoryForCurrentUser.path + "/.portaria/session.json")
        let store = FileSecureStore(path: sessionFile)
        let storedURL = try store.string(for: "url")
        let urlText = options.value("url") ?? storedURL ?? "http://127.0.0.1:8080"
        guard let url = URL(string: urlText), url.scheme == "http" || url.scheme == "https" else {
            throw UsageError("--url must be an http(s) URL")
        }
        try store.set(urlText, for: "url")
        let session = SessionManager(api: APIClient(baseURL: url), secure: store, preferences: SecureStorePreferences(store: store))
        func required(_ name: String) throws -> String {
            guard let value = options.value(name), !value.isEmpty else { throw UsageError("client \(action) needs --\(name)") }
            return value
        }
        do {
            switch action {
            case "login":
                let result = try await session.login(username: try required("username"), password: try required("password"))
                try await finish(result, session: session, company: options.value("company"))
            case "otp":
                let phone = try required("phone")
                if let code = options.value("code") {
                    try await finish(try await session.verifyCode(phone: phone, code: code), session: session, company: options.value("company"))
                } else {
                    try await session.requestCode(phone: phone)
                    print("code requested; run again with --code")
                }
            case "me":
                let me = try await session.me()
                print("\(me.user.name) (\(me.user.username)) — \(me.company.name) — \(me.profile.rawValue)")
                print("units: \(me.units.map(\.label).joined(separator: ", "))")
                print("permissions: \(me.permissions.joined(separator: ", "))")
            case "logout":
                try await session.logout()
                print("logged out")
            default:
                throw UsageError("unknown client action '\(action)' (try portaria client help)")
            }
        } catch let error as APIClientError {
            switch error {
            case .server(let status, let body): CommandLineTool.fail("portaria client: \(status) \(body.code): \(body.message)")
            case .transport(let detail): CommandLineTool.fail("portaria client: cannot reach \(urlText): \(detail)")
            case .unexpected(let status): CommandLineTool.fail("portaria client: unexpected HTTP \(status)")
            }
            return 1
        } catch let error as SessionManager.SessionError {
            CommandLineTool.fail("portaria client: \(error)")
            return 1
        }
        return 0
    }

    static func finish(_ result: SessionManager.LoginResult, session: SessionManager, company: String?) async throws {
        switch result {
        case .ready(let grant):
            print("logged in — \(grant.name)")
        case .needsCompanySelection(let grants):
            if let company, let grant = grants.first(where: { $0.id == company || $0.name == company }) {
                try await session.selectCompany(id: grant.id)
                print("logged in — \(grant.name)")
            } else {
                print("logged in; choose a company with --company:")
                for grant in grants { print("  \(grant.name)  (\(grant.id))") }
            }
        }
    }
}

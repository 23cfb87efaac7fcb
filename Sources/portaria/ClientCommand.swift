import Foundation
import PortariaClient
import PortariaCore
import PortariaServer
#if canImport(Glibc)
import Glibc
#endif

/// `portaria client …`: a resident's phone on the terminal, running the same
/// `PortariaClient` core the apps run (session, durable resolve queue, realtime with
/// REST reconcile, device registration). It is the proof that the core works for real.
enum ClientCommand {
    static let help = """
        client actions:
          login     --url URL --username U --password P [--company NAME|ID]
                    [--push-token T [--voip-token V] [--platform android|ios]]   (registers this device)
          otp       --url URL --phone +55… [--code 123456]    (without --code: sends the SMS)
          companies [--select NAME|ID]                          the session's companies (* = selected)
          me
          pending   [--json]                                    pendências (unanswered visits)
          watch     [--json] [--count N] [--seconds S]          one line per live event; reconnects, reconciles
          resolve   VISIT_ID authorize|deny|leave_at_concierge [--wait S]
                    through the durable queue; exit 75 and "queued" when it could not be delivered yet
          sync      [--wait S]                                  sends what is queued
          logout                                                unregisters this device, ends the session
        State lives in --home DIR (PORTARIA_CLIENT_HOME; default $XDG_STATE_HOME/portaria, else $HOME/.portaria): session.json (mode 0600),
        queue/ (one file per queued decision), installation id. Times are in the condominium's time zone.
        Exit status: 0 done; 3 someone else decided or the visit closed; 4 refused; 75 queued; 1 other errors.
        """

    static let specs: [OptionSpec] = [
        OptionSpec("url", help: ""), OptionSpec("username", help: ""), OptionSpec("password", help: ""),
        OptionSpec("company", help: ""), OptionSpec("phone", help: ""), OptionSpec("code", help: ""),
        OptionSpec("session-file", help: ""), OptionSpec("home", help: ""), OptionSpec("json", takesValue: false, help: ""),
        OptionSpec("select", help: ""), OptionSpec("count", help: ""), OptionSpec("seconds", help: ""),
        OptionSpec("wait", help: ""), OptionSpec("push-token", help: ""), OptionSpec("voip-token", help: ""),
        OptionSpec("platform", help: ""),
    ]

    /// Exit statuses (sysexits where one fits).
    enum Exit {
        static let ok: Int32 = 0
        static let failure: Int32 = 1
        static let notApplied: Int32 = 3
        static let refused: Int32 = 4
        static let usage: Int32 = 64
        static let queued: Int32 = 75   // EX_TEMPFAIL
    }

    /// Everything one invocation works with.
    struct Context {
        let home: String
        let url: URL
        let store: FileSecureStore
        let session: SessionManager
        let queue: ResolveQueue
        let registrar: DeviceRegistrar
    }

    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let action = arguments.first, action != "help", action != "--help" else {
            say(help)
            return arguments.isEmpty ? Exit.usage : Exit.ok
        }
        var environment: [String: String] = [:]
        let inherited = ProcessInfo.processInfo.environment
        for key in ["PORTARIA_URL", "PORTARIA_SESSION_FILE", "PORTARIA_PASSWORD"] { environment[key] = inherited[key] }
        environment["PORTARIA_HOME"] = inherited["PORTARIA_CLIENT_HOME"]
        let options = try ParsedOptions.parse(Array(arguments.dropFirst()), specs: specs, environment: environment)
        let context = try makeContext(options)
        func required(_ name: String) throws -> String {
            guard let value = options.value(name), !value.isEmpty else { throw UsageError("client \(action) needs --\(name)") }
            return value
        }
        do {
            switch action {
            case "login":
                let result = try await context.session.login(username: try required("username"), password: try required("password"))
                return try await finishLogin(result, context: context, options: options)
            case "otp":
                let phone = try required("phone")
                if let code = options.value("code") {
                    return try await finishLogin(try await context.session.verifyCode(phone: phone, code: code), context: context, options: options)
                }
                try await context.session.requestCode(phone: phone)
                say("code requested; run again with --code")
            case "companies":
                return try await companies(context, select: options.value("select"))
            case "me":
                let me = try await context.session.me()
                say("\(me.user.name) (\(me.user.username)) — \(me.company.name) — \(me.profile.rawValue)")
                say("units: \(me.units.map(\.label).joined(separator: ", "))")
                say("permissions: \(me.permissions.joined(separator: ", "))")
            case "pending":
                return try await pending(context, json: options.flag("json"))
            case "watch":
                return try await watch(context, json: options.flag("json"),
                                       count: try options.integer("count", default: 0, range: 0...1_000_000),
                                       seconds: try options.integer("seconds", default: 0, range: 0...86_400))
            case "resolve":
                let positional = options.positional
                guard positional.count == 2 else { throw UsageError("usage: portaria client resolve VISIT_ID authorize|deny|leave_at_concierge") }
                guard let decision = ResolutionAction(rawValue: positional[1]) else {
                    throw UsageError("the action must be authorize, deny or leave_at_concierge")
                }
                return try await resolve(context, visitID: positional[0], action: decision,
                                         wait: try options.integer("wait", default: 10, range: 0...3600))
            case "sync":
                return await sync(context, wait: try options.integer("wait", default: 10, range: 0...3600))
            case "logout":
                return try await logout(context)
            default:
                throw UsageError("unknown client action '\(action)' (try portaria client help)")
            }
        } catch let error as APIClientError {
            switch error {
            case .server(let status, let body): CommandLineTool.fail("portaria client: \(status) \(body.code): \(body.message)")
            case .transport(let detail): CommandLineTool.fail("portaria client: cannot reach \(context.url.absoluteString): \(detail)")
            case .unexpected(let status): CommandLineTool.fail("portaria client: unexpected HTTP \(status)")
            }
            return Exit.failure
        } catch let error as SessionManager.SessionError {
            CommandLineTool.fail("portaria client: \(error == .notLoggedIn ? "not logged in (portaria client login)" : "\(error)")")
            return Exit.failure
        }
        return Exit.ok
    }

    /// Where state lives without `--home`: `$XDG_STATE_HOME/portaria`, else `$HOME/.portaria`
    /// — the environment's home, as every terminal tool reads it (a test, a container, `sudo
    /// -E`), not the password database's, which Foundation's `homeDirectoryForCurrentUser`
    /// may answer with.
    static func defaultHome(_ environment: [String: String]) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/portaria" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.portaria" }
        return FileManager.default.homeDirectoryForCurrentUser.path + "/.portaria"
    }

    static func makeContext(_ options: ParsedOptions) throws -> Context {
        let home = options.value("home") ?? defaultHome(ProcessInfo.processInfo.environment)
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let store = FileSecureStore(path: options.value("session-file") ?? home + "/session.json")
        let storedURL = try store.string(for: "url")
        let urlText = options.value("url") ?? storedURL ?? "http://127.0.0.1:8080"
        guard let url = URL(string: urlText), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw UsageError("--url must be an http(s) URL")
        }
        if options.value("url") != nil || storedURL == nil { try store.set(urlText, for: "url") }
        let preferences = SecureStorePreferences(store: store)
        // A short per-request timeout: a tap on a bad network is queued after seconds, not minutes.
        let api = APIClient(baseURL: url, transport: URLSessionTransport(timeout: 8))
        let session = SessionManager(api: api, secure: store, preferences: preferences)
        let queue = ResolveQueue(store: try FileResolveQueueStore(directory: home + "/queue"), http: session,
                                 timeZone: { companyID in
                                     await zone(session, companyID: companyID)
                                 })
        let registrar = DeviceRegistrar(http: session, state: FileDeviceRegistrationState(store: store))
        return Context(home: home, url: url, store: store, session: session, queue: queue, registrar: registrar)
    }

    /// The condominium's zone as `/v1/me` said; America/Sao_Paulo until it has (decision 0014).
    static func zone(_ session: SessionManager, companyID: String?) async -> TimeZone {
        let selected = await session.selectedCompanyID
        guard let id = companyID ?? selected else { return ResolveQueue.defaultTimeZone }
        return await session.timeZone(companyID: id) ?? ResolveQueue.defaultTimeZone
    }

    // MARK: Login

    static func finishLogin(_ result: SessionManager.LoginResult, context: Context, options: ParsedOptions) async throws -> Int32 {
        let session = context.session
        switch result {
        case .ready(let grant):
            say("logged in — \(grant.name)")
        case .needsCompanySelection(let grants):
            if let company = options.value("company"), let grant = grants.first(where: { $0.id == company || $0.name == company }) {
                try await session.selectCompany(id: grant.id)
                say("logged in — \(grant.name)")
            } else {
                say("logged in; choose a company with --company (or portaria client companies --select):")
                for grant in grants { say("  \(grant.name)  (\(grant.id))") }
                return Exit.ok
            }
        }
        // Learn the condominium's time zone now, so later sentences need no extra request.
        _ = try? await session.me()
        if let pushToken = options.value("push-token") {
            let platform = options.value("platform") ?? (options.value("voip-token") == nil ? "android" : "ios")
            let outcome = await context.registrar.register(DeviceFacts(platform: platform), pushToken: pushToken,
                                                             voipToken: options.value("voip-token"), until: Date().addingTimeInterval(10))
            switch outcome {
            case .registered(let id), .unchanged(let id): say("device registered (\(id))")
            case .failed(let why):
                CommandLineTool.fail("portaria client: device not registered yet: \(why)")
                return Exit.queued
            }
        }
        // Anything tapped before the session ended goes out now.
        let reports = await context.queue.sync(until: Date().addingTimeInterval(5))
        for report in reports { say(line(report)) }
        return Exit.ok
    }

    static func companies(_ context: Context, select: String?) async throws -> Int32 {
        let session = context.session
        let grants = await session.availableCompanies
        guard !grants.isEmpty else {
            CommandLineTool.fail("portaria client: not logged in (portaria client login)")
            return Exit.failure
        }
        if let select {
            guard let grant = grants.first(where: { $0.id == select || $0.name == select }) else {
                throw UsageError("no company '\(select)' in this session")
            }
            try await session.selectCompany(id: grant.id)
            _ = try? await session.me()
        }
        let selected = await session.selectedCompanyID
        for grant in grants {
            say("\(grant.id == selected ? "*" : " ") \(grant.name)  (\(grant.id))")
        }
        return Exit.ok
    }

    // MARK: Reading

    static func pending(_ context: Context, json: Bool) async throws -> Int32 {
        let answer = try await context.session.sendAuthorized(
            try ClientHTTPRequest(APIRoutes.visits.endpoint, query: [URLQueryItem(name: "status", value: "pending")]))
        guard answer.isSuccess else {
            throw APIClientError.server(status: answer.status, error: answer.errorBody ?? ErrorBody(code: .internalError, message: "HTTP \(answer.status)"))
        }
        let page = try JSONCoding.decoder().decode(VisitPage.self, from: answer.body)
        if json {
            say(String(decoding: try JSONCoding.encoder().encode(page.visits), as: UTF8.self))
            return Exit.ok
        }
        let zone = await zone(context.session, companyID: nil)
        if page.visits.isEmpty { say("nenhuma pendência") }
        for visit in page.visits {
            let who = [visit.carrier, visit.visitorName].compactMap { $0 }.joined(separator: " — ")
            say("\(visit.id)  \(visit.unit.label)  \(visit.kind == .delivery ? "entrega" : "visita")  \(who)  "
                  + "\(ResolutionText.clock(visit.createdAt, timeZone: zone))  \(visit.geofenceBadge)")
        }
        return Exit.ok
    }

    static func watch(_ context: Context, json: Bool, count: Int, seconds: Int) async throws -> Int32 {
        guard await context.session.isLoggedIn else { throw SessionManager.SessionError.notLoggedIn }
        #if canImport(Glibc)
        let transport = WebSocketRealtimeTransport()
        #else
        let transport = UnavailableRealtimeTransport()
        #endif
        let zone = await zone(context.session, companyID: nil)
        let realtime = RealtimeClient(baseURL: context.url, http: context.session, credentials: context.session,
                                      transport: transport, deviceID: await context.registrar.deviceID)
        await realtime.start()
        let stopper: Task<Void, Never>? = seconds > 0 ? Task {
            try? await Task.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
            await realtime.finish()
        } : nil
        var events = 0
        for await update in realtime.updates {
            switch update {
            case .state(let state):
                say(json ? #"{"type":"state","state":"\#(state.rawValue)"}"# : "# \(ClientText.connection(state))")
                if state == .offline, await context.session.isLoggedIn == false {
                    // The session ended (logout elsewhere, refresh refused): nothing to watch.
                    stopper?.cancel()
                    await realtime.finish()
                    CommandLineTool.fail("portaria client: the session ended (portaria client login)")
                    return Exit.failure
                }
            case .snapshot(let pending, let recent):
                if json {
                    say(#"{"type":"snapshot","pending":\#(pending.count),"recent":\#(recent.count)}"#)
                } else {
                    say("# \(pending.count) pendência(s); \(recent.filter { !$0.status.isTerminal }.count) em andamento")
                }
            case .event(let type, let seq, let data):
                events += 1
                if json {
                    let frame = RealtimeFrame(type: type.rawValue, seq: seq,
                                              data: try? JSONCoding.decoder().decode(JSONValue.self, from: JSONCoding.encoder().encode(data)))
                    say(frame.jsonText)
                } else {
                    say(WatchLine.text(type, seq: seq, data, timeZone: zone))
                }
                if count > 0 && events >= count {
                    stopper?.cancel()
                    await realtime.finish()
                }
            case .call:
                continue
            }
        }
        stopper?.cancel()
        return Exit.ok
    }

    // MARK: Deciding

    static func resolve(_ context: Context, visitID: String, action: ResolutionAction, wait: Int) async throws -> Int32 {
        guard await context.session.isLoggedIn else { throw SessionManager.SessionError.notLoggedIn }
        let companyID = await context.session.selectedCompanyID
        let report: ResolveReport
        do {
            report = try await context.queue.resolve(visitID: visitID, action: action, via: .app, companyID: companyID,
                                                     until: Date().addingTimeInterval(TimeInterval(wait)))
        } catch let error as ResolveQueueStoreError {
            // Not on disk means not accepted: say so rather than pretend it is queued.
            CommandLineTool.fail("portaria client: the decision could not be saved (\(error)); nothing was sent")
            return Exit.failure
        }
        say(report.sentence)
        return status(report)
    }

    static func sync(_ context: Context, wait: Int) async -> Int32 {
        let reports = await context.queue.sync(until: Date().addingTimeInterval(TimeInterval(wait)))
        if reports.isEmpty { say("nada na fila") }
        for report in reports { say(line(report)) }
        return reports.contains { !$0.isFinished } ? Exit.queued : Exit.ok
    }

    static func line(_ report: ResolveReport) -> String {
        "\(report.item.visitID)  \(report.sentence)"
    }

    static func status(_ report: ResolveReport) -> Int32 {
        switch report.state {
        case .queued(let reason):
            CommandLineTool.fail("portaria client: queued (\(reason.rawValue); \(report.item.attempts) attempt(s)); "
                                 + "`portaria client sync` sends it")
            return Exit.queued
        case .finished(.resolved): return Exit.ok
        case .finished(.alreadyResolved), .finished(.closed): return Exit.notApplied
        case .finished(.refused): return Exit.refused
        }
    }

    static func logout(_ context: Context) async throws -> Int32 {
        // While the access token still works: this phone must stop getting pushes with
        // visitor names once logged out.
        switch await context.registrar.unregister() {
        case .unregistered(let id): say("device unregistered (\(id))")
        case .notRegistered: break
        case .failed(let why): CommandLineTool.fail("portaria client: the device could not be unregistered: \(why)")
        }
        let left = await context.queue.sync(until: Date().addingTimeInterval(5)).filter { !$0.isFinished }
        for report in left {
            say("\(report.item.visitID)  ainda na fila: será enviada quando esta conta entrar de novo")
        }
        try await context.session.logout()
        say("logged out")
        return Exit.ok
    }
}

/// One line on standard output, written at once (unbuffered): `watch` is read while it runs.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// One line of `portaria client watch` per event.
enum WatchLine {
    static func text(_ type: VisitEventType, seq: Int64, _ data: VisitEventData, timeZone: TimeZone) -> String {
        var parts = ["[\(seq)]", type.rawValue, data.unitLabel ?? "?", data.visitID]
        switch type {
        case .created:
            parts.append([data.carrier, data.visitorName].compactMap { $0 }.joined(separator: " — "))
            if let geofence = data.geofence { parts.append(geofence.badge) }
        case .ringing:
            parts.append("tocando \(data.userIDs?.count ?? 0) morador(es)")
        case .answered:
            if let by = data.by { parts.append("\(ResolutionText.firstName(by.name)) atendeu") }
        case .declined:
            if let by = data.by { parts.append("\(ResolutionText.firstName(by.name)) recusou") }
        case .ringCancelled:
            if let reason = data.reason { parts.append(reason.rawValue) }
        case .resolved:
            if let resolution = data.resolution {
                parts.append(ResolutionText.notice(resolution, timeZone: timeZone))
            }
        case .unanswered, .cancelled, .expired, .photoAdded, .voiceMessageAdded:
            break
        }
        return parts.joined(separator: "  ")
    }
}

import Foundation
import PortariaCore
import PortariaServer
#if canImport(Glibc)
import PortariaWebSocket
#endif

/// `portaria serve | migrate | admin … | client …`. Mistakes print one readable line and
/// exit non-zero; nothing prints a stack trace.
enum CommandLineTool {
    static let usage = """
        usage: portaria <command> [options]

        commands:
          serve      run the HTTP/WebSocket server
          migrate    apply database migrations and exit
          client     a resident's session on the terminal (portaria client help)
          admin      create companies, units, gates, users, sectors; grant; list (portaria admin help)
          help       this text

        serve options:
        \(ParsedOptions.usage(ServerConfiguration.serveOptions))
        """

    static func run(_ arguments: [String]) async -> Int32 {
        guard let command = arguments.first else {
            print(usage)
            return 64
        }
        let rest = Array(arguments.dropFirst())
        // Everything any command creates (the database and its -wal/-shm, which SQLite
        // gives the database's mode, media, the secrets key, the client's session files)
        // is owner-only from its first byte, whatever the shell's umask; docs/ops.md has
        // the same in the systemd unit.
        umask(0o077)
        do {
            switch command {
            case "serve": return try await serve(rest)
            case "migrate": return try await migrate(rest)
            case "admin": return try await AdminCommand.run(rest)
            case "client": return try await ClientCommand.run(rest)
            case "help", "--help", "-h":
                print(usage)
                return 0
            default:
                throw UsageError("unknown command '\(command)' (try portaria help)")
            }
        } catch let error as UsageError {
            fail("portaria: \(error.description)")
            return 64
        } catch let error as StorageError {
            fail("portaria: \(error.description)")
            return 69
        } catch let error as ServerStartError {
            fail("portaria: \(error.description)")
            return 69
        } catch {
            fail("portaria: \(error)")
            return 1
        }
    }

    static func fail(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static func serve(_ arguments: [String]) async throws -> Int32 {
        if arguments.contains("--help") { print(usage); return 0 }
        let options = try ParsedOptions.parse(arguments, specs: ServerConfiguration.serveOptions)
        guard options.positional.isEmpty else { throw UsageError("unexpected argument '\(options.positional[0])'") }
        let configuration = try ServerConfiguration.from(options)
        // Before anything listens: a SIGTERM sent as soon as the server answers must not be
        // lost (it was, while the signal sources were still being registered).
        ShutdownSignal.install()
        #if canImport(Glibc)
        // Every WebSocket holds a descriptor: the default soft limit (often 1024) would cap
        // the server long before memory does.
        let openFiles = ResourceLimits.raiseOpenFileLimit()
        Log.shared.debug("open file limit", ["soft": .number(Double(openFiles))])
        #endif
        // With --demo a person reads the terminal: the banner first, then the JSON lines.
        if configuration.seedDemo { Log.shared.hold() }
        let application: Application
        do {
            application = try await Application(configuration: configuration)
            try await application.start()
        } catch {
            Log.shared.release(foldingWarningsInto: nil)
            throw error
        }
        if configuration.seedDemo {
            let port = application.server.port
            Log.shared.release(foldingWarningsInto: "development mode: not set up for production") { warnings in
                DemoBanner.text(host: configuration.host, port: port, requestLogLevel: configuration.requestLogLevel,
                                smsLogged: configuration.smsWebhook == nil, warnings: warnings)
            }
        }
        await ShutdownSignal.wait()
        await application.shutdown()
        return 0
    }

    static func migrate(_ arguments: [String]) async throws -> Int32 {
        let options = try ParsedOptions.parse(arguments, specs: ServerConfiguration.databaseOptions)
        guard options.positional.isEmpty else { throw UsageError("unexpected argument '\(options.positional[0])'") }
        let configuration = try ServerConfiguration.from(options)
        let database = try await DatabaseFactory.open(url: configuration.databaseURL)
        let applied = try await Migrator().migrate(database)
        let all = try await Migrator().appliedVersions(database)
        await database.close()
        print(applied.isEmpty ? "schema up to date (version \(all.last ?? 0))"
              : "applied migrations \(applied.map(String.init).joined(separator: ", ")); schema at version \(all.last ?? 0)")
        return 0
    }
}

/// SIGTERM or SIGINT, remembered from the moment `install()` runs.
enum ShutdownSignal {
    private struct State {
        var fired = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private static let state = Locked(State())

    /// Starts catching SIGTERM and SIGINT. libdispatch registers a signal source
    /// asynchronously, and until then a signal is ignored (SIG_IGN) or fatal (SIG_DFL), so
    /// this runs well before the server reports that it is listening.
    static func install() {
        var sources: [DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    state.fired = true
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
            source.resume()
            sources.append(source)
        }
        SignalSources.keep(sources)
    }

    /// Returns once a signal has arrived (at once if one already has).
    static func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiter = continuation
                return false
            }
            if fired { continuation.resume() }
        }
    }
}

/// Keeps the signal sources alive for the life of the process.
enum SignalSources {
    nonisolated(unsafe) static var retained: [DispatchSourceSignal] = []
    static func keep(_ sources: [DispatchSourceSignal]) { retained = sources }
}

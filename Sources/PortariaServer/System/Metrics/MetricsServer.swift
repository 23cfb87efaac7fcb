import Foundation
import PortariaCore

/// The Prometheus listener of `--metrics-listen`: an `HTTPServer` of its own with one
/// route, `GET /metrics`, so that the figures never share the public port (they tell
/// anyone who can read them how busy each route is). Its own requests are not counted.
final class MetricsServer: Sendable {
    let server: HTTPServer

    /// Bound (not yet serving), so a busy port stops the start before the database opens.
    init(host: String, port: UInt16, database: @escaping @Sendable () -> (any SQLDatabase)?,
         metrics: ServerMetrics = .shared, log: Log) throws {
        let router = Router()
        router.get("/metrics") { _ in
            guard let database = database() else { throw HTTPError(status: 503, code: .serviceUnavailable, message: "starting") }
            let text = await metrics.scrape(database: database)
            return HTTPResponse(status: 200, headers: [("Content-Type", MetricsRegistry.contentType)], body: Array(text.utf8))
        }
        var configuration = HTTPServerConfiguration()
        configuration.host = host
        configuration.port = port
        // A scraper or two, and a person with curl.
        configuration.threadPoolSize = 1
        configuration.connectionLimit = 64
        configuration.maxBodySize = 1024
        server = HTTPServer(router: router, configuration: configuration, log: log)
        try server.bind()
    }
}

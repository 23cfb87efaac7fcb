import Foundation
import PortariaCore

/// Turns `Authorization: Bearer <visitor_token>` into the visit it opens (`VisitorAccess`),
/// or a 401: the visitor's side of what `Authenticator` does for residents, used at the
/// route edge so the visit service only ever sees the resolved access.
struct VisitorAuthenticator: Sendable {
    let database: any SQLDatabase
    let clock: any TimeSource
    /// A token serves the gate page for its visit's own lifetime, no longer.
    let visitLifetime: TimeInterval

    /// The visit the request's visitor token opens, with its state; one query.
    func access(_ request: HTTPRequest) async throws -> VisitorAccess {
        guard let header = request.header("authorization") else {
            throw HTTPError.unauthorized("send Authorization: Bearer <visitor_token>")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", parts[1].utf8.count <= 200 else {
            throw HTTPError.unauthorized("Authorization must be 'Bearer <visitor_token>'")
        }
        let hash = Crypto.tokenHash(String(parts[1]))
        let now = clock.now()
        let row = try await database.read { db in
            try db.queryOne("SELECT id, company_id, status, answered_at, created_at FROM visits WHERE visitor_token_hash = ?",
                            .text(hash))
        }
        guard let row, now < (try row.required.date("created_at")).addingTimeInterval(visitLifetime),
              let status = VisitStatus(rawValue: try row.required.string("status")),
              let visitID = VisitID(rawValue: try row.required.string("id")) else {
            throw HTTPError.unauthorized("invalid or expired visitor token")
        }
        return VisitorAccess(visitID: visitID, companyID: try row.required.string("company_id"),
                             status: status, answeredAt: try row.date("answered_at"))
    }
}

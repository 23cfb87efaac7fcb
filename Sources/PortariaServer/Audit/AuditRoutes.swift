import Foundation
import PortariaCore

/// `GET /v1/admin/audit`: the caller's company's trail, newest first, cursor-paginated
/// like `/v1/visits` (permission `admin.users`; another company's trail is unreachable:
/// the company is the caller's own, never a parameter).
struct AuditRoutes {
    let database: any SQLDatabase
    let authenticator: Authenticator

    /// `since`/`until` (RFC 3339), `cursor` (from `next_cursor`), `limit` (1–100, default 50).
    struct Query: Sendable {
        var since: Date?
        var until: Date?
        var cursor: Int64?
        var limit = 50

        init(_ query: [String: String]) throws {
            for name in ["since", "until"] {
                guard let text = query[name] else { continue }
                guard text.utf8.count <= 40, let date = Timestamp.parse(text) else {
                    throw HTTPError.invalidRequest("\(name) must be an RFC 3339 timestamp", field: name)
                }
                if name == "since" { since = date } else { until = date }
            }
            if let text = query["cursor"] {
                guard text.utf8.count <= 40, let bytes = Base64URL.decode(text), let id = Int64(String(decoding: bytes, as: UTF8.self)),
                      id > 0 else {
                    throw HTTPError.invalidRequest("cursor is not one this server issued", field: "cursor")
                }
                cursor = id
            }
            if let text = query["limit"] {
                guard let number = Int(text), (1...100).contains(number) else {
                    throw HTTPError.invalidRequest("limit must be an integer from 1 to 100", field: "limit")
                }
                limit = number
            }
        }
    }

    func register(on router: Router) {
        router.add(APIRoutes.audit) { request in
            let caller = try await authenticator.caller(request, requiring: Permission.adminUsers)
            let query = try Query(request.query)
            let companyID = caller.companyID
            let records = try await database.read { db in
                try AuditLog.list(db, companyID: companyID, since: query.since, until: query.until,
                                  before: query.cursor, limit: query.limit + 1)
            }
            let page = records.prefix(query.limit)
            let next: JSONValue = records.count > query.limit
                ? .string(Base64URL.encode(Array(String(page.last!.id).utf8))) : .null
            return .json(JSONValue.object(["entries": .array(page.map(\.json)), "next_cursor": next]))
        }
    }
}

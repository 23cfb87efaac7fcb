import Foundation
import PortariaCore
import PortariaWebSocket

/// `POST /v1/realtime/tickets` and `GET /v1/realtime`.
struct RealtimeRoutes {
    let feed: RealtimeFeed
    let hub: WebSocketHub
    let tickets: RealtimeTickets
    let authenticator: Authenticator
    let visits: VisitService
    let visitors: VisitorAuthenticator
    /// Origins allowed to open sockets besides the server's own (`--allowed-origins`).
    let allowedOrigins: Set<String>

    struct TicketResponse: Codable, Sendable {
        var ticket: String
        var expiresIn: Int
        enum CodingKeys: String, CodingKey { case ticket, expiresIn = "expires_in" }
    }

    /// Bearer JWTs (residents, operators) and visitor tokens (the gate page) both open the
    /// stream; a JWT has three dot-separated parts, a visitor token none. A visitor token
    /// follows its visit only while the visit is open, and takes a bounded number of
    /// tickets (`VisitService.visitorLive`).
    func subscriber(for request: HTTPRequest, takingTicket: Bool = false) async throws -> Subscriber {
        guard Authenticator.bearerIsVisitorToken(request) else {
            return Subscriber(caller: try await authenticator.caller(request))
        }
        let access = try await visits.visitorLive(try await visitors.access(request), takingTicket: takingTicket)
        return Subscriber(companyID: access.companyID, role: .visitor(visitID: access.visitID.rawValue))
    }

    /// The subscriber a redeemed ticket stands for, re-checked now (the session may have
    /// ended in the 30 s since it was issued).
    func subscriber(forTicket ticket: String) async throws -> Subscriber {
        guard let redeemed = try await tickets.redeem(ticket) else {
            throw HTTPError.unauthorized("invalid, expired or already used ticket")
        }
        if let visitID = redeemed.visitID {
            // The visit may have closed since the ticket was issued.
            guard let id = VisitID(rawValue: visitID), let status = try await visits.status(of: id) else { throw HTTPError.unauthorized("invalid or expired visitor token") }
            if status.isTerminal { throw VisitError.closed(status) }
            return Subscriber(companyID: redeemed.companyID, role: .visitor(visitID: visitID))
        }
        guard let userID = redeemed.userID, let sessionID = redeemed.sessionID,
              let user = try await authenticator.accounts.user(id: userID), !user.disabled,
              try await authenticator.sessionIsLive(sessionID),
              let membership = try await authenticator.accounts.membership(userID: userID, companyID: redeemed.companyID) else {
            throw HTTPError.unauthorized("session ended")
        }
        return Subscriber(caller: Caller(user: user, sessionID: sessionID, membership: membership,
                                         permissions: membership.effectivePermissions))
    }

    /// Browsers always send `Origin`; it must be this server or an allowed origin, so a
    /// page elsewhere cannot ride a user's ticket. Native clients send none.
    func checkOrigin(_ request: HTTPRequest) throws {
        guard let origin = request.header("origin") else { return }
        let host = request.header("host") ?? ""
        let sameOrigin = origin == "http://\(host)" || origin == "https://\(host)"
        guard sameOrigin || allowedOrigins.contains(origin) else {
            throw HTTPError(status: 403, code: .forbidden, message: "origin \(origin.prefix(100)) is not allowed")
        }
    }

    func register(on router: Router) {
        let routes = self
        router.add(APIRoutes.realtimeTicket) { request in
            let subscriber = try await routes.subscriber(for: request, takingTicket: true)
            let ticket = try await routes.tickets.issue(for: subscriber)
            return .json(TicketResponse(ticket: ticket, expiresIn: Int(RealtimeTickets.lifetime)), status: 201)
        }
        router.add(APIRoutes.realtime) { request in
            try routes.checkOrigin(request)
            var since: Int64?
            if let text = request.query["since"] {
                guard let value = Int64(text), value >= 0 else {
                    throw HTTPError.invalidRequest("since must be a non-negative integer (the last seq received)", field: "since")
                }
                since = value
            }
            // Validate the handshake before spending a ticket on a request that cannot upgrade.
            _ = try WebSocketRequest.acceptValue(for: request)
            var subscriber: Subscriber
            if let ticket = request.query["ticket"] {
                subscriber = try await routes.subscriber(forTicket: ticket)
            } else if request.header("authorization") != nil {
                subscriber = try await routes.subscriber(for: request)
            } else {
                throw HTTPError.unauthorized("send Authorization: Bearer … or ?ticket= from POST /v1/realtime/tickets")
            }
            if let device = request.query["device_id"] {
                try require(!device.isEmpty && device.utf8.count <= 128, field: "device_id", "device_id must have 1–128 characters")
                subscriber.deviceID = device
            }
            let joined = subscriber
            let feed = routes.feed
            let resumeAfter = since
            let budget = InboundBudget(limits: feed.limits)
            return try routes.hub.upgrade(request, handlers: .init(
                onOpen: { connection in feed.join(connection, joined, since: resumeAfter) },
                onText: { connection, text in
                    // Size is capped by the hub (1009); rate and backlog here, on the loop
                    // thread, before anything reaches the feed's queue.
                    guard budget.admit() else {
                        // Nothing more of the flood is parsed; the 1008 still reaches the
                        // client (WebSocketConnection's lingering close).
                        connection.failOnLoop(code: .policyViolation, reason: "too many messages")
                        return
                    }
                    feed.received(connection, text, budget: budget)
                },
                onClose: { connection, _, _ in feed.leave(connection) }))
        }
    }
}

import Foundation
import PortariaCore

/// Configuration of the visits capability.
public struct VisitsConfiguration: Sendable {
    /// Visits a source IP may create per minute at one gate (`--gate-limit`).
    public var gateLimit = 10
    /// Rings one unit may receive per minute from every address together
    /// (`--unit-ring-limit`; sizing in docs/ops.md).
    public var unitRingLimit = 6
    /// Rings one gate may place per minute from every address together
    /// (`--gate-ring-limit`; sizing in docs/ops.md).
    public var gateRingLimit = 60
    /// Photos and voice messages live here (`--data-dir`).
    public var dataDirectory = "./portaria-data"
    /// Photos, voice messages and visitor locations older than this are deleted.
    public var retentionDays = 90
    /// Days the audit trail is kept (`--audit-retention-days`).
    public var auditRetentionDays = 730
    /// Unresolved visits expire after this.
    public var visitLifetime: TimeInterval = 24 * 3600
    /// Unknown gate tokens one address may try per `gateGuessWindow`; past that, every
    /// gate request from the address is refused until the window ends (decision 0013).
    public var gateGuessLimit = 20
    public var gateGuessWindow: TimeInterval = 600
    /// Photo and voice-message uploads one visitor token may make (over the visit's life).
    public var uploadsPerVisit = 10
    /// Realtime tickets one visitor token may take per `visitorTicketWindow`.
    public var ticketsPerVisit = 30
    public var visitorTicketWindow: TimeInterval = 600
    /// Bytes of photos and voice messages a company's visitors may store per 24 h
    /// (`--media-quota-mb`); with the retention period it bounds a company's disk use.
    public var mediaBytesPerCompanyPerDay = 512 * 1024 * 1024
    /// Shares of that quota, so anonymous visitors cannot spend it for everyone: one
    /// address may upload a 1/`mediaAddressShareDivisor` of it per 24 h, one visit a
    /// 1/`mediaVisitShareDivisor` over its life — never less than one photo and one voice
    /// message (`MediaShares`).
    public var mediaAddressShareDivisor = 8
    public var mediaVisitShareDivisor = 64
    /// How long after the answer a visitor may still get relay credentials: the longest
    /// call (`CallSession.Limits.maxDuration`).
    public var callWindow: TimeInterval = 15 * 60
    public init() {}
}

/// Visits: the gate, the visitor's own visit, residents' actions and lists. Each change
/// is one write transaction that locks the visit row, feeds the state machine
/// (`VisitMachine`) and writes the row, the timeline, the ring job and the event log
/// together; committed events then go to the in-process `EventBus`.
///
/// The visit row lock — not an in-memory actor — owns each visit's state machine, since
/// several instances may serve the same visit from one PostgreSQL.
public struct VisitService: Sendable {
    let database: any SQLDatabase
    let clock: any TimeSource
    let bus: EventBus
    let configuration: VisitsConfiguration
    let media: MediaStore
    let idempotency: IdempotencyStore
    let log: Log
    /// Called after a change that makes a ring step due now (a decline).
    let wakeScheduler: @Sendable () -> Void
    /// Test hook: runs after the in-flight marker is committed, before the action.
    let beforeIdempotentWork: (@Sendable () async -> Void)?

    public init(database: any SQLDatabase, clock: any TimeSource, bus: EventBus, configuration: VisitsConfiguration,
                log: Log = .shared, wakeScheduler: @escaping @Sendable () -> Void = {},
                beforeIdempotentWork: (@Sendable () async -> Void)? = nil) {
        self.wakeScheduler = wakeScheduler
        self.beforeIdempotentWork = beforeIdempotentWork
        self.database = database
        self.clock = clock
        self.bus = bus
        self.configuration = configuration
        // No quiet period: a file write has no pooled connections that fail once each.
        self.media = MediaStore(root: configuration.dataDirectory,
                                faults: StorageFaultWatch(store: "media directory", quietPeriod: .zero, log: log))
        self.idempotency = IdempotencyStore(database: database)
        self.log = log
    }

    // MARK: Residents and operators

    /// The visit's status alone; nil when there is no such visit.
    func status(of id: VisitID) async throws -> VisitStatus? {
        try await database.read { db in try VisitStore.status(db, id: id) }
    }

    func visit(id: VisitID) async throws -> Visit {
        try await database.read { db in
            guard let row = try VisitStore.load(db, id: id) else { throw VisitError.visitNotFound }
            return try VisitStore.dto(db, row)
        }
    }

    /// Operators (and admins, who hold `operator`) see the whole company; residents
    /// their own units. Anything else is 404, as if it did not exist.
    static func canSee(_ caller: Caller, companyID: String, unitID: UnitID) -> Bool {
        caller.companyID == companyID && (caller.has(Permission.operatorConsole) || caller.unitIDs.contains(unitID))
    }

    public func visit(id: VisitID, caller: Caller) async throws -> Visit {
        // The visit, its timeline and its resolution from one snapshot, so they agree.
        let visit = try await database.readSnapshot { db -> Visit? in
            guard let row = try VisitStore.load(db, id: id), Self.canSee(caller, companyID: row.companyID, unitID: row.unitID) else { return nil }
            return try VisitStore.dto(db, row)
        }
        guard let visit else { throw VisitError.visitNotFound }
        return visit
    }

    /// The bytes of a visit's photo or voice message, for those who may see the visit.
    public func mediaFile(visitID id: VisitID, kind: MediaKind, caller: Caller) async throws -> (contentType: String, bytes: [UInt8]) {
        let file = try await database.read { db in try MediaStore.file(db, visitID: id, kind: kind) }
        guard let file, Self.canSee(caller, companyID: file.companyID, unitID: file.unitID), let bytes = media.read(file.path) else {
            throw VisitError.mediaNotFound(kind)
        }
        return (file.contentType, bytes)
    }

    public enum ListFilter: String, Sendable {
        case pending, history
    }

    /// `GET /v1/visits`: newest first, keyset-paginated on (created_at, id).
    public func list(caller: Caller, filter: ListFilter?, cursor: String?, limit: Int) async throws -> VisitPage {
        var after: (Int64, String)?
        if let cursor {
            guard let bytes = Base64URL.decode(cursor), let text = String(bytes: bytes, encoding: .utf8),
                  let colon = text.firstIndex(of: ":"), let ms = Int64(text[..<colon]),
                  case let id = String(text[text.index(after: colon)...]), VisitID(rawValue: id) != nil else {
                throw VisitError.invalidCursor
            }
            after = (ms, id)
        }
        let operatorView = caller.has(Permission.operatorConsole)
        let units = caller.unitIDs.map(\.rawValue).sorted()
        if !operatorView && units.isEmpty { return VisitPage(visits: [], nextCursor: nil) }
        let companyID = caller.companyID
        let position = after
        let (visits, more) = try await database.readSnapshot { db -> ([Visit], Bool) in
            let rows = try VisitStore.page(db, companyID: companyID, units: operatorView ? nil : units, filter: filter,
                                           after: position, limit: limit + 1)
            return (try VisitStore.dtos(db, Array(rows.prefix(limit))), rows.count > limit)
        }
        var next: String?
        if more, let last = visits.last {
            next = Base64URL.encode(Array("\(RingEngine.ms(last.createdAt)):\(last.id)".utf8))
        }
        return VisitPage(visits: visits, nextCursor: next)
    }

    static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        (try? Array(JSONCoding.encoder().encode(value))) ?? Array("{}".utf8)
    }
}

import Foundation

/// `POST /v1/auth/login`.
public struct LoginRequest: Codable, Sendable {
    public var username: String
    public var password: String
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}

/// The login body, also answered by `generate_access_token` and `refresh`.
public struct LoginResponse: Codable, Sendable {
    public var jwtToken: String
    public var refreshToken: String
    public var expiresIn: Int
    public var userID: String
    public var master: Bool
    public var driver: Bool
    public var companies: [CompanyGrant]

    enum CodingKeys: String, CodingKey {
        case jwtToken = "jwt_token", refreshToken = "refresh_token", expiresIn = "expires_in"
        case userID = "user_id", master, driver, companies
    }

    public init(jwtToken: String, refreshToken: String, expiresIn: Int, userID: String,
                master: Bool, driver: Bool, companies: [CompanyGrant]) {
        self.jwtToken = jwtToken
        self.refreshToken = refreshToken
        self.expiresIn = expiresIn
        self.userID = userID
        self.master = master
        self.driver = driver
        self.companies = companies
    }
}

/// A company the user belongs to, with the user's own grants there and their sectors'.
/// The app resolves the effective set with `Permissions.effective`.
public struct CompanyGrant: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var permissions: [String]
    public var sectors: [SectorGrant]

    public init(id: String, name: String, permissions: [String], sectors: [SectorGrant]) {
        self.id = id
        self.name = name
        self.permissions = permissions
        self.sectors = sectors
    }

    public var effectivePermissions: Set<String> {
        Permissions.effective(user: permissions, sectors: sectors.map(\.permissions))
    }
}

public struct SectorGrant: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var permissions: [String]
    public init(id: String, name: String, permissions: [String]) {
        self.id = id
        self.name = name
        self.permissions = permissions
    }
}

public struct OTPSendRequest: Codable, Sendable {
    public var phone: String
    public init(phone: String) { self.phone = phone }
}

public struct OTPVerifyRequest: Codable, Sendable {
    public var phone: String
    public var code: String
    public init(phone: String, code: String) {
        self.phone = phone
        self.code = code
    }
}

public struct OTPVerifyResponse: Codable, Sendable {
    public var otpToken: String
    enum CodingKeys: String, CodingKey { case otpToken = "otp_token" }
    public init(otpToken: String) { self.otpToken = otpToken }
}

public struct GenerateAccessTokenRequest: Codable, Sendable {
    public var otpToken: String
    enum CodingKeys: String, CodingKey { case otpToken = "otp_token" }
    public init(otpToken: String) { self.otpToken = otpToken }
}

public struct RefreshRequest: Codable, Sendable {
    public var refreshToken: String
    enum CodingKeys: String, CodingKey { case refreshToken = "refresh_token" }
    public init(refreshToken: String) { self.refreshToken = refreshToken }
}

/// `POST /v1/auth/logout`: the bearer's session is revoked; a refresh token in the body
/// revokes that token's session (useful when the access token already expired).
public struct LogoutRequest: Codable, Sendable {
    public var refreshToken: String?
    enum CodingKeys: String, CodingKey { case refreshToken = "refresh_token" }
    public init(refreshToken: String? = nil) { self.refreshToken = refreshToken }
}

/// `GET /v1/me`.
public struct MeResponse: Codable, Sendable, Equatable {
    public var user: UserSummary
    public var company: CompanySummary
    public var profile: Profile
    public var units: [UnitSummary]
    public var permissions: [String]

    public init(user: UserSummary, company: CompanySummary, profile: Profile, units: [UnitSummary], permissions: [String]) {
        self.user = user
        self.company = company
        self.profile = profile
        self.units = units
        self.permissions = permissions
    }
}

public struct UserSummary: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var username: String
    public init(id: String, name: String, username: String) {
        self.id = id
        self.name = name
        self.username = username
    }
}

public struct CompanySummary: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    /// The condominium's IANA time zone (`America/Sao_Paulo`): apps write times in it,
    /// not in the phone's zone. Optional: older servers do not send it.
    public var timeZone: String?
    public init(id: String, name: String, timeZone: String? = nil) {
        self.id = id
        self.name = name
        self.timeZone = timeZone
    }
    enum CodingKeys: String, CodingKey { case id, name, timeZone = "time_zone" }
}

public struct UnitSummary: Codable, Sendable, Equatable {
    public var id: String
    public var label: String
    public init(id: String, label: String) {
        self.id = id
        self.label = label
    }
}

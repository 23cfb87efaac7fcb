import Foundation

/// Pruning SMS codes and the tokens they were exchanged for (decision 0055). Both live
/// minutes (`AuthService.otpLifetime`, `otpTokenLifetime`) and nothing reads an expired
/// one: the per-phone send limits count in `rate_limits`, not here. A day past expiry is
/// margin for clock skew between instances and for support; the codes are hashes, but the
/// phone numbers are personal data (LGPD) with no reason to stay.
extension OTPStore {
    /// How long an expired code or token is kept.
    static let keptAfterExpiry: TimeInterval = 86_400

    /// Deletes codes and tokens that expired before `cutoff`, in `db`'s transaction.
    /// Unbatched: the send limits bound how many rows a day can add.
    static func prune(_ db: any SQLConnection, expiredBefore cutoff: Date) throws -> (codes: Int, tokens: Int) {
        let codes = try db.execute("DELETE FROM otp_codes WHERE expires_at < ?", .date(cutoff))
        let tokens = try db.execute("DELETE FROM otp_tokens WHERE expires_at < ?", .date(cutoff))
        return (codes, tokens)
    }
}

import Foundation
import PortariaClient
import PortariaCore
import Testing

/// The apps' login flow (PortariaClient.SessionManager) against the real server.
@Suite("Client session")
struct SessionManagerTests {
    func session(_ server: TestServer) -> (SessionManager, InMemorySecureStore, InMemoryPreferences) {
        let secure = InMemorySecureStore()
        let preferences = InMemoryPreferences()
        let api = APIClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)
        return (SessionManager(api: api, secure: secure, preferences: preferences), secure, preferences)
    }

    @Test("maria: company selection, perms_user, concurrent refreshes share one rotation, logout")
    func mariaFlow() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (session, secure, preferences) = self.session(server)
            let result = try await session.login(username: "maria", password: "demo1234")
            guard case .needsCompanySelection(let companies) = result else {
                Issue.record("maria has two companies, got \(result)")
                return
            }
            let demo = try #require(companies.first { $0.name == "Residencial Demo" })
            let permissions = try await session.selectCompany(id: demo.id)
            #expect(permissions.contains(Permission.visitsResolve))
            #expect(preferences.string(for: SessionKeys.selectedCompany) == demo.id)
            #expect(Set(preferences.strings(for: SessionKeys.permissions)) == permissions)
            #expect(try secure.string(for: SessionKeys.jwtToken) != nil)

            let me = try await session.me()
            #expect(me.company.name == "Residencial Demo")
            #expect(me.units.map(\.label) == ["A-101"])
            #expect(Set(me.permissions) == permissions)

            // Five screens refreshing at once must not look like token theft to the server.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<5 { group.addTask { try await session.refresh() } }
                try await group.waitForAll()
            }
            #expect(try await session.me().user.username == "maria")

            try await session.logout()
            #expect(try secure.string(for: SessionKeys.jwtToken) == nil)
        }
    }

    @Test("SMS code on the client: send, a wrong code is INVALID_OTP, the logged code logs maria in; booleans stay booleans")
    func smsCode() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (session, secure, preferences) = self.session(server)
            let phone = "+5511999990001"
            try await session.requestCode(phone: phone)
            let code = try await SecuritySuites.OTPAbuseTests.loggedCode(server, phone: phone)
            do {
                _ = try await session.verifyCode(phone: phone, code: code == "000000" ? "111111" : "000000")
                Issue.record("a wrong code was accepted")
            } catch APIClientError.server(let status, let error) {
                #expect(status == 401)
                #expect(error.code == .invalidOTP)
            }
            let result = try await session.verifyCode(phone: phone, code: code)
            guard case .needsCompanySelection(let companies) = result else {
                Issue.record("maria has two companies, got \(result)")
                return
            }
            #expect(Set(companies.map(\.name)) == ["Residencial Demo", "Condomínio Azul"])
            #expect(try secure.string(for: SessionKeys.jwtToken) != nil)
            #expect(preferences.all[SessionKeys.master] == .bool(false))
            #expect(preferences.all[SessionKeys.driver] == .bool(false))
            _ = try await session.selectCompany(id: try #require(companies.first { $0.name == "Residencial Demo" }).id)
            #expect(try await session.me().user.username == "maria")
        }
    }

    @Test("a single-company user is ready at once; a wrong password is the server's 401")
    func singleCompanyAndWrongPassword() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (session, _, _) = self.session(server)
            let result = try await session.login(username: "carlos", password: "demo1234")
            #expect(result == .ready(try #require(await session.availableCompanies.first)))
            #expect(try await session.me().company.name == "Condomínio Azul")

            let (other, _, _) = self.session(server)
            do {
                _ = try await other.login(username: "carlos", password: "wrong-password")
                Issue.record("wrong password accepted")
            } catch APIClientError.server(let status, let error) {
                #expect(status == 401)
                #expect(error.code == .invalidCredentials)
            }
        }
    }
}

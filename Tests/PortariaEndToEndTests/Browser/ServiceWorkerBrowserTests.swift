import Foundation
import PortariaCore
import PortariaTestSupport
import Testing

/// The resident app's service worker in headless Chromium, with the app's tab closed:
/// pushes are delivered through the DevTools protocol (`ServiceWorker.deliverPushMessage`,
/// a real push event with the payload the server's Web Push provider sends), and a tap on
/// a notification action is dispatched inside the worker (`notificationclick`), since no
/// DevTools command clicks a system notification.
@Suite("Resident app service worker in Chromium", .serialized, .requires(.chromium))
struct ServiceWorkerBrowserTests {
    let defects = ResidentAppDefectTests()

    /// Logs Maria in at `base`, waits for the worker, allows notifications, then leaves the
    /// app for a plain file of its origin (the tab is "closed": no app script runs).
    func installAndClose(_ browser: WebDriver, base: String, waitingFor visit: String) async throws {
        // Allowed before the app starts, as a resident who said yes long ago.
        try await browser.cdp("Browser.grantPermissions", ["permissions": ["notifications"], "origin": base])
        try await defects.loginAsMaria(browser, base: base, waitingFor: visit)
        let ready = try await browser.executeAsync("""
            const done = arguments[arguments.length - 1];
            navigator.serviceWorker.ready.then((r) => done(!!r.active && r.scope)).catch((e) => done(String(e)));
            """)
        #expect(ready as? String == "\(base)/app/", "\(String(describing: ready))")
        try await browser.navigate("\(base)/app/manifest.webmanifest")
        try await browser.cdp("ServiceWorker.enable")
    }

    /// The notifications the worker shows now: [title, body, tag, requireInteraction, action titles, vibrate count].
    func notifications(_ browser: WebDriver) async throws -> [[String: Any]] {
        let value = try await browser.executeAsync("""
            const done = arguments[arguments.length - 1];
            navigator.serviceWorker.getRegistration('/app/')
              .then((r) => r.getNotifications())
              .then((list) => done(list.map((n) => ({ title: n.title, body: n.body, tag: n.tag, requireInteraction: n.requireInteraction,
                                                     actions: n.actions.map((a) => a.title), vibrate: n.vibrate.length }))))
              .catch((e) => done([{ error: String(e) }]));
            """)
        return value as? [[String: Any]] ?? []
    }

    /// A push to the app's worker, as the push service would deliver it; returns once the
    /// worker showed the notification tagged for the push's visit.
    ///
    /// The registration is a fresh profile's first (id "0"; WebDriver gets no DevTools
    /// events to learn it). Right after `ServiceWorker.enable` DevTools may not know the
    /// registration yet and drops the push without an error, so it is sent again until the
    /// notification shows (a repeat only re-shows the same tag).
    func push(_ browser: WebDriver, base: String, _ payload: [String: String], shows: @escaping ([String: Any]) -> Bool) async throws {
        let data = String(decoding: try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]), as: UTF8.self)
        let tag = "visit-\(payload["visit_id"] ?? "")"
        for attempt in 1...4 {
            try await browser.cdp("ServiceWorker.deliverPushMessage", ["origin": base, "registrationId": "0", "data": data])
            do {
                try await browser.waitFor("the notification of push \(payload["type"] ?? "") (delivery \(attempt))", within: .seconds(attempt == 4 ? 20 : 5)) {
                    try await notifications(browser).contains { $0["tag"] as? String == tag && shows($0) }
                }
                return
            } catch where attempt < 4 {
                continue
            }
        }
    }

    /// Runs `expression` inside the app's service worker (fire and forget: the effect is checked after).
    func inWorker(_ browser: WebDriver, _ expression: String) async throws {
        let targets = try await browser.cdp("Target.getTargets") as? [String: Any]
        let infos = targets?["targetInfos"] as? [[String: Any]] ?? []
        let worker = try #require(infos.first { $0["type"] as? String == "service_worker" && ($0["url"] as? String ?? "").hasSuffix("/app/sw.js") },
                                  "no service worker target: \(infos)")
        let attached = try await browser.cdp("Target.attachToTarget", ["targetId": worker["targetId"] as Any, "flatten": false]) as? [String: Any]
        let session = try #require(attached?["sessionId"] as? String)
        let message = try JSONSerialization.data(withJSONObject: ["id": 1, "method": "Runtime.evaluate", "params": ["expression": expression]])
        try await browser.cdp("Target.sendMessageToTarget", ["sessionId": session, "message": String(decoding: message, as: UTF8.self)])
    }

    /// Taps `action` on the notification of `visit`.
    func tap(_ browser: WebDriver, action: String, visit: String) async throws {
        try await inWorker(browser, """
            self.registration.getNotifications({ tag: 'visit-\(visit)' }).then((list) =>
              self.dispatchEvent(new NotificationEvent('notificationclick', { notification: list[0], action: '\(action)' })))
            """)
    }

    func deliveryPayload(_ visit: String) -> [String: String] {
        ["type": "delivery", "visit_id": visit, "push_id": UUID().uuidString.lowercased(), "caller_name": "Entregador Rápido",
         "unit_label": "A-101", "kind": "delivery", "carrier": "Loggi", "geofence_status": "away", "geofence_distance_m": "343",
         "expires_at": "2030-01-01T00:00:00Z"]
    }

    @Test("A delivery rings with the tab closed; Autorizar subida resolves it once, though the first send's answer was lost")
    func deliveryResolvedFromTheNotification() async throws {
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Entregador Rápido", kind: "delivery")
            // The first resolve reaches the server and is applied, but its answer never
            // comes back (the connection is reset): the worst failure for a tap.
            let resolves = Locked(0)
            let proxy = try FaultyProxy(upstreamPort: server.port) { method, path, _ in
                guard method == "POST", path.hasSuffix("/resolve") else { return .pass }
                return resolves.withLock { count in
                    count += 1
                    return count == 1 ? .resetAfterRequest : .pass
                }
            }
            defer { proxy.stop() }
            try await WebDriver.with { browser in
                try await installAndClose(browser, base: proxy.url, waitingFor: visit)
                try await push(browser, base: proxy.url, deliveryPayload(visit)) { _ in true }
                let shown = try #require(try await notifications(browser).first { $0["tag"] as? String == "visit-\(visit)" })
                #expect(shown["title"] as? String == "Entrega Loggi para A-101")
                let body = shown["body"] as? String ?? ""
                #expect(body.hasPrefix("Entregador Rápido · ⚠ A 340m da portaria"), "\(body)")
                #expect(shown["requireInteraction"] as? Bool == true)
                #expect((shown["vibrate"] as? Int ?? 0) > 0)
                // Chromium shows at most Notification.maxActions buttons (2): the worker asks
                // for all three; what does not fit is said in the body.
                let maxActions = try await browser.execute("return Notification.maxActions") as? Int ?? 0
                let actions = shown["actions"] as? [String] ?? []
                #expect(actions == Array(["Autorizar subida", "Deixar na portaria", "Recusar"].prefix(maxActions)), "\(actions)")
                if maxActions < 3 { #expect(body.contains("Recusar"), "\(body)") }

                try await tap(browser, action: "authorize", visit: visit)
                try await browser.waitFor("the outcome notification", within: .seconds(30)) {
                    try await notifications(browser).contains { $0["tag"] as? String == "visit-\(visit)" && $0["body"] as? String == "Entrega: autorizada ✓" }
                }
            }
            let sent = proxy.seen("/resolve").filter { $0.method == "POST" }
            #expect(sent.count >= 2, "the lost answer was not retried: \(sent.count)")
            #expect(Set(sent.map(\.idempotencyKey)).count == 1, "every attempt must carry the tap's one key")
            #expect(sent.first?.fault == .resetAfterRequest && sent.first?.status == 200)
            #expect(sent.dropFirst().allSatisfy { $0.replayed }, "a retry was applied again instead of replayed")
            let maria = try await RealtimeTests.login(server, "maria")
            let read = try await server.request("GET", "/v1/visits/\(visit)", headers: [
                ("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID),
            ]).json()
            let resolution = try #require(read["resolution"] as? [String: Any])
            #expect(resolution["action"] as? String == "authorize")
            #expect((resolution["by"] as? [String: Any])?["name"] as? String == "Maria Souza")
            let attempts = read["attempts"] as? [[String: Any]] ?? []
            #expect(attempts.filter { $0["kind"] as? String == "resolution" }.count == 1, "\(attempts)")
        }
    }

    @Test("A ring notification is replaced by “João negou às HH:MM” when the ring is cancelled")
    func cancellationReplacesTheRing() async throws {
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Ana Visitante")
            let base = "http://127.0.0.1:\(server.port)"
            try await WebDriver.with { browser in
                try await installAndClose(browser, base: base, waitingFor: visit)
                try await push(browser, base: base, ["type": "visit.ring", "visit_id": visit, "push_id": UUID().uuidString.lowercased(),
                                                     "caller_name": "Ana Visitante", "unit_label": "A-101", "kind": "visit",
                                                     "geofence_status": "at_entrance", "expires_at": "2030-01-01T00:00:00Z"]) {
                    $0["title"] as? String == "Ana Visitante está na portaria"
                }
                let ring = try #require(try await notifications(browser).first { $0["tag"] as? String == "visit-\(visit)" })
                #expect(ring["body"] as? String == "A-101 · ✓ Na entrada")
                #expect(ring["actions"] as? [String] == ["Autorizar", "Negar"])

                let joao = try await RealtimeTests.login(server, "joao")
                let denied = try await server.request("POST", "/v1/visits/\(visit)/resolve", headers: [
                    ("Authorization", "Bearer \(joao.token)"), ("X-Company-Id", joao.companyID),
                    ("Content-Type", "application/json"), ("Idempotency-Key", UUID().uuidString),
                ], body: Array(#"{"action":"deny"}"#.utf8))
                try #require(denied.status == 200, "\(denied.text)")
                let resolvedAt = try #require((try denied.json()["resolution"] as? [String: Any])?["at"] as? String)
                let expected = "João negou às \(try defects.saoPaulo(resolvedAt))"
                try await push(browser, base: base, ["type": "visit.ring_cancelled", "visit_id": visit,
                                                     "push_id": UUID().uuidString.lowercased(), "reason": "resolved"]) {
                    $0["body"] as? String == expected
                }
                try await browser.waitFor("the ring replaced by who decided") {
                    let list = try await notifications(browser).filter { $0["tag"] as? String == "visit-\(visit)" }
                    return list.count == 1 && list[0]["body"] as? String == expected && (list[0]["actions"] as? [String])?.isEmpty == true
                }
            }
        }
    }

    @Test("A delivery someone else decided is replaced by the server's sentence, without its buttons")
    func deliveryResolvedElsewhere() async throws {
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Entregador Rápido", kind: "delivery")
            let base = "http://127.0.0.1:\(server.port)"
            try await WebDriver.with { browser in
                try await installAndClose(browser, base: base, waitingFor: visit)
                try await push(browser, base: base, deliveryPayload(visit)) { ($0["actions"] as? [String])?.isEmpty == false }
                try await push(browser, base: base, ["type": "delivery.resolved", "visit_id": visit, "push_id": UUID().uuidString.lowercased(),
                                                     "unit_label": "A-101", "text": "João autorizou às 14:32", "action": "authorize",
                                                     "resolved_at": "2030-01-01T17:32:00Z", "via": "app", "resolved_by_name": "João Souza"]) {
                    $0["body"] as? String == "João autorizou às 14:32"
                }
                let list = try await notifications(browser).filter { $0["tag"] as? String == "visit-\(visit)" }
                #expect(list.count == 1 && (list.first?["actions"] as? [String])?.isEmpty == true, "\(list)")
            }
        }
    }

    @Test("When the browser replaces its push subscription, the worker registers the new one for the same device (tab closed)")
    func subscriptionChangeReRegisters() async throws {
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Visitante Assinatura")
            let base = "http://127.0.0.1:\(server.port)"
            try await WebDriver.with { browser in
                try await installAndClose(browser, base: base, waitingFor: visit)
                // The device the page registered last (a headless browser has no push
                // service to subscribe with, so the test writes what the page keeps).
                let stored = try await browser.executeAsync("""
                    const done = arguments[arguments.length - 1];
                    const open = indexedDB.open('portaria');
                    open.onsuccess = () => {
                      const tx = open.result.transaction('kv', 'readwrite');
                      tx.objectStore('kv').put({ installation_id: 'web-subscription-test', platform: 'web', device_name: 'Navegador',
                        locale: 'pt-BR', capabilities: { notifications_enabled: true } }, 'device');
                      tx.oncomplete = () => done(true);
                      tx.onerror = () => done(String(tx.error));
                    };
                    open.onerror = () => done(String(open.error));
                    """)
                try #require(stored as? Bool == true, "\(String(describing: stored))")
                // Chromium never fires the event itself: it is dispatched in the worker with a
                // new subscription of the browser's push service (a real P-256 key).
                try await inWorker(browser, """
                    (async () => {
                      const b64 = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
                      const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
                      const keys = { p256dh: b64(await crypto.subtle.exportKey('raw', pair.publicKey)), auth: b64(crypto.getRandomValues(new Uint8Array(16))) };
                      const event = new Event('pushsubscriptionchange');
                      event.newSubscription = { toJSON: () => ({ endpoint: 'https://fcm.googleapis.com/fcm/send/renewed-subscription', keys }) };
                      self.dispatchEvent(event);
                    })()
                    """)
                let maria = try await RealtimeTests.login(server, "maria")
                var devices: [[String: Any]] = []
                try await browser.waitFor("the renewed subscription on the server", within: .seconds(30)) {
                    devices = try await server.request("GET", "/v1/devices", headers: [
                        ("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID),
                    ]).json()["devices"] as? [[String: Any]] ?? []
                    return devices.contains { $0["installation_id"] as? String == "web-subscription-test" }
                }
                let device = try #require(devices.first { $0["installation_id"] as? String == "web-subscription-test" })
                #expect(device["platform"] as? String == "web")
                #expect(device["push_token_status"] as? String == "active", "\(device)")
            }
        }
    }

    @Test("Opened from a delivery's notification (./#visita=<id>), the app shows that visit with all three decisions, focused: the one the notification had no room for is one tap away")
    func plainTapOpensTheVisit() async throws {
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Entregador Rápido", kind: "delivery")
            let base = "http://127.0.0.1:\(server.port)"
            try await WebDriver.with { browser in
                try await installAndClose(browser, base: base, waitingFor: visit)
                // A plain tap opens the app at `./#visita=<id>` (the worker's `openWindow`; a tap
                // dispatched by a test may not open windows, so the test opens that address).
                try await browser.navigate("\(base)/app/#visita=\(visit)")
                try await browser.waitFor("the visit's decisions, focused", within: .seconds(30)) {
                    try await browser.execute("""
                        const item = document.querySelector(arguments[0]);
                        return !!item && item.contains(document.activeElement) && !!document.activeElement.dataset.action
                          && item.querySelectorAll('button[data-action=authorize], button[data-action=leave_at_concierge], button[data-action=deny]').length === 3;
                        """, ["li.visit[data-id='\(visit)']"]) as? Bool == true
                }
            }
        }
    }
}

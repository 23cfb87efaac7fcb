import Foundation
import PortariaTestSupport
import Testing

/// The resident app when the network comes and goes, in headless Chromium against the real
/// `portaria serve --demo`, the network cut and restored with the DevTools protocol
/// (`Network.emulateNetworkConditions`, which also fires the page's `offline`/`online`).
@Suite("Resident web app and the network in Chromium", .serialized, .requires(.chromium))
struct ResidentAppConnectivityTests {
    let app = ResidentAppBrowserTests()
    let defects = ResidentAppDefectTests()

    func network(_ browser: WebDriver, online: Bool) async throws {
        try await browser.cdp("Network.enable")
        try await browser.cdp("Network.emulateNetworkConditions", [
            "offline": !online, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1,
        ])
    }

    @Test("A decision tapped offline is sent the moment the network is back, whatever its back-off, and never reads “Sem conexão” once online")
    func queuedDecisionGoesOutWhenOnline() async throws {
        try await TestServer.with(["--demo"]) { server in
            let id = try await app.ring(server, name: "Visitante Rede")
            try await WebDriver.with { browser in
                try await defects.loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: id)
                try await defects.holdStill(browser, id)
                try await network(browser, online: false)
                try await browser.click(css: "li.visit[data-id='\(id)'] button[data-action=authorize]")
                try await browser.waitForText("li.visit[data-id='\(id)'] .message", containing: "Sem conexão")
                // Minutes offline grow the back-off: the stored tap's next try is ten minutes
                // away (set under the queue's own lock, so no attempt in flight undoes it).
                let held = try await browser.executeAsync("""
                    const done = arguments[arguments.length - 1];
                    navigator.locks.request('portaria.actions', () => new Promise((resolve) => {
                      const open = indexedDB.open('portaria');
                      open.onsuccess = () => {
                        const db = open.result;
                        const tx = db.transaction('actions', 'readwrite');
                        const store = tx.objectStore('actions');
                        let count = 0;
                        store.getAll().onsuccess = (event) => {
                          for (const record of event.target.result) {
                            if (record.state !== 'pending') continue;
                            record.nextAt = Date.now() + 600000;
                            store.put(record);
                            count += 1;
                          }
                        };
                        tx.oncomplete = () => { db.close(); resolve(); done(count); };
                      };
                    }));
                    """) as? Int
                try #require(held == 1, "expected one pending tap, found \(String(describing: held))")
                // Everything the visit's line says from the moment the network is back.
                try await browser.execute("""
                    const item = document.querySelector(arguments[0]);
                    window.saidOnline = [];
                    const note = () => window.saidOnline.push(item.querySelector('.message')?.textContent || '');
                    window.addEventListener('online', () => {
                      note();
                      new MutationObserver(note).observe(item, { subtree: true, childList: true, characterData: true });
                    });
                    """, ["li.visit[data-id='\(id)']"])
                try await network(browser, online: true)
                // Well inside the ten minutes: only "sent at once" gets here.
                try await browser.waitForText("li.visit[data-id='\(id)'] .message", containing: "Visita autorizada", within: .seconds(45))
                let resolution = try #require(try await defects.visit(server, id)["resolution"] as? [String: Any])
                #expect(resolution["action"] as? String == "authorize")
                let said = try await browser.execute("return window.saidOnline") as? [String] ?? []
                #expect(!said.dropFirst().contains { $0.contains("Sem conexão") }, "online, the line said: \(said)")
                #expect(said.contains("Enviando…"), "the line never said it was sending: \(said)")
            }
        }
    }
}

// The resident app's service worker: rings with the tab closed and resolves from the
// notification without opening a window.
//
// - `push` (Web Push, decision 0025; the payload is the FCM data message): a ring shows a
//   notification that stays until acted on (requireInteraction), vibrates, and names the
//   visitor, the unit and the geofence badge; a delivery adds Autorizar subida / Deixar na
//   portaria / Recusar; a cancellation closes the ringing notification and replaces it
//   with what happened ("Maria atendeu", "Maria autorizou às 14:32").
// - `notificationclick` on an action: the tap goes into the durable action queue
//   (IndexedDB, shared with the page: key made now, stored before the first send) and is
//   sent with retries; its terminal answer is notified. A plain click opens the app.
// - `sync` (Background Sync) sends whatever the queue still holds.
// - `fetch`: the app's own files (this folder and ../shared/) come from the network when
//   it answers and from a copy kept at install otherwise, so the installed app opens
//   offline in pt-BR (login or home, with its queued taps) instead of the browser's
//   English error page. The API (/v1/) is never cached or answered from here.
// - `pushsubscriptionchange`: the browser replaced the push subscription (it expired or
//   was renewed): the new one is registered with the server at once, so rings keep
//   reaching this browser.

import { drain, enqueue, pendingActions } from "../shared/actions.js";
import { request } from "../shared/api.js";
import { authorized, loadSession } from "../shared/session.js";
import { getValue } from "../shared/store.js";
import * as text from "../shared/text.js";

const ICON = "icon-192.png";
const BADGE = "badge-72.png";
const SYNC_TAG = "portaria-actions";
/** How long a notification action keeps retrying inside its own event (browsers stop a worker after ~5 min). */
const ACTION_WINDOW_MS = 120000;

/** The app shell kept for offline starts; the version changes when the list does. */
const SHELL_CACHE = "portaria-shell-1";
const SHELL = ["./", "app.css", "app.js", "manifest.webmanifest", "icon-192.png", "badge-72.png",
  "../shared/actions.js", "../shared/api.js", "../shared/call.js", "../shared/call.css", "../shared/session.js",
  "../shared/store.js", "../shared/text.js", "../shared/tokens.css"];

self.addEventListener("install", (event) => {
  self.skipWaiting();
  // One file that fails to load does not stop the worker: it is fetched again on use.
  event.waitUntil(caches.open(SHELL_CACHE)
    .then((cache) => Promise.all(SHELL.map((path) => cache.add(new Request(path, { cache: "reload" })).catch(() => {}))))
    .catch(() => {}));
});
self.addEventListener("activate", (event) => event.waitUntil((async () => {
  for (const name of await caches.keys()) if (name.startsWith("portaria-shell-") && name !== SHELL_CACHE) await caches.delete(name);
  await self.clients.claim();
})()));

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  const scope = new URL(self.registration.scope);
  const shared = new URL("../shared/", scope).pathname;
  if (url.origin !== scope.origin || !(url.pathname.startsWith(scope.pathname) || url.pathname.startsWith(shared))) return;
  event.respondWith(fromNetworkOrShell(request, url, scope));
});

/** The network's answer (kept as the new copy), else the kept copy, else a pt-BR page. */
async function fromNetworkOrShell(request, url, scope) {
  const cache = await caches.open(SHELL_CACHE).catch(() => null);
  const key = request.mode === "navigate" ? new URL("./", scope).href : url.href;
  try {
    const response = await fetch(request);
    if (cache && response.ok && (request.mode === "navigate" ? url.pathname === scope.pathname || url.pathname === `${scope.pathname}index.html` : true)) {
      cache.put(key, response.clone()).catch(() => {});
    }
    return response;
  } catch (error) {
    const kept = cache ? await cache.match(key) : null;
    if (kept) return kept;
    if (request.mode === "navigate") return offlinePage();
    throw error;
  }
}

/** What a start offline shows when not even the shell was kept yet. */
function offlinePage() {
  const html = `<!doctype html><html lang="pt-BR"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Portaria — sem conexão</title>
<style>body{margin:0;font:18px/1.45 system-ui,sans-serif;color:#111}header{background:#0b3d91;color:#fff;padding:1rem}main{padding:1rem}</style>
</head><body><header><h1>Portaria</h1></header><main><h2>Sem conexão</h2>
<p>Este aparelho está sem internet. Abra o app de novo quando a conexão voltar.</p></main></body></html>`;
  return new Response(html, { status: 503, headers: { "Content-Type": "text/html; charset=utf-8" } });
}

self.addEventListener("pushsubscriptionchange", (event) => {
  extend(event, resubscribe(event.newSubscription || null));
});

/**
 * Registers `subscription` (or a new one, made here, when the browser gave none) for the
 * device the page registered last (`device` in the shared store: installation id, name,
 * capabilities). Without a session or a device the page does it at its next start.
 */
async function resubscribe(subscription) {
  const device = await getValue("device").catch(() => null);
  if (!device) return;
  if (!subscription) {
    const { public_key: key } = await request("GET", "/v1/push/web/vapid_public_key");
    subscription = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64url(key) });
  }
  const { endpoint, keys } = subscription.toJSON();
  await authorized("POST", "/v1/devices", { body: { ...device, web_push: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } } } });
}

function base64url(value) {
  const base64 = value.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (value.length % 4)) % 4);
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

self.addEventListener("push", (event) => {
  let payload = {};
  try { payload = event.data ? event.data.json() : {}; } catch { payload = {}; }
  event.waitUntil(onPush(payload));
});

self.addEventListener("notificationclick", (event) => {
  extend(event, onNotificationClick(event.notification, event.action));
});

self.addEventListener("sync", (event) => {
  if (event.tag === SYNC_TAG) event.waitUntil(sendQueued());
});

/**
 * `event.waitUntil`, which throws for an event the browser did not dispatch itself (one
 * dispatched from DevTools, as the tests do): the work then simply runs unextended.
 */
function extend(event, promise) {
  try {
    event.waitUntil(promise);
  } catch {
    promise.catch(() => {});
  }
}

function tagFor(visitID) {
  return `visit-${visitID}`;
}

async function onPush(payload) {
  const visitID = payload.visit_id || "";
  switch (payload.type) {
    case "visit.ring":
    case "delivery":
      await showRing(payload);
      break;
    case "visit.ring_cancelled":
      await showCancelled(payload);
      break;
    case "delivery.resolved":
      // Someone else (or the unit's rule) decided: the server's sentence replaces the
      // delivery's notification, buttons and all ("Maria autorizou às 14:32").
      for (const shown of await self.registration.getNotifications({ tag: tagFor(visitID) })) shown.close();
      await self.registration.showNotification("Portaria", {
        body: payload.text || "Entrega resolvida", tag: tagFor(visitID), silent: true, icon: ICON, badge: BADGE,
        data: { visit_id: visitID, ended: true },
      });
      break;
    case "test":
      await self.registration.showNotification("Portaria", { body: payload.text || "Notificações funcionando.", icon: ICON, badge: BADGE });
      break;
    default:
      // Every push must show something (userVisibleOnly); an unknown type says little.
      await self.registration.showNotification("Portaria", { body: "Abra o app para ver a novidade.", icon: ICON, badge: BADGE,
        tag: visitID ? tagFor(visitID) : undefined });
  }
  await acknowledge(payload);
}

/** The notification of a visitor or courier at the gate. */
async function showRing(payload) {
  const delivery = payload.kind === "delivery";
  const name = payload.caller_name || "Visitante";
  const unit = payload.unit_label || "";
  const badge = text.geofenceBadge(payload.geofence_status, payload.geofence_distance_m);
  const title = delivery ? `Entrega${payload.carrier ? ` ${payload.carrier}` : ""} para ${unit}` : `${name} está na portaria`;
  const body = (delivery ? `${name} · ${badge}` : `${unit} · ${badge}`);
  const actions = delivery
    ? [{ action: "authorize", title: "Autorizar subida" }, { action: "leave_at_concierge", title: "Deixar na portaria" },
      { action: "deny", title: "Recusar" }]
    : [{ action: "authorize", title: "Autorizar" }, { action: "deny", title: "Negar" }];
  // Chromium shows two buttons (Notification.maxActions); the rest is one tap away.
  const shown = typeof Notification !== "undefined" && Notification.maxActions ? Notification.maxActions : actions.length;
  const hidden = actions.slice(shown).map((item) => item.title);
  const hint = hidden.length ? ` · ${hidden.join(" ou ")}: toque para abrir` : "";
  await self.registration.showNotification(title, {
    body: body + hint, tag: tagFor(payload.visit_id), renotify: true, requireInteraction: true,
    vibrate: [600, 300, 600, 300, 600, 300, 600], icon: ICON, badge: BADGE, actions,
    timestamp: Date.now(), data: { ...payload, kind: delivery ? "delivery" : "visit" },
  });
}

/** The ring stopped: replace it with what happened, read from the visit. */
async function showCancelled(payload) {
  const visitID = payload.visit_id || "";
  const session = await loadSession().catch(() => null);
  let sentence = "";
  try {
    const visit = await authorized("GET", `/v1/visits/${encodeURIComponent(visitID)}`);
    sentence = describeEnd(visit, session);
  } catch {
    sentence = "";
  }
  for (const shown of await self.registration.getNotifications({ tag: tagFor(visitID) })) shown.close();
  if (!sentence) sentence = payload.reason === "expired" ? "O toque terminou sem resposta" : "A chamada foi encerrada";
  await self.registration.showNotification("Portaria", {
    body: sentence, tag: tagFor(visitID), renotify: false, silent: true, icon: ICON, badge: BADGE,
    data: { visit_id: visitID, ended: true },
  });
}

/** "Maria atendeu", "Maria autorizou às 14:32", "Você já …", "O visitante desistiu às 14:32". */
function describeEnd(visit, session) {
  const zone = session && session.timeZone;
  const me = session && session.userID;
  if (visit.resolution) return text.decidedBy(visit.resolution, me, zone);
  if (visit.status === "answered" && visit.answered_by) {
    return visit.answered_by.id === me ? "Você atendeu em outro aparelho" : `${text.firstName(visit.answered_by.name)} atendeu`;
  }
  if (["cancelled", "expired"].includes(visit.status)) return text.closed(visit.status, visit.kind, visit.updated_at, zone);
  return "";
}

/**
 * The receipt that this browser got the push (push health counts unacknowledged ones).
 * A payload's `ack_token` proves it without a session (the resident may have been logged
 * out for days); without one, the session's bearer does.
 */
async function acknowledge(payload) {
  const pushID = payload.push_id;
  if (!pushID) return;
  const path = `/v1/push/${encodeURIComponent(pushID)}/ack`;
  try {
    if (typeof payload.ack_token === "string" && payload.ack_token) {
      await request("POST", path, { body: { ack_token: payload.ack_token } });
    } else {
      await authorized("POST", path, { body: {} });
    }
  } catch { /* a receipt is evidence, not a condition: the notification is already shown */ }
}

async function onNotificationClick(notification, action) {
  const data = notification.data || {};
  if (action && ["authorize", "deny", "leave_at_concierge"].includes(action) && data.visit_id) {
    notification.close();
    const record = await enqueue({ visitID: data.visit_id, action, kind: data.kind, visitorName: data.caller_name, source: "notification" });
    await self.registration.showNotification("Portaria", {
      body: text.queued(action, "sending"), tag: tagFor(data.visit_id), silent: true, icon: ICON, badge: BADGE,
      data: { visit_id: data.visit_id, key: record.key },
    });
    await sendQueued({ until: Date.now() + ACTION_WINDOW_MS });
    return;
  }
  notification.close();
  // A plain tap opens the app on this visit, its decisions one tap away — also the ones a
  // platform left off the notification (Chromium shows two of a delivery's three).
  const visitID = data.ended || data.done ? "" : (data.visit_id || "");
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const open = windows.find((client) => new URL(client.url).pathname.startsWith(self.registration.scope.replace(self.location.origin, "")));
  if (open) {
    if (visitID) open.postMessage({ type: "open_visit", visit_id: visitID });
    return open.focus();
  }
  return self.clients.openWindow(visitID ? `./#visita=${encodeURIComponent(visitID)}` : "./");
}

/** Notifies the outcome of a tap made on a notification. */
async function notifyOutcome(record) {
  if (record.source !== "notification") return;
  await self.registration.showNotification("Portaria", {
    body: record.text, tag: tagFor(record.visitID), silent: true, icon: ICON, badge: BADGE,
    data: { visit_id: record.visitID, done: true },
  });
}

/**
 * Sends the queue; keeps trying (with the queue's back-off) until nothing is pending or
 * `until` passes, then leaves the rest to Background Sync and the page.
 */
async function sendQueued({ until = 0 } = {}) {
  for (;;) {
    const { nextAt } = await drain({ notify: notifyOutcome });
    const waiting = await pendingActions();
    if (waiting.length === 0) return;
    for (const record of waiting.filter((item) => item.source === "notification")) {
      for (const shown of await self.registration.getNotifications({ tag: tagFor(record.visitID) })) {
        if (shown.body !== record.text) {
          await self.registration.showNotification("Portaria", {
            body: record.text, tag: tagFor(record.visitID), silent: true, icon: ICON, badge: BADGE,
            data: { visit_id: record.visitID, key: record.key },
          });
        }
      }
    }
    if (!nextAt || Date.now() >= until || nextAt > until) {
      try { await self.registration.sync.register(SYNC_TAG); } catch { /* no Background Sync: the page sends it */ }
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, nextAt - Date.now())));
  }
}

// Resident web client: log in, see pendências and history, resolve a visit with one tap.
// A tap goes into the durable action queue (`Web/shared/actions.js`, IndexedDB, shared
// with the service worker): one Idempotency-Key made at tap time and stored before the
// first send, retried with that same key until the server gives a final answer, so a
// resolve is never lost and never applied twice. An expired access token is refreshed
// and the action sent (never a logout that drops it). Times are the condominium's
// (GET /v1/me `company.time_zone`), and what a resident reads comes from the server in
// pt-BR or from `Web/shared/text.js`, never raw.

import { VideoCall } from "../shared/call.js";
import { ApiError, request, withRetries } from "../shared/api.js";
import { authorized, clearSession, loadSession, saveSession, SESSION_ENDED } from "../shared/session.js";
import { CHANNEL, drain, enqueue, pendingActions, recentActions } from "../shared/actions.js";
import * as text from "../shared/text.js";

const $ = (id) => document.getElementById(id);
const DEVICE_KEY = "portaria.app.device";

let session = null; // {token, refreshToken, companyID, companyName, userID, name, timeZone}
let pendingLogin = null; // login answer waiting for a company choice
let socket = null;
let pollTimer = 0;
let reconnectTimer = 0;
let drainTimer = 0;
const photoURLs = new Map();
/** What the resident's own taps got, per visit, kept across list refreshes. */
const notes = new Map();
/** The video call in progress (at most one), and its visit. */
let call = null;

/**
 * This browser's stable device id: calls reach the one device that answered, so the
 * socket (`?device_id=`) and the answer (`{"device_id"}`) name the same one.
 */
const deviceID = (() => {
  let id = "";
  try { id = localStorage.getItem(DEVICE_KEY) || ""; } catch { /* private mode */ }
  if (!id) {
    id = `web-${crypto.randomUUID()}`;
    try { localStorage.setItem(DEVICE_KEY, id); } catch { /* lives as long as the tab */ }
  }
  return id;
})();

const STATUSES = { ringing: "Tocando", answered: "Atendida", unanswered: "Ninguém atendeu", cancelled: "Cancelada pelo visitante", expired: "Expirada" };

const OUTCOMES = { authorize: "Autorizado", deny: "Negado", leave_at_concierge: "Deixar na portaria" };

function time(iso) {
  return text.clock(iso, session && session.timeZone);
}

/** The resident's wording of an error answer (the queue has its own for resolves). */
function describe(status) {
  const messages = {
    401: session ? "Sua sessão expirou. Entre de novo." : "Usuário ou senha incorretos.",
    403: "Você não tem permissão para isso.",
    404: "Visita não encontrada.",
    429: "Muitas tentativas; aguarde um minuto.",
  };
  return messages[status] || (status >= 500
    ? "O servidor está com problemas agora. Tente de novo em instantes."
    : `Não deu certo (erro ${status}).`);
}

/** A request as the resident (refreshing the session on 401), or anonymous before login. */
async function api(method, path, { body, headers = {}, raw = false, idempotencyKey } = {}) {
  const options = { body, headers, raw, idempotencyKey, describe };
  return session ? authorized(method, path, options) : request(method, path, options);
}

/** The session is over for good (refresh refused): back to the login, taps kept for later. */
function sessionEnded(error) {
  if (error && error.code === SESSION_ENDED) {
    logout(error.message, { keepQueue: true });
    return true;
  }
  return false;
}

function showError(id, message) {
  $(id).textContent = message || "";
  $(id).hidden = !message;
}

// MARK: login

async function login(event) {
  event.preventDefault();
  showError("login-error", "");
  if (pendingLogin) return chooseCompany();
  const username = $("username").value.trim();
  const password = $("password").value;
  if (!username || !password) {
    showError("login-error", "Informe usuário e senha.");
    return;
  }
  $("login").disabled = true;
  try {
    const answer = await api("POST", "/v1/auth/login", { body: { username, password } });
    const companies = answer.companies || [];
    if (companies.length === 0) throw new ApiError("Seu usuário não está em nenhum condomínio.");
    pendingLogin = answer;
    if (companies.length === 1) return chooseCompany();
    const select = $("company");
    select.length = 0;
    for (const company of companies) select.add(new Option(company.name, company.id));
    $("company-field").hidden = false;
    $("login").textContent = "Continuar";
    select.focus();
  } catch (error) {
    showError("login-error", error.message);
  } finally {
    $("login").disabled = false;
  }
}

async function chooseCompany() {
  const companies = pendingLogin.companies;
  const company = companies.length === 1 ? companies[0] : companies.find((c) => c.id === $("company").value);
  const answer = pendingLogin;
  pendingLogin = null;
  // The access token is short-lived; the refresh token renews it (page and worker share both).
  const fresh = {
    token: answer.jwt_token, refreshToken: answer.refresh_token, companyID: company.id, companyName: company.name,
    userID: answer.user_id, name: "", timeZone: company.time_zone || text.DEFAULT_ZONE,
  };
  await saveSession(fresh);
  session = fresh;
  let me;
  try {
    me = await api("GET", "/v1/me");
  } catch (error) {
    // Without the profile the app cannot know whose visits it would show: no home.
    return logout(error.status === 0 ? error.message : "Não foi possível entrar agora. Tente de novo em instantes.");
  }
  // An operator (or an administrator without a unit) would see the whole company's
  // visits with a resident's buttons: this app is for residents; the operator's app is a
  // later phase (spec fase 5: "perfil de operador fica oculto" until fase 7).
  if (me.profile === "operator" || !(me.units || []).length) {
    return logout("Este app é para moradores. Quem trabalha na portaria usa o app do operador, que ainda não está disponível na web.");
  }
  session.name = me.user ? me.user.name : "";
  // The condominium's clock, whatever zone this browser is in.
  if (me.company && me.company.time_zone) session.timeZone = me.company.time_zone;
  await saveSession(session);
  enterHome();
}

/**
 * Leaves the home screen. The resident's own "Sair" ends the session on the server and
 * forgets it; a session the server ended (`keepQueue`) keeps the taps still being sent,
 * which go out when the same resident logs in again.
 */
async function logout(message, { keepQueue = false } = {}) {
  if (call) call.hangup();
  $("call").hidden = true;
  stopLive();
  const ending = session;
  session = null;
  if (ending && !keepQueue) {
    request("POST", "/v1/auth/logout", { body: { refresh_token: ending.refreshToken }, token: ending.token }).catch(() => {});
  }
  await clearSession().catch(() => {});
  $("view-home").hidden = true;
  $("view-login").hidden = false;
  $("who").hidden = true;
  $("title").textContent = "Entrar";
  $("company-field").hidden = true;
  $("login").textContent = "Entrar";
  $("password").value = "";
  showError("login-error", typeof message === "string" ? message : "");
}

// MARK: home

function enterHome() {
  $("view-login").hidden = true;
  $("view-home").hidden = false;
  $("title").textContent = session.companyName;
  $("who").textContent = session.name ? `Olá, ${session.name}` : "";
  $("who").hidden = !session.name;
  load();
  startLive();
  sendQueued();
  refreshSubscription();
}

async function load() {
  try {
    const [pending, history] = await Promise.all([
      api("GET", "/v1/visits?status=pending&limit=50"),
      api("GET", "/v1/visits?status=history&limit=30"),
    ]);
    showError("home-error", "");
    const open = (history.visits || []).filter((visit) => ["ringing", "answered"].includes(visit.status));
    const seen = new Set();
    render("live", open, seen);
    $("live-section").hidden = open.length === 0;
    render("pending", pending.visits || [], seen);
    render("history", (history.visits || []).filter((visit) => !open.includes(visit)), seen);
    for (const item of document.querySelectorAll("li.visit")) if (!seen.has(item.dataset.id)) item.remove();
  } catch (error) {
    if (sessionEnded(error)) return;
    showError("home-error", error.message);
  }
}

/** Puts `visits` into the list, reusing (and moving) existing items across lists. */
function render(listID, visits, seen) {
  const list = $(listID);
  $(`${listID}-empty`).hidden = visits.length > 0;
  for (const visit of visits) {
    seen.add(visit.id);
    let item = document.querySelector(`li.visit[data-id="${CSS.escape(visit.id)}"]`);
    if (!item) {
      item = document.createElement("li");
      item.className = "visit";
      item.dataset.id = visit.id;
    }
    // An item whose resolve is in flight keeps its buttons until the answer comes.
    // Only a changed visit is redrawn, so focus and a half-done tap survive a refresh.
    const signature = `${visit.status}|${visit.updated_at}|${!!visit.photo}|${(notes.get(visit.id) || {}).text || ""}`;
    if (item.dataset.busy !== "1" && item.dataset.signature !== signature) {
      fillVisit(item, visit);
      item.dataset.signature = signature;
    }
    list.appendChild(item);
  }
}

function fillVisit(item, visit) {
  item.replaceChildren();
  item.dataset.status = visit.status;
  const name = document.createElement("p");
  name.className = "name";
  name.textContent = visit.visitor_name;
  const what = document.createElement("p");
  what.textContent = `${visit.kind === "delivery" ? `Entrega${visit.carrier ? ` ${visit.carrier}` : ""}` : "Visita"} · ${visit.unit.label} · ${time(visit.created_at)}`;
  const badge = document.createElement("p");
  badge.className = `badge ${visit.geofence ? visit.geofence.status : ""}`;
  badge.textContent = visit.geofence_badge || "";
  const outcome = document.createElement("p");
  outcome.className = "outcome";
  if (visit.resolution) {
    const by = visit.resolution.by ? visit.resolution.by.name : "";
    outcome.textContent = `${OUTCOMES[visit.resolution.action] || visit.resolution.action}${by ? ` por ${by}` : ""} às ${time(visit.resolution.at)}`;
  } else {
    outcome.textContent = STATUSES[visit.status] || visit.status;
  }
  item.append(name);
  if (visit.photo) {
    const image = document.createElement("img");
    image.alt = `Foto de ${visit.visitor_name}`;
    item.append(image);
    loadPhoto(visit.id, image);
  }
  item.append(what, badge, outcome);
  if (visit.status === "ringing") {
    const row = document.createElement("div");
    row.className = "row answer-row";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button primary";
    button.dataset.action = "answer";
    button.textContent = "Atender";
    button.addEventListener("click", () => answer(item, visit));
    row.append(button);
    item.append(row);
  }
  if (["ringing", "answered", "unanswered"].includes(visit.status)) {
    const row = document.createElement("div");
    row.className = "row";
    row.append(...decisionButtons(visit, (action) => resolve(item, visit, action)));
    item.append(row);
  }
  const message = document.createElement("p");
  message.className = "message";
  message.setAttribute("role", "status");
  const note = notes.get(visit.id);
  if (note) {
    message.textContent = note.text;
    message.classList.toggle("ok", !!note.ok);
    // A decision still in the queue: no second one on top of it.
    if (note.state === "pending") item.querySelectorAll("button[data-action]").forEach((button) => { button.disabled = true; });
  }
  item.append(message);
}

async function loadPhoto(id, image) {
  try {
    if (!photoURLs.has(id)) photoURLs.set(id, URL.createObjectURL(await api("GET", `/v1/visits/${id}/photo`, { raw: true })));
    image.src = photoURLs.get(id);
  } catch {
    image.remove();
  }
}

/** One tap: stored in the durable queue with its key, then sent (and retried) from there. */
async function resolve(item, visit, action) {
  const message = item.querySelector(".message");
  item.querySelectorAll("button").forEach((button) => { button.disabled = true; });
  item.dataset.busy = "1";
  message.classList.remove("ok");
  message.textContent = text.queued(action, "sending");
  try {
    await enqueue({ visitID: visit.id, action, kind: visit.kind, visitorName: visit.visitor_name, source: "page" });
  } catch {
    // No IndexedDB (a locked-down private window): say so rather than pretend.
    message.textContent = "Este navegador não deixou guardar sua decisão. Toque de novo.";
    item.querySelectorAll("button").forEach((button) => { button.disabled = false; });
    delete item.dataset.busy;
    return;
  }
  sendQueued();
}

/** Sends what the queue holds now and schedules the next try of anything still waiting. */
async function sendQueued() {
  clearTimeout(drainTimer);
  drainTimer = 0;
  let result;
  try {
    result = await drain();
  } catch {
    drainTimer = setTimeout(sendQueued, 5000);
    return;
  }
  if (result.nextAt) drainTimer = setTimeout(sendQueued, Math.max(0, result.nextAt - Date.now()));
  const waiting = (await pendingActions().catch(() => [])).some((record) => record.text === text.queued(record.action, "needs_login"));
  if (waiting && session) {
    const current = await loadSession().catch(() => null);
    if (!current || current.expired) logout("Sua sessão expirou. Entre de novo: sua decisão será enviada em seguida.", { keepQueue: true });
  }
}

/** A queue record changed (here or in the service worker): show it on its visit. */
function showAction(record) {
  if (!session || record.userID !== session.userID) return;
  notes.set(record.visitID, { text: record.text, ok: record.ok, state: record.state });
  if ($("call").dataset.visit === record.visitID && !$("call").hidden) $("call-status").textContent = record.text;
  const item = document.querySelector(`li.visit[data-id="${CSS.escape(record.visitID)}"]`);
  if (!item) return;
  const message = item.querySelector(".message");
  if (message) {
    message.textContent = record.text;
    message.classList.toggle("ok", !!record.ok);
  }
  if (record.state !== "pending") {
    delete item.dataset.busy;
    if (record.visit) {
      fillVisit(item, record.visit);
      item.dataset.signature = "";
    }
    load();
  }
}

// MARK: video call

/** "Atender": camera first (so the offer finds it ready), then the answer with this device. */
async function answer(item, visit) {
  const message = item.querySelector(".message");
  if (call) {
    message.textContent = "Encerre a chamada atual antes de atender outra.";
    return;
  }
  const button = item.querySelector("button[data-action=answer]");
  if (button) button.disabled = true;
  openCall(visit);
  try {
    // One key for every attempt: a retried answer is replayed, never a second claim.
    await withRetries((key) => api("POST", `/v1/visits/${visit.id}/answer`, { body: { device_id: deviceID }, idempotencyKey: key }),
      { attempts: 4 });
    load();
  } catch (error) {
    if (call && call.visitID === visit.id) {
      call.close(error.status === 409 ? (error.body && error.body.message) || "Esta chamada já foi atendida ou encerrada."
        : `Não foi possível atender: ${error.message}`);
    }
    if (sessionEnded(error)) return;
    if (button) button.disabled = false;
    load();
  }
}

/** The decision buttons of a visit: Autorizar (subida), Deixar na portaria for a courier, Negar / Recusar. */
function decisionButtons(visit, onTap) {
  const delivery = visit.kind === "delivery";
  const actions = [["authorize", delivery ? "Autorizar subida" : "Autorizar", "authorize"]];
  if (delivery) actions.push(["leave_at_concierge", "Deixar na portaria", "concierge"]);
  actions.push(["deny", delivery ? "Recusar" : "Negar", "deny"]);
  return actions.map(([action, label, style]) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = `button ${style}`;
    button.dataset.action = action;
    button.textContent = label;
    button.addEventListener("click", () => onTap(action));
    return button;
  });
}

/** The same decisions inside the call, through the same queue as the list. */
function fillCallActions(visit) {
  const row = $("call-actions");
  row.hidden = false;
  row.replaceChildren(...decisionButtons(visit, async (action) => {
    row.querySelectorAll("button").forEach((other) => { other.disabled = true; });
    const item = document.querySelector(`li.visit[data-id="${CSS.escape(visit.id)}"]`);
    if (item) {
      await resolve(item, visit, action);
    } else {
      await enqueue({ visitID: visit.id, action, kind: visit.kind, visitorName: visit.visitor_name, source: "page" });
      sendQueued();
    }
    $("call-status").textContent = text.queued(action, "sending");
  }));
}

function openCall(visit) {
  const section = $("call");
  section.hidden = false;
  section.dataset.state = "connecting";
  section.dataset.visit = visit.id;
  $("call-who").textContent = `${visit.visitor_name} · ${visit.unit ? visit.unit.label : ""}`;
  $("call-videos").hidden = false;
  $("call-hangup").hidden = false;
  fillCallActions(visit);
  $("call-close").hidden = true;
  $("call-unmute").hidden = true;
  call = new VideoCall({
    role: "resident",
    visitID: visit.id,
    send: (frame) => {
      if (!socket || socket.readyState !== WebSocket.OPEN) return false;
      socket.send(JSON.stringify(frame));
      return true;
    },
    iceServers: async () => (await api("GET", "/v1/calls/ice_servers")).ice_servers || [],
    localVideo: $("call-local"),
    remoteVideo: $("call-remote"),
    onState: (state, text) => {
      section.dataset.state = state;
      $("call-status").textContent = text;
      if (state === "ended") {
        call = null;
        $("call-actions").hidden = true;
        $("call-videos").hidden = true;
        $("call-hangup").hidden = true;
        $("call-unmute").hidden = true;
        $("call-close").hidden = false;
      }
    },
    onMuted: () => { $("call-unmute").hidden = false; },
  });
  call.await();
  section.scrollIntoView({ block: "start" });
}

// MARK: live updates (realtime socket with a ticket; polling while it is down)

async function startLive() {
  stopLive();
  if (!session) return;
  let ticket;
  try {
    ({ ticket } = await api("POST", "/v1/realtime/tickets", { body: {} }));
  } catch (error) {
    if (sessionEnded(error)) return;
    return liveFailed();
  }
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/v1/realtime?ticket=${encodeURIComponent(ticket)}&device_id=${encodeURIComponent(deviceID)}`);
  socket = ws;
  ws.onopen = () => {
    clearInterval(pollTimer);
    pollTimer = 0;
    $("connection").textContent = "";
    document.body.dataset.connection = "live";
    load();
  };
  ws.onmessage = (message) => {
    try {
      const frame = JSON.parse(message.data);
      if (call && typeof frame.type === "string" && (frame.type.startsWith("call.") || frame.type === "error")) call.handle(frame);
      // The visit closed (resolved elsewhere, cancelled): its call is over too.
      if (call && frame.type && ["visit.resolved", "visit.cancelled", "visit.expired"].includes(frame.type)
          && frame.data && frame.data.visit_id === call.visitID) call.close("Chamada encerrada.");
      if (frame.type && (frame.type.startsWith("visit.") || frame.type === "resync_required")) load();
    } catch { /* not JSON: ignore */ }
  };
  ws.onclose = () => { if (socket === ws) liveFailed(); };
}

function liveFailed() {
  socket = null;
  document.body.dataset.connection = "polling";
  $("connection").textContent = "Conexão instável: atualizando a cada 5 segundos.";
  if (!pollTimer) pollTimer = setInterval(load, 5000);
  clearTimeout(reconnectTimer);
  reconnectTimer = setTimeout(startLive, 10000);
}

function stopLive() {
  clearInterval(pollTimer);
  clearTimeout(reconnectTimer);
  pollTimer = 0;
  if (socket) {
    const ws = socket;
    socket = null;
    ws.onclose = null;
    ws.close(1000);
  }
}

// MARK: notifications (Web Push, decision 0025)

/** The app's service worker (rings with the tab closed); null where the browser has none. */
const workerReady = (async () => {
  if (!("serviceWorker" in navigator)) return null;
  try {
    return await navigator.serviceWorker.register("sw.js", { type: "module", scope: "./" });
  } catch {
    return null;
  }
})();

function base64url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

/** Where notifications stand on this browser, and how to fix it. */
async function showNotifyState(problem = "") {
  const section = $("notify");
  const button = $("notify-enable");
  section.hidden = false;
  if (!("Notification" in window) || !("PushManager" in window)) {
    $("notify-state").textContent = "Este navegador não avisa com o app fechado. No iPhone, toque em Compartilhar → Adicionar à Tela de Início e abra o app por lá.";
    button.hidden = true;
    return;
  }
  const registration = await workerReady;
  const subscription = registration ? await registration.pushManager.getSubscription().catch(() => null) : null;
  if (Notification.permission === "denied") {
    $("notify-state").textContent = "As notificações estão bloqueadas para este site. Libere no navegador: cadeado ao lado do endereço → Notificações → Permitir.";
    button.hidden = true;
  } else if (Notification.permission === "granted" && subscription) {
    $("notify-state").textContent = problem || "Notificações ativas: este navegador toca mesmo com a aba fechada.";
    button.hidden = !problem;
  } else {
    $("notify-state").textContent = problem || "Ative para ser avisado de visitas e entregas mesmo com esta aba fechada.";
    button.hidden = false;
  }
}

/** Tells the server where to push for this browser (again at every start: the user may have changed). */
async function registerSubscription(subscription) {
  const { endpoint, keys } = subscription.toJSON();
  await api("POST", "/v1/devices", {
    body: {
      installation_id: deviceID, platform: "web", web_push: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } },
      device_name: "Navegador", locale: "pt-BR", capabilities: { notifications_enabled: true },
    },
  });
}

async function enableNotifications() {
  $("notify-enable").disabled = true;
  try {
    if ((await Notification.requestPermission()) !== "granted") return showNotifyState();
    const registration = await workerReady;
    if (!registration) return showNotifyState("Este navegador não deixou instalar o serviço de notificações.");
    const { public_key: key } = await request("GET", "/v1/push/web/vapid_public_key");
    const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64url(key) });
    await registerSubscription(subscription);
    await showNotifyState();
  } catch (error) {
    await showNotifyState(error instanceof ApiError ? error.message
      : "Não foi possível ativar as notificações neste navegador agora. Tente de novo mais tarde.");
  } finally {
    $("notify-enable").disabled = false;
  }
}

/** At every start: keeps the server's copy of this browser's subscription current. */
async function refreshSubscription() {
  try {
    const registration = await workerReady;
    const subscription = registration ? await registration.pushManager.getSubscription() : null;
    if (subscription && Notification.permission === "granted") await registerSubscription(subscription);
  } catch { /* shown by showNotifyState */ }
  showNotifyState();
}

/** "Sair": this browser stops ringing for the resident who left (the push service answers 410 from now on). */
async function unsubscribe() {
  try {
    const registration = await workerReady;
    const subscription = registration ? await registration.pushManager.getSubscription() : null;
    if (subscription) await subscription.unsubscribe();
  } catch { /* nothing to undo */ }
}

// MARK: start

$("view-login").addEventListener("submit", login);
$("refresh").addEventListener("click", load);
$("logout").addEventListener("click", () => { unsubscribe(); logout(); });
$("notify-enable").addEventListener("click", enableNotifications);
$("call-hangup").addEventListener("click", () => { if (call) call.hangup(); });
$("call-close").addEventListener("click", () => { $("call").hidden = true; });
$("call-unmute").addEventListener("click", () => {
  $("call-remote").muted = false;
  $("call-unmute").hidden = true;
});
window.addEventListener("pagehide", () => { if (call) call.hangup(); });
// Queued taps go out as soon as there is a chance: back online, back to the screen, or
// told by the service worker (it sent one from a notification).
window.addEventListener("online", sendQueued);
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState !== "visible" || !session) return;
  sendQueued();
  load();
});
try {
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (event) => showAction(event.data);
} catch { /* no BroadcastChannel: the lists still refresh over the socket */ }

(async () => {
  session = await loadSession().catch(() => null);
  if (session && session.token && !session.expired) {
    // Outcomes of taps made before a reload (or from a notification) are shown again.
    for (const record of await recentActions().catch(() => [])) {
      if (record.userID === session.userID) notes.set(record.visitID, { text: record.text, ok: record.ok, state: record.state });
    }
    enterHome();
    sendQueued();
  } else {
    session = null;
  }
})();

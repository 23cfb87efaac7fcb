// Resident web client (minimal): log in, see pendências and history, resolve a visit
// with one tap. Each tap makes one Idempotency-Key and retries with that same key on a
// network failure, so a resolve is never lost and never applied twice; a 409
// VISIT_ALREADY_RESOLVED becomes "Maria já autorizou às 14:32", never a technical error.

import { VideoCall } from "../gate/assets/call.js";

const $ = (id) => document.getElementById(id);
const SESSION_KEY = "portaria.app.session";
const DEVICE_KEY = "portaria.app.device";

let session = null; // {token, companyID, companyName, name}
let pendingLogin = null; // login answer waiting for a company choice
let socket = null;
let pollTimer = 0;
let reconnectTimer = 0;
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

const ACTIONS = { authorize: "autorizou", deny: "negou", leave_at_concierge: "pediu para deixar na portaria" };
const OUTCOMES = { authorize: "Autorizado", deny: "Negado", leave_at_concierge: "Deixar na portaria" };
const STATUSES = { ringing: "Tocando", answered: "Atendida", unanswered: "Ninguém atendeu", cancelled: "Cancelada pelo visitante", expired: "Expirada" };

class ApiError extends Error {
  constructor(message, status = 0, body = {}) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

function time(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleTimeString("pt-BR", { hour: "2-digit", minute: "2-digit" });
}

async function api(method, path, { body, headers = {}, raw = false } = {}) {
  const allHeaders = { Accept: "application/json", ...headers };
  if (body !== undefined) allHeaders["Content-Type"] = "application/json";
  if (session) {
    allHeaders.Authorization = `Bearer ${session.token}`;
    allHeaders["X-Company-Id"] = session.companyID;
  }
  let response;
  try {
    response = await fetch(path, {
      method, headers: allHeaders, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit",
    });
  } catch {
    throw new ApiError("Sem conexão com o servidor. Verifique a internet.", 0);
  }
  if (raw && response.ok) return response.blob();
  const text = await response.text().catch(() => "");
  let json = {};
  try { json = text ? JSON.parse(text) : {}; } catch { json = {}; }
  if (response.ok) return json;
  const error = json.error || {};
  const messages = {
    401: session ? "Sua sessão expirou. Entre de novo." : "Usuário ou senha incorretos.",
    403: "Você não tem permissão para isso.",
    404: "Visita não encontrada.",
    429: "Muitas tentativas; aguarde um minuto.",
  };
  throw new ApiError(messages[response.status] || (response.status >= 500
    ? "O servidor está com problemas agora. Tente de novo em instantes."
    : `Não deu certo (erro ${response.status}).`), response.status, error);
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
  session = { token: pendingLogin.jwt_token, companyID: company.id, companyName: company.name, name: "" };
  pendingLogin = null;
  try {
    const me = await api("GET", "/v1/me");
    session.name = me.user ? me.user.name : "";
  } catch { /* the name is decoration */ }
  try { sessionStorage.setItem(SESSION_KEY, JSON.stringify(session)); } catch { /* private mode */ }
  enterHome();
}

function logout(message) {
  if (call) call.hangup();
  $("call").hidden = true;
  stopLive();
  if (session) api("POST", "/v1/auth/logout", { body: {} }).catch(() => {});
  session = null;
  try { sessionStorage.removeItem(SESSION_KEY); } catch { /* ignore */ }
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
    if (error.status === 401) return logout(error.message);
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
    const actions = [["authorize", visit.kind === "delivery" ? "Autorizar subida" : "Autorizar", "authorize"]];
    if (visit.kind === "delivery") actions.push(["leave_at_concierge", "Deixar na portaria", "concierge"]);
    actions.push(["deny", visit.kind === "delivery" ? "Recusar" : "Negar", "deny"]);
    for (const [action, label, style] of actions) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = `button ${style}`;
      button.dataset.action = action;
      button.textContent = label;
      button.addEventListener("click", () => resolve(item, visit, action));
      row.append(button);
    }
    item.append(row);
  }
  const message = document.createElement("p");
  message.className = "message";
  message.setAttribute("role", "status");
  const note = notes.get(visit.id);
  if (note) {
    message.textContent = note.text;
    message.classList.toggle("ok", note.ok);
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

/** One tap: one key, retried on network failures with the same key (the server replays). */
async function resolve(item, visit, action) {
  const key = crypto.randomUUID();
  const buttons = item.querySelectorAll("button");
  const message = item.querySelector(".message");
  buttons.forEach((button) => { button.disabled = true; });
  item.dataset.busy = "1";
  message.classList.remove("ok");
  message.textContent = "Enviando…";
  const delays = [0, 1000, 2000, 4000, 8000];
  for (let attempt = 0; ; attempt += 1) {
    try {
      const resolved = await api("POST", `/v1/visits/${visit.id}/resolve`, { body: { action }, headers: { "Idempotency-Key": key } });
      delete item.dataset.busy;
      notes.set(visit.id, { text: "Pronto: o visitante já está vendo a resposta.", ok: true });
      fillVisit(item, resolved);
      load();
      return;
    } catch (error) {
      const code = error.body && error.body.code;
      if (error.status === 409 && code === "VISIT_ALREADY_RESOLVED") {
        const who = error.body.resolved_by ? error.body.resolved_by.name.split(" ")[0] : "Alguém";
        notes.set(visit.id, { text: `${who} já ${ACTIONS[error.body.action] || "resolveu"} às ${time(error.body.resolved_at)}.`, ok: false });
        delete item.dataset.busy;
        load();
        return;
      }
      const retriable = error.status === 0 || error.status === 409 || error.status >= 500;
      if (retriable && attempt + 1 < delays.length) {
        message.textContent = `Sem resposta ainda; tentando de novo (${attempt + 1})…`;
        await new Promise((resolveDelay) => setTimeout(resolveDelay, delays[attempt + 1]));
        continue;
      }
      if (error.status === 401) return logout(error.message);
      message.textContent = `Não foi possível responder: ${error.message} Toque de novo.`;
      buttons.forEach((button) => { button.disabled = false; });
      delete item.dataset.busy;
      return;
    }
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
  const key = crypto.randomUUID();
  const delays = [0, 1000, 2000, 4000];
  for (let attempt = 0; ; attempt += 1) {
    try {
      await api("POST", `/v1/visits/${visit.id}/answer`, { body: { device_id: deviceID }, headers: { "Idempotency-Key": key } });
      load();
      return;
    } catch (error) {
      if ((error.status === 0 || error.status >= 500) && attempt + 1 < delays.length) {
        await new Promise((resolveDelay) => setTimeout(resolveDelay, delays[attempt + 1]));
        continue;
      }
      if (call && call.visitID === visit.id) call.close(error.status === 409 ? "Esta chamada já foi atendida ou encerrada." : `Não foi possível atender: ${error.message}`);
      if (error.status === 401) return logout(error.message);
      if (button) button.disabled = false;
      load();
      return;
    }
  }
}

function openCall(visit) {
  const section = $("call");
  section.hidden = false;
  section.dataset.state = "connecting";
  section.dataset.visit = visit.id;
  $("call-who").textContent = `${visit.visitor_name} · ${visit.unit ? visit.unit.label : ""}`;
  $("call-videos").hidden = false;
  $("call-hangup").hidden = false;
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
    if (error.status === 401) return logout(error.message);
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

// MARK: start

$("view-login").addEventListener("submit", login);
$("refresh").addEventListener("click", load);
$("logout").addEventListener("click", () => logout());
$("call-hangup").addEventListener("click", () => { if (call) call.hangup(); });
$("call-close").addEventListener("click", () => { $("call").hidden = true; });
$("call-unmute").addEventListener("click", () => {
  $("call-remote").muted = false;
  $("call-unmute").hidden = true;
});
window.addEventListener("pagehide", () => { if (call) call.hangup(); });
try { session = JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null"); } catch { session = null; }
if (session && session.token) enterHome();

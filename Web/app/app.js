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
import { setValue } from "../shared/store.js";
import { batterySteps, currentDevice } from "../shared/device.js";
import * as text from "../shared/text.js";

const $ = (id) => document.getElementById(id);
const DEVICE_KEY = "portaria.app.device";

let session = null; // {token, refreshToken, companyID, companyName, userID, name, timeZone}
let pendingLogin = null; // login answer waiting for a company choice
let socket = null;
let pollTimer = 0;
let reconnectTimer = 0;
let drainTimer = 0;
/** The last realtime `seq` seen: a reconnect asks for what came after it (`?since=`). */
let lastSeq = null;
let loadTimer = 0;
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
  const answer = await (session ? authorized(method, path, options) : request(method, path, options));
  // An answer is a sign of connectivity: a tap waiting on its back-off goes now.
  if (drainTimer && session) sendQueued({ now: true });
  return answer;
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

/** "Entrar com código por SMS" (or back to the password): the same form, other fields. */
let smsMode = false;
let smsPhone = "";

function setLoginMode(sms) {
  smsMode = sms;
  smsPhone = "";
  pendingLogin = null;
  showError("login-error", "");
  $("password-fields").hidden = sms;
  $("sms-fields").hidden = !sms;
  $("code-field").hidden = true;
  $("code-sent").hidden = true;
  $("company-field").hidden = true;
  $("code").value = "";
  $("login").textContent = sms ? "Enviar código" : "Entrar";
  $("login-mode").textContent = sms ? "Entrar com usuário e senha" : "Entrar com código por SMS";
  $(sms ? "phone" : "username").focus();
}

/** The login errors of the SMS steps, in the client core's words (ClientText.loginError). */
function describeLogin(status, error, retryAfter) {
  if (status === 429) {
    const seconds = Number((error.details || {}).retry_after) || retryAfter;
    return seconds > 0 ? `Muitas tentativas. Tente de novo em ${Math.ceil(seconds / 60)} min.` : "Muitas tentativas. Tente de novo mais tarde.";
  }
  if (status === 401) return error.code === "INVALID_OTP" ? "Código inválido ou expirado." : "Usuário ou senha incorretos.";
  if (status === 400) return error.field === "code" ? "O código tem 6 dígitos." : "Confira o número do celular, com DDD.";
  return "Não foi possível entrar agora. Tente de novo.";
}

/**
 * The number the SMS goes to, in international form, as the server reads it: a national
 * number (10–11 digits, no `+`, as "(11) 99999-0001") is Brazilian (the server's
 * `--default-country-code`, 55 by default); with `+` or 12–15 digits it carries its own
 * country code. null when it cannot be a phone.
 */
const COUNTRY_CODE = "55";
function internationalPhone(typed) {
  const trimmed = typed.replace(/[\s().-]/g, "");
  const plus = trimmed.startsWith("+");
  const digits = plus ? trimmed.slice(1) : trimmed;
  if (!/^[1-9][0-9]{9,14}$/.test(digits)) return null;
  if (!plus && digits.length <= 11) return `+${COUNTRY_CODE}${digits}`;
  return `+${digits}`;
}

/** "+55 11 99999-0001" (a Brazilian number grouped as people read it), else "+<digits>". */
function readablePhone(international) {
  const match = /^\+55([0-9]{2})([0-9]{4,5})([0-9]{4})$/.exec(international);
  return match ? `+55 ${match[1]} ${match[2]}-${match[3]}` : international;
}

/** Under the field, the number the code will go to, before anything is sent. */
function showPhonePreview() {
  const typed = $("phone").value.trim();
  const international = internationalPhone(typed);
  $("phone-preview").textContent = !typed ? ""
    : international ? `O código será enviado para ${readablePhone(international)}.`
      : "Confira o número: com DDD, como (11) 99999-0001.";
}

/** `•••••-0001`: enough to recognise one's number, not to read it aloud in a lobby. */
function maskedPhone(phone) {
  const digits = phone.replace(/\D/g, "");
  return digits.length >= 4 ? `•••••-${digits.slice(-4)}` : phone;
}

async function smsStep() {
  const button = $("login");
  button.disabled = true;
  try {
    if (!smsPhone) {
      const phone = internationalPhone($("phone").value.trim());
      if (!phone) {
        showError("login-error", "Informe o celular com DDD, como (11) 99999-0001.");
        return;
      }
      const sent = await request("POST", "/v1/auth/otp/send", { body: { phone }, describe: describeLogin });
      smsPhone = phone;
      const minutes = Math.round((Number(sent.expires_in) || 600) / 60);
      $("code-sent").textContent = `Enviamos um código por SMS para ${maskedPhone(phone)}. Ele vale por ${minutes} minutos.`;
      $("code-sent").hidden = false;
      $("code-field").hidden = false;
      button.textContent = "Confirmar código";
      $("code").focus();
      return;
    }
    const code = $("code").value.replace(/\s/g, "");
    if (!/^[0-9]{6}$/.test(code)) {
      showError("login-error", "O código tem 6 dígitos.");
      return;
    }
    const { otp_token: otpToken } = await request("POST", "/v1/auth/otp/verify", { body: { phone: smsPhone, code }, describe: describeLogin });
    const answer = await request("POST", "/v1/auth/generate_access_token", { body: { otp_token: otpToken }, describe: describeLogin });
    await loggedIn(answer);
  } catch (error) {
    showError("login-error", error.message);
  } finally {
    button.disabled = false;
  }
}

/** Password or SMS code, the same answer: one company goes straight in, several are a choice. */
async function loggedIn(answer) {
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
}

async function login(event) {
  event.preventDefault();
  showError("login-error", "");
  if (pendingLogin) return chooseCompany();
  if (smsMode) return smsStep();
  const username = $("username").value.trim();
  const password = $("password").value;
  if (!username || !password) {
    showError("login-error", "Informe usuário e senha.");
    return;
  }
  $("login").disabled = true;
  try {
    const answer = await api("POST", "/v1/auth/login", { body: { username, password } });
    await loggedIn(answer);
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
  if (me.profile === "admin" && !(me.units || []).length) {
    // The condominium's administration has its own panel: say where, with the link.
    await logout("Este app é para moradores. A administração do condomínio usa o painel em ");
    const link = document.createElement("a");
    link.href = new URL("../admin/", location.href).pathname;
    link.textContent = "/admin/";
    $("login-error").append(link, ".");
    return;
  }
  if (me.profile === "operator" || !(me.units || []).length) {
    return logout("Este app é para moradores. Quem trabalha na portaria usa o app do operador, que ainda não está disponível na web.");
  }
  session.name = me.user ? me.user.name : "";
  session.units = (me.units || []).map((unit) => ({ id: unit.id, label: unit.label }));
  // The condominium's clock, whatever zone this browser is in.
  if (me.company && me.company.time_zone) session.timeZone = me.company.time_zone;
  await saveSession(session);
  enterHome({ focus: true });
}

/**
 * Leaves the home screen. The resident's own "Sair" ends the session on the server and
 * forgets it; a session the server ended (`keepQueue`) keeps the taps still being sent,
 * which go out when the same resident logs in again.
 */
async function logout(message, { keepQueue = false } = {}) {
  if (call) call.hangup();
  $("call").hidden = true;
  document.documentElement.classList.remove("in-call");
  stopLive();
  lastSeq = null;
  listShown = false;
  const ending = session;
  session = null;
  if (ending && !keepQueue) {
    request("POST", "/v1/auth/logout", { body: { refresh_token: ending.refreshToken }, token: ending.token }).catch(() => {});
  }
  await clearSession().catch(() => {});
  $("view-home").hidden = true;
  $("view-detail").hidden = true;
  $("view-settings").hidden = true;
  $("view-login").hidden = false;
  $("who").hidden = true;
  $("title").textContent = "Entrar";
  $("password").value = "";
  setLoginMode(false);
  showError("login-error", typeof message === "string" ? message : "");
}

// MARK: home

function enterHome({ focus = false } = {}) {
  $("view-login").hidden = true;
  $("view-home").hidden = false;
  $("title").textContent = session.companyName;
  $("who").textContent = session.name ? `Olá, ${session.name}` : "";
  $("who").hidden = !session.name;
  // After a login the page's first heading takes focus (the login form it was in is gone).
  if (focus) $("title").focus({ preventScroll: true });
  load();
  startLive();
  sendQueued();
  refreshSubscription();
}

/** A visit to bring forward once the list has it (a notification was tapped). */
let wantedVisit = (/^#visita=(.+)$/.exec(location.hash) || [])[1] ? decodeURIComponent(/^#visita=(.+)$/.exec(location.hash)[1]) : "";

/** The tapped notification's visit: on screen, its first decision button focused. */
function bringForward() {
  if (!wantedVisit) return;
  const item = document.querySelector(`li.visit[data-id="${CSS.escape(wantedVisit)}"]`);
  if (!item) return;
  wantedVisit = "";
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  item.scrollIntoView({ block: "start" });
  const target = item.querySelector("button[data-action]:not([data-action=answer])") || item.querySelector("button.details");
  if (target) target.focus({ preventScroll: true });
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
    const focus = focusInList();
    render("live", open, seen);
    $("live-section").hidden = open.length === 0;
    render("pending", pending.visits || [], seen);
    render("history", (history.visits || []).filter((visit) => !open.includes(visit)), seen);
    for (const item of document.querySelectorAll("li.visit")) if (!seen.has(item.dataset.id)) item.remove();
    focus.restore();
    bringForward();
    noteMoves();
    // From now on an item that appears does so where something else was (or the buttons
    // above the list were): the first ring into an empty list moves them down.
    if (!$("view-home").hidden) listShown = true;
  } catch (error) {
    if (sessionEnded(error)) return;
    showError("home-error", error.message);
  }
}

/**
 * A button of the list that has focus (a keyboard or screen-reader user's place) keeps it
 * through a refresh: a redraw replaces the item's buttons and a move takes the item out of
 * the document for a moment, and either sends focus to the page's start. `restore` gives
 * it back (`sameOrSuccessor`).
 */
function focusInList() {
  const had = document.activeElement;
  const item = had && had.closest ? had.closest("li.visit") : null;
  if (!item) return { restore() {} };
  const id = item.dataset.id;
  return {
    restore() {
      if (document.activeElement === had) return;
      const target = sameOrSuccessor(had, id);
      if (target) target.focus({ preventScroll: true }); // the page does not jump under a sighted user
    },
  };
}

/**
 * `button` if it is still on the page; else, in visit `visitID`'s item (redrawn
 * meanwhile), the button in its place (same `data-action`), or the item's Detalhes (a
 * decision button goes away with the decision); null when the visit left the list.
 */
function sameOrSuccessor(button, visitID) {
  if (document.contains(button)) return button;
  const item = visitID ? document.querySelector(`li.visit[data-id="${CSS.escape(visitID)}"]`) : null;
  if (!item) return null;
  // The result line that took focus after a decision is redrawn as the item's new one.
  if (button.classList.contains("message")) return item.querySelector(".message");
  const action = button.dataset.action;
  return (action && item.querySelector(`button[data-action="${CSS.escape(action)}"]`)) || item.querySelector("button.details");
}

/** Puts `visits` into the list, reusing (and moving) existing items across lists. */
function render(listID, visits, seen) {
  const list = $(listID);
  $(`${listID}-empty`).hidden = visits.length > 0;
  let previous = null;
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
    const signature = `${visit.status}|${visit.updated_at}|${!!visit.photo}|${!!visit.voice_message}|${(notes.get(visit.id) || {}).text || ""}`;
    if (item.dataset.busy !== "1" && item.dataset.signature !== signature) {
      fillVisit(item, visit);
      item.dataset.signature = signature;
    }
    // Only an item out of place is moved: a move blurs whatever has focus inside it.
    const wanted = previous ? previous.nextElementSibling : list.firstElementChild;
    if (item !== wanted) list.insertBefore(item, wanted);
    previous = item;
  }
}

function fillVisit(item, visit) {
  item.replaceChildren();
  item.dataset.redrawn = "1";
  item.dataset.status = visit.status;
  const name = document.createElement("p");
  name.className = "name";
  name.textContent = visit.visitor_name;
  const what = document.createElement("p");
  what.textContent = `${visit.kind === "delivery" ? `Entrega${visit.carrier ? ` ${visit.carrier}` : ""}` : "Visita"} · ${visit.unit.label} · ${time(visit.created_at)}`;
  const badge = document.createElement("p");
  badge.className = `badge ${visit.geofence ? visit.geofence.status : "unknown"}`;
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
  if (visit.voice_message) item.append(voicePlayer(visit));
  if (visit.status === "ringing") {
    const row = document.createElement("div");
    row.className = "row answer-row";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button primary";
    button.dataset.action = "answer";
    button.textContent = "Atender";
    button.addEventListener("click", () => { if (takesTaps(item)) answer(item, visit); });
    row.append(button);
    item.append(row);
  }
  if (["ringing", "answered", "unanswered"].includes(visit.status)) {
    const row = document.createElement("div");
    row.className = "row";
    row.append(...decisionButtons(visit, (action) => { if (takesTaps(item)) resolve(item, visit, action); }));
    item.append(row);
  }
  const details = document.createElement("button");
  details.type = "button";
  details.className = "button secondary details";
  details.textContent = "Detalhes";
  details.dataset.visit = visit.id;
  details.setAttribute("aria-label", `Detalhes de ${visit.visitor_name}`);
  details.addEventListener("click", () => openDetail(visit.id, details));
  item.append(details);
  const message = document.createElement("p");
  message.className = "message";
  message.setAttribute("role", "status");
  message.tabIndex = -1; // takes focus after a decision (resolve)
  const note = notes.get(visit.id);
  if (note) {
    message.textContent = note.text;
    message.classList.toggle("ok", !!note.ok);
    // Only a refusal is an error; "Maria já autorizou às 19:19" is news, not a fault.
    message.classList.toggle("error", !!note.refused);
    // A decision still in the queue: no second one on top of it.
    if (note.state === "pending") item.querySelectorAll("button[data-action]").forEach((button) => { button.disabled = true; });
  }
  item.append(message);
}

const voiceURLs = new Map();

/**
 * "Ouvir recado": the recording is fetched on the tap (a list of pendências does not
 * download every recado), then played in the browser's own player, which has the
 * keyboard controls and labels screen readers know.
 */
function voicePlayer(visit) {
  const box = document.createElement("div");
  box.className = "voice";
  const seconds = visit.voice_message.duration_ms ? Math.max(1, Math.round(visit.voice_message.duration_ms / 1000)) : 0;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "button secondary";
  button.dataset.voice = visit.id;
  button.textContent = seconds ? `Ouvir recado (${seconds} s)` : "Ouvir recado";
  button.setAttribute("aria-label", `Ouvir recado de ${visit.visitor_name}`);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      if (!voiceURLs.has(visit.id)) voiceURLs.set(visit.id, URL.createObjectURL(await api("GET", `/v1/visits/${visit.id}/voice_message`, { raw: true })));
    } catch (error) {
      if (sessionEnded(error)) return;
      button.disabled = false;
      button.textContent = "Não foi possível carregar o recado. Toque de novo.";
      return;
    }
    const audio = document.createElement("audio");
    audio.controls = true;
    audio.src = voiceURLs.get(visit.id);
    audio.setAttribute("aria-label", `Recado de ${visit.visitor_name}`);
    button.replaceWith(audio);
    audio.focus();
    audio.play().catch(() => { /* autoplay refused: the controls are there */ });
  });
  box.append(button);
  return box;
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
  // The tapped button is disabled next: a keyboard or screen-reader user's place moves to
  // the item's result line (which then says what happened), never to the page's start.
  if (item.contains(document.activeElement)) message.focus({ preventScroll: true });
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

/**
 * Sends what the queue holds and schedules the next try of anything still waiting. `now`:
 * a sign of connectivity (back online, the socket back, the page shown, an answer): every
 * waiting tap goes at once, back-off or not.
 */
async function sendQueued({ now = false } = {}) {
  clearTimeout(drainTimer);
  drainTimer = 0;
  let result;
  try {
    result = await drain({ now });
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
  notes.set(record.visitID, { text: record.text, ok: record.ok, refused: !!record.refused, state: record.state });
  if ($("call").dataset.visit === record.visitID && !$("call").hidden) $("call-status").textContent = record.text;
  const item = document.querySelector(`li.visit[data-id="${CSS.escape(record.visitID)}"]`);
  if (!item) return;
  const message = item.querySelector(".message");
  if (message) {
    message.textContent = record.text;
    message.classList.toggle("ok", !!record.ok);
    message.classList.toggle("error", !!record.refused);
  }
  if (record.state !== "pending") {
    delete item.dataset.busy;
    if (record.visit) {
      const hadFocus = item.contains(document.activeElement);
      fillVisit(item, record.visit);
      if (hadFocus) item.querySelector(".message").focus({ preventScroll: true });
      item.dataset.signature = "";
      noteMoves();
    }
    load();
  }
}

// MARK: taps on a list that moves

/**
 * A tap on a button that has just moved, appeared or been redrawn under the finger is not
 * taken. The list moves while a resident looks at it: another resident's deny sends a
 * visit from "Tocando agora" to the history, a new ring pushes everything down, a redrawn
 * item loses its "Atender" row. A finger already on its way would then authorize the wrong
 * visitor, or answer instead of deny. Such an item takes taps again SETTLE_MS later
 * (longer than a reaction, well under a deliberate second tap), and a tap before that says
 * why it did nothing. Decision 0057.
 */
const SETTLE_MS = 600;
let listShown = false;

/**
 * Where an item and its buttons sit on the page: a scroll is not a move, but a change
 * above the buttons inside the item (a voice player replacing its button, a photo that
 * failed) is.
 */
function placeOf(item) {
  const box = item.getBoundingClientRect();
  const row = item.querySelector(".row");
  const buttons = row ? Math.round(row.getBoundingClientRect().top - box.top) : -1;
  return `${Math.round(box.left + window.scrollX)},${Math.round(box.top + window.scrollY)},${buttons}`;
}

/** Stamps the items that moved, appeared or were redrawn since the last look. */
function noteMoves() {
  const now = performance.now();
  for (const item of document.querySelectorAll("li.visit")) {
    if (item.offsetParent === null) continue; // on a hidden view: looked at when it shows again
    const place = placeOf(item);
    if (item.dataset.place === place && item.dataset.redrawn !== "1") continue;
    // The first list a resident sees after logging in moved under no finger.
    if (listShown) item.dataset.settlesAt = String(now + SETTLE_MS);
    item.dataset.place = place;
    delete item.dataset.redrawn;
  }
}

/** Whether `item` takes a tap now; if not, its message says why. */
function takesTaps(item) {
  noteMoves(); // a move nobody looked at yet counts as just now
  if (performance.now() >= Number(item.dataset.settlesAt || 0)) {
    delete item.dataset.tapRefused;
    return true;
  }
  item.dataset.tapRefused = "1"; // for the browser tests' driver, which then taps again
  const message = item.querySelector(".message");
  if (message) {
    message.classList.remove("ok");
    message.textContent = text.LIST_MOVED;
  }
  return false;
}

// Anything that changes the home view's size (a visit added or redrawn, an error line)
// may have moved the items: look right away rather than at the next tap.
if (typeof ResizeObserver === "function") new ResizeObserver(() => noteMoves()).observe($("view-home"));

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

/**
 * The geofence badge over the video, as the server words it (`geofence_badge`): "✓ Na
 * entrada" green, "⚠ A 340m da portaria" amber, "Localização desconhecida". The symbol is
 * hidden from screen readers, which hear "Localização do visitante: Na entrada".
 */
function showCallBadge(visit) {
  const status = visit.geofence && visit.geofence.status ? visit.geofence.status : "unknown";
  const badge = visit.geofence_badge || text.geofenceBadge(status, visit.geofence && visit.geofence.distance_m);
  const symbol = /^[✓⚠]\s*/.exec(badge);
  $("call-badge").dataset.status = status;
  $("call-badge-symbol").textContent = symbol ? `${symbol[0].trim()} ` : "";
  $("call-badge-text").textContent = symbol ? badge.slice(symbol[0].length) : badge;
}

/** "Mudo": the resident's microphone off (and on again); the camera keeps going. */
function toggleMute() {
  const button = $("call-mute");
  const muted = button.getAttribute("aria-pressed") !== "true";
  const stream = $("call-local").srcObject;
  if (stream) for (const track of stream.getAudioTracks()) track.enabled = !muted;
  button.setAttribute("aria-pressed", String(muted));
}

function openCall(visit) {
  const section = $("call");
  section.hidden = false;
  // The call covers the screen: the page behind it does not scroll (nor show a scrollbar).
  document.documentElement.classList.add("in-call");
  section.dataset.state = "connecting";
  section.dataset.visit = visit.id;
  $("call-who").textContent = `${visit.visitor_name} · ${visit.unit ? visit.unit.label : ""}`;
  showCallBadge(visit);
  $("call-mute").hidden = false;
  $("call-mute").setAttribute("aria-pressed", "false");
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
    iceServers: () => api("GET", "/v1/calls/ice_servers"),
    localVideo: $("call-local"),
    remoteVideo: $("call-remote"),
    onState: (state, text) => {
      section.dataset.state = state;
      $("call-status").textContent = text;
      if (state === "unavailable") {
        // No video, but the decision buttons stay: the answer still claimed the visit.
        // No microphone was opened either, so there is nothing to mute or hang up.
        call = null;
        $("call-videos").hidden = true;
        $("call-hangup").hidden = true;
        $("call-unmute").hidden = true;
        $("call-mute").hidden = true;
        $("call-close").hidden = false;
      } else if (state === "ended") {
        call = null;
        $("call-actions").hidden = true;
        $("call-videos").hidden = true;
        $("call-hangup").hidden = true;
        $("call-unmute").hidden = true;
        $("call-mute").hidden = true;
        $("call-close").hidden = false;
        $("call-close").focus();
      }
    },
    onMuted: () => { $("call-unmute").hidden = false; },
  });
  call.await();
  // The call covers the screen: focus goes into it, to its heading.
  $("call-title").focus({ preventScroll: true });
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
  // A reconnect names the last event seen: the server replays what was missed (or says
  // `resync_required`), so the lists are not reloaded just because the socket came back.
  const resuming = lastSeq !== null;
  const since = resuming ? `&since=${lastSeq}` : "";
  const ws = new WebSocket(`${scheme}//${location.host}/v1/realtime?ticket=${encodeURIComponent(ticket)}&device_id=${encodeURIComponent(deviceID)}${since}`);
  socket = ws;
  ws.onopen = () => {
    clearInterval(pollTimer);
    pollTimer = 0;
    $("connection").textContent = "";
    document.body.dataset.connection = "live";
    sendQueued({ now: true });
    if (!resuming) load();
  };
  ws.onmessage = (message) => {
    try {
      const frame = JSON.parse(message.data);
      if (call && typeof frame.type === "string" && (frame.type.startsWith("call.") || frame.type === "error")) call.handle(frame);
      // The visit closed (resolved elsewhere, cancelled): its call is over too.
      if (call && frame.type && ["visit.resolved", "visit.cancelled", "visit.expired"].includes(frame.type)
          && frame.data && frame.data.visit_id === call.visitID) call.close("Chamada encerrada.");
      if (Number.isSafeInteger(frame.seq) && frame.seq >= 0) lastSeq = frame.seq;
      // A replay after a reconnect is a burst of events: one reload for all of them.
      if (frame.type && (frame.type.startsWith("visit.") || frame.type === "resync_required")) loadSoon();
      // The open detail follows its visit (someone decided, the visitor left).
      if (detailVisitID && !$("view-detail").hidden && frame.type && frame.type.startsWith("visit.")
          && frame.data && frame.data.visit_id === detailVisitID) openDetail(detailVisitID, null, { refresh: true });
    } catch { /* not JSON: ignore */ }
  };
  ws.onclose = () => { if (socket === ws) liveFailed(); };
}

function loadSoon() {
  clearTimeout(loadTimer);
  loadTimer = setTimeout(load, 150);
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
  clearTimeout(loadTimer);
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

/** Where notifications stand on this browser, and how to fix it (the settings screen's line). */
async function notifyStateText() {
  if (!("Notification" in window) || !("PushManager" in window)) {
    $("settings-notify").dataset.state = "unsupported";
    return "Este navegador não avisa com o app fechado. No iPhone, toque em Compartilhar → Adicionar à Tela de Início e abra o app por lá.";
  }
  const registration = await workerReady;
  const subscription = registration ? await registration.pushManager.getSubscription().catch(() => null) : null;
  const state = Notification.permission === "denied" ? "denied"
    : Notification.permission === "granted" && subscription ? "allowed" : "not_determined";
  $("settings-notify").dataset.state = state;
  if (state === "denied") return "Desativadas — libere no navegador: cadeado ao lado do endereço → Notificações → Permitir.";
  if (state === "allowed") return "Ativadas — este navegador toca mesmo com a aba fechada.";
  return "Ainda não autorizadas — toque em “Ativar notificações” na tela inicial.";
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
  const phone = await currentDevice();
  const capabilities = { notifications_enabled: true };
  if (phone.maker) capabilities.manufacturer = phone.maker;
  if (phone.osVersion) capabilities.os_version = phone.osVersion;
  // A browser cannot see the phone's battery setting: on Android it is what the resident
  // said in Settings ("Já liberei o navegador"), so a maker's power saver is flagged for
  // the administrator until then.
  if (phone.platform === "android") capabilities.ignoring_battery_optimizations = batteryExempted();
  const device = {
    installation_id: deviceID, platform: "web", device_name: "Navegador", locale: "pt-BR", capabilities,
  };
  await api("POST", "/v1/devices", { body: { ...device, web_push: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } } } });
  // The service worker registers a replaced subscription (`pushsubscriptionchange`) for
  // this same device, with the tab closed.
  await setValue("device", device).catch(() => {});
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

// MARK: visit detail (photo, where the visitor was, voice message, attempts timeline)

/** The home screen gives way to one other view; `back` returns focus where the resident was. */
let returnFocus = null;

function showView(id, from) {
  if (from) returnFocus = from;
  for (const view of ["view-home", "view-detail", "view-settings"]) $(view).hidden = view !== id;
}

function backHome() {
  detailVisitID = "";
  showView("view-home");
  // The list may have redrawn the visit meanwhile: its new Detalhes button, then.
  const target = (returnFocus && sameOrSuccessor(returnFocus, returnFocus.dataset.visit)) || $("refresh");
  target.focus();
  returnFocus = null;
}

const COMPASS = ["norte", "nordeste", "leste", "sudeste", "sul", "sudoeste", "oeste", "noroeste"];

/** The eight compass points, in pt-BR, as ClientText.compassPoint. */
function compassPoint(degrees) {
  const normalized = ((degrees % 360) + 360) % 360;
  return COMPASS[Math.floor((normalized * 2 + 45) / 90) % 8];
}

/** "340m", "1,2km", "12km", as Geofence.formatDistance. */
function formatDistance(metres) {
  const tens = Math.round(metres / 10) * 10;
  if (tens < 1000) return `${Math.max(tens, 10)}m`;
  const tenths = Math.round(metres / 100) / 10;
  if (tenths < 10) return `${Math.trunc(tenths)},${Math.round(tenths * 10) % 10}km`;
  return `${Math.round(metres / 1000)}km`;
}

/** "A 340m da portaria, a nordeste", "Na entrada (a 12m da portaria)", as ClientText.location. */
function locationText(geofence) {
  const g = geofence || { status: "unknown" };
  if (g.status === "at_entrance") return typeof g.distance_m === "number" ? `Na entrada (a ${formatDistance(g.distance_m)} da portaria)` : "Na entrada";
  if (g.status === "away") {
    const distance = formatDistance(g.distance_m || 0);
    return typeof g.bearing_deg === "number" ? `A ${distance} da portaria, a ${compassPoint(g.bearing_deg)}` : `A ${distance} da portaria`;
  }
  return "Localização desconhecida";
}

/** One line of the attempts timeline, as ClientText.attempt ("14:32 · Tocou para Maria (etapa 1)"). */
function attemptText(attempt, visit = {}) {
  const who = attempt.user && attempt.user.name ? text.firstName(attempt.user.name) : "";
  const step = typeof attempt.step === "number" ? ` (etapa ${attempt.step + 1})` : "";
  const lines = {
    ring: who ? `Tocou para ${who}${step}` : `Tocou${step}`,
    push_sent: who ? `Notificação enviada para ${who}` : "Notificação enviada",
    push_receipt: who ? `Notificação recebida por ${who}` : "Notificação recebida",
    answer: who ? `${who} atendeu` : "Atendida",
    decline: who ? `${who} recusou a chamada` : "Chamada recusada",
    timeout: who ? `${who} não atendeu` : "Ninguém atendeu",
    // The timeline's one resolution is the visit's: it says what was decided.
    resolution: resolutionLine(who, attempt, visit.resolution),
    cancel: "O visitante desistiu",
    expire: "Expirou sem resposta",
    call_started: "Chamada de vídeo iniciada",
    call_connected: "Vídeo conectado",
    call_ended: "Chamada de vídeo encerrada",
  };
  return `${time(attempt.at)} · ${lines[attempt.kind] || "Evento"}`;
}

/** "João autorizou", "Maria negou", "Deixado na portaria automaticamente". */
function resolutionLine(who, attempt, resolution) {
  const action = resolution && resolution.action;
  if (attempt.channel === "auto" || (resolution && resolution.via === "auto")) {
    return action === "leave_at_concierge" ? "Deixado na portaria automaticamente" : "Decidido automaticamente";
  }
  const verbs = { authorize: "autorizou", deny: "negou", leave_at_concierge: "pediu para deixar na portaria" };
  const verb = verbs[action];
  if (!who) return verb ? `Decidido: ${OUTCOMES[action]}` : "Decidido";
  return verb ? `${who} ${verb}` : `${who} decidiu`;
}

let voiceURL = "";

/** The visit the detail shows while it is open (a realtime event about it redraws it). */
let detailVisitID = "";

/** The detail of visit `id`; `refresh` redraws it in place (no focus move, no blank). */
async function openDetail(id, from, { refresh = false } = {}) {
  detailVisitID = id;
  if (refresh) return fillDetail(id);
  showView("view-detail", from);
  showError("detail-error", "");
  for (const id of ["detail-what", "detail-outcome", "detail-location"]) $(id).textContent = "";
  $("detail-title").textContent = "Carregando…";
  $("detail-attempts").replaceChildren();
  $("detail-photo").hidden = true;
  $("detail-no-photo").hidden = true;
  // An SVG element has no `hidden` property: the attribute itself.
  $("detail-compass").setAttribute("hidden", "");
  $("detail-voice-box").hidden = true;
  $("detail-title").focus();
  return fillDetail(id);
}

async function fillDetail(id) {
  let visit;
  try {
    visit = await api("GET", `/v1/visits/${encodeURIComponent(id)}`);
  } catch (error) {
    if (sessionEnded(error)) return;
    $("detail-title").textContent = "Visita";
    return showError("detail-error", error.message);
  }
  // Another visit was opened while this one loaded.
  if (id !== detailVisitID) return;
  $("detail-title").textContent = visit.visitor_name;
  $("detail-what").textContent = `${visit.kind === "delivery" ? `Entrega${visit.carrier ? ` ${visit.carrier}` : ""}` : "Visita"} · ${visit.unit.label} · ${time(visit.created_at)}`;
  $("detail-outcome").textContent = visit.resolution
    ? `${OUTCOMES[visit.resolution.action] || ""}${visit.resolution.by && visit.resolution.by.name ? ` por ${visit.resolution.by.name}` : ""} às ${time(visit.resolution.at)}`
    : (STATUSES[visit.status] || "");
  $("detail-location").textContent = locationText(visit.geofence);
  // "Localização desconhecida" is the usual case, not news: it is not set in bold.
  $("detail-location").className = visit.geofence && visit.geofence.status !== "unknown" ? "" : "unknown";
  // The direction drawn from the gate (the dot in the middle), north up: no map tiles,
  // nothing leaves this server.
  if (visit.geofence && typeof visit.geofence.bearing_deg === "number") {
    $("detail-arrow").setAttribute("transform", `rotate(${visit.geofence.bearing_deg})`);
    $("detail-compass").removeAttribute("hidden");
  }
  $("detail-photo").hidden = true;
  $("detail-no-photo").hidden = true;
  if (visit.photo) {
    try {
      if (!photoURLs.has(visit.id)) photoURLs.set(visit.id, URL.createObjectURL(await api("GET", `/v1/visits/${visit.id}/photo`, { raw: true })));
      $("detail-photo").src = photoURLs.get(visit.id);
      $("detail-photo").hidden = false;
    } catch {
      $("detail-no-photo").hidden = false;
    }
  } else {
    $("detail-no-photo").hidden = false;
  }
  // A refresh keeps a recado that is playing.
  if (visit.voice_message && $("detail-voice-box").hidden) {
    try {
      if (voiceURL) URL.revokeObjectURL(voiceURL);
      voiceURL = URL.createObjectURL(await api("GET", `/v1/visits/${visit.id}/voice_message`, { raw: true }));
      $("detail-voice").src = voiceURL;
      $("detail-voice-box").hidden = false;
    } catch { /* the player stays hidden */ }
  }
  const attempts = [...(visit.attempts || [])].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  $("detail-attempts").replaceChildren(...attempts.map((attempt) => {
    const line = document.createElement("li");
    line.dataset.kind = attempt.kind;
    line.textContent = attemptText(attempt, visit);
    return line;
  }));
}

// MARK: settings (delivery rule, ring order, devices, notifications)

const RULES = [
  ["ask", "Sempre me perguntar"],
  ["ask_then_concierge", "Perguntar; sem resposta, deixar na portaria"],
  ["leave_at_concierge", "Deixar na portaria sem perguntar"],
];
const MODES = [["sequential", "Um morador por vez, na ordem abaixo"], ["simultaneous", "Todos ao mesmo tempo"]];
const PLATFORMS = { ios: "iPhone", android: "Android", web: "Navegador" };

function radios(name, options, checked, legendText) {
  const fieldset = document.createElement("fieldset");
  const legend = document.createElement("legend");
  legend.textContent = legendText;
  fieldset.append(legend);
  for (const [value, label] of options) {
    const row = document.createElement("label");
    row.className = "choice";
    const input = document.createElement("input");
    input.type = "radio";
    input.name = name;
    input.value = value;
    input.checked = value === checked;
    row.append(input, document.createTextNode(label));
    fieldset.append(row);
  }
  return fieldset;
}

async function openSettings() {
  showView("view-settings", $("open-settings"));
  showError("settings-error", "");
  $("settings-title").focus();
  const box = $("settings-units");
  box.replaceChildren();
  if (session && !session.units) {
    // A session saved before the app kept the units: ask once.
    try {
      session.units = ((await api("GET", "/v1/me")).units || []).map((unit) => ({ id: unit.id, label: unit.label }));
      await saveSession(session);
    } catch (error) {
      if (sessionEnded(error)) return;
      showError("settings-error", error.message);
    }
  }
  for (const unit of (session && session.units) || []) {
    try {
      box.append(unitSettingsForm(unit, await api("GET", `/v1/units/${encodeURIComponent(unit.id)}/settings`)));
    } catch (error) {
      if (sessionEnded(error)) return;
      showError("settings-error", error.message);
    }
  }
  loadDevices();
  showBattery();
  $("settings-notify").textContent = await notifyStateText();
}

const BATTERY_KEY = "portaria.app.battery-exempted";

function batteryExempted() {
  try { return localStorage.getItem(BATTERY_KEY) === "1"; } catch { return false; }
}

/**
 * The maker's steps to keep its power saver from silencing the browser (Android: the web
 * app's ringing path), or on an iPhone how the app rings at all (a home-screen web app
 * gets Web Push from iOS 16.4 on).
 */
async function showBattery() {
  const phone = await currentDevice();
  const section = $("battery");
  const steps = phone.platform === "android" ? batterySteps(phone.maker) : null;
  section.dataset.maker = phone.maker;
  if (phone.platform === "ios") {
    $("battery-title").textContent = "iPhone";
    $("battery-intro").textContent = "No iPhone o app só toca com a aba fechada se estiver na Tela de Início (iOS 16.4 ou mais novo):";
    $("battery-steps").replaceChildren(...["Abra este endereço no Safari.", "Toque em Compartilhar → Adicionar à Tela de Início.",
      "Abra o Portaria pelo ícone e ative as notificações."].map(listItem));
    $("battery-done").hidden = true;
    section.hidden = false;
    return;
  }
  if (phone.platform !== "android") {
    section.hidden = true;
    return;
  }
  $("battery-title").textContent = "Bateria";
  $("battery-intro").textContent = steps
    ? `Celulares ${steps.name} desligam o navegador para poupar bateria, e as chamadas da portaria deixam de tocar. Libere assim:`
    : "Alguns celulares desligam o navegador para poupar bateria. Se as chamadas não tocarem, libere o navegador nas configurações de bateria do Android.";
  $("battery-steps").replaceChildren(...(steps ? steps.steps : ["Configurações → Apps → o navegador → Bateria → Sem restrições."]).map(listItem));
  $("battery-done").hidden = false;
  $("battery-state").textContent = batteryExempted() ? "Você disse que já liberou o navegador." : "";
  section.hidden = false;
}

function listItem(sentence) {
  const item = document.createElement("li");
  item.textContent = sentence;
  return item;
}

/** "Já liberei o navegador": kept here and told to the server with the device. */
async function batteryDone() {
  try { localStorage.setItem(BATTERY_KEY, "1"); } catch { /* private mode */ }
  $("battery-state").textContent = "Você disse que já liberou o navegador.";
  refreshSubscription();
}

function unitSettingsForm(unit, answer) {
  const form = document.createElement("form");
  form.className = "unit-settings";
  form.dataset.unit = unit.id;
  form.noValidate = true;
  const title = document.createElement("h3");
  title.textContent = `Unidade ${unit.label}`;
  const settings = answer.settings;
  const names = new Map((answer.residents || []).map((person) => [person.id, person.name]));
  let order = [...(settings.ring_order || [])];
  for (const person of answer.residents || []) if (!order.includes(person.id)) order.push(person.id);
  const rule = radios(`rule-${unit.id}`, RULES, settings.delivery_rule, "Entregas");
  const mode = radios(`mode-${unit.id}`, MODES, settings.ring_mode, "Ordem de chamada");
  const list = document.createElement("ol");
  list.className = "ring-order";
  const draw = (focusID, focusDirection) => {
    list.replaceChildren(...order.map((id, index) => {
      const name = names.get(id) || "Morador";
      const item = document.createElement("li");
      item.dataset.user = id;
      const label = document.createElement("span");
      label.textContent = `${index + 1}º ${name}`;
      const move = (direction, symbol, description) => {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "button secondary";
        button.dataset.move = direction;
        button.textContent = symbol;
        button.setAttribute("aria-label", description);
        const target = index + (direction === "up" ? -1 : 1);
        button.disabled = target < 0 || target >= order.length;
        button.addEventListener("click", () => {
          [order[index], order[target]] = [order[target], order[index]];
          draw(id, direction);
        });
        return button;
      };
      item.append(label, move("up", "↑", `Mover ${name} para cima na ordem de chamada`),
        move("down", "↓", `Mover ${name} para baixo na ordem de chamada`));
      return item;
    }));
    // Focus follows the person moved, so the keyboard can keep moving them.
    if (focusID) {
      const moved = list.querySelector(`li[data-user="${CSS.escape(focusID)}"] button[data-move="${focusDirection}"]`);
      const other = list.querySelector(`li[data-user="${CSS.escape(focusID)}"] button:not(:disabled)`);
      (moved && !moved.disabled ? moved : other || list).focus();
    }
  };
  draw();
  mode.append(list);
  const status = document.createElement("p");
  status.className = "message";
  status.setAttribute("role", "status");
  const save = document.createElement("button");
  save.type = "submit";
  save.className = "button primary";
  save.textContent = "Salvar";
  form.append(title, rule, mode, save, status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    save.disabled = true;
    status.classList.remove("ok");
    status.textContent = "Salvando…";
    const body = {
      ...settings,
      delivery_rule: form.querySelector(`input[name="rule-${CSS.escape(unit.id)}"]:checked`).value,
      ring_mode: form.querySelector(`input[name="mode-${CSS.escape(unit.id)}"]:checked`).value,
      ring_order: order,
    };
    try {
      await api("PUT", `/v1/units/${encodeURIComponent(unit.id)}/settings`, { body });
      Object.assign(settings, body);
      status.textContent = "Salvo ✓";
      status.classList.add("ok");
    } catch (error) {
      if (sessionEnded(error)) return;
      status.textContent = error.status === 0 ? "Sem conexão. Suas alterações não foram salvas."
        : error.status === 403 ? "Você não pode alterar as configurações desta unidade."
          : "Não foi possível salvar agora. Tente de novo.";
    } finally {
      save.disabled = false;
    }
  });
  return form;
}

async function loadDevices() {
  let devices;
  try {
    ({ devices } = await api("GET", "/v1/devices"));
  } catch (error) {
    if (sessionEnded(error)) return;
    return showError("settings-error", error.message);
  }
  $("devices-empty").hidden = devices.length > 0;
  $("devices").replaceChildren(...devices.map((device) => {
    const item = document.createElement("li");
    item.dataset.id = device.id;
    const mine = device.installation_id === deviceID;
    const name = mine ? "Este aparelho" : (device.device_name || "Aparelho sem nome");
    const title = document.createElement("p");
    title.className = "name";
    title.textContent = `${name} · ${PLATFORMS[device.platform] || device.platform}`;
    const state = document.createElement("p");
    state.className = "hint";
    state.textContent = device.push_token_status === "active" ? "Recebe notificações" : "Não recebe notificações";
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "button deny";
    remove.textContent = "Remover";
    remove.setAttribute("aria-label", `Remover o aparelho ${name}`);
    remove.addEventListener("click", async () => {
      remove.disabled = true;
      try {
        await api("DELETE", `/v1/devices/${encodeURIComponent(device.id)}`);
        // This browser's own subscription goes too, so it stops ringing here as well.
        if (mine) await unsubscribe();
        item.remove();
        $("devices-empty").hidden = $("devices").children.length > 0;
        $("devices-title").focus();
      } catch (error) {
        if (sessionEnded(error)) return;
        remove.disabled = false;
        showError("settings-error", error.message);
      }
    });
    item.append(title, state, remove);
    return item;
  }));
}

// MARK: start

$("view-login").addEventListener("submit", login);
$("login-mode").addEventListener("click", () => setLoginMode(!smsMode));
$("phone").addEventListener("input", showPhonePreview);
$("detail-back").addEventListener("click", backHome);
$("settings-back").addEventListener("click", backHome);
$("open-settings").addEventListener("click", openSettings);
$("refresh").addEventListener("click", load);
$("logout").addEventListener("click", () => { unsubscribe(); logout(); });
$("notify-enable").addEventListener("click", enableNotifications);
$("call-hangup").addEventListener("click", () => { if (call) call.hangup(); });
$("call-close").addEventListener("click", () => {
  $("call").hidden = true;
  document.documentElement.classList.remove("in-call");
  $("title").focus({ preventScroll: true });
});
$("call-mute").addEventListener("click", toggleMute);
$("battery-done").addEventListener("click", batteryDone);
$("call-unmute").addEventListener("click", () => {
  $("call-remote").muted = false;
  $("call-unmute").hidden = true;
});
window.addEventListener("pagehide", () => { if (call) call.hangup(); });
// Queued taps go out as soon as there is a chance: back online, back to the screen, or
// told by the service worker (it sent one from a notification).
window.addEventListener("online", () => {
  sendQueued({ now: true });
  // The socket may have died unnoticed offline: live updates come back at once too.
  if (session && (!socket || socket.readyState !== WebSocket.OPEN)) startLive();
});
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState !== "visible" || !session) return;
  sendQueued({ now: true });
  load();
});
if ("serviceWorker" in navigator) {
  navigator.serviceWorker.addEventListener("message", (event) => {
    const data = event.data || {};
    if (data.type !== "open_visit" || !data.visit_id) return;
    wantedVisit = String(data.visit_id);
    if (session) load();
  });
}
try {
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (event) => showAction(event.data);
} catch { /* no BroadcastChannel: the lists still refresh over the socket */ }

(async () => {
  session = await loadSession().catch(() => null);
  if (session && session.token && !session.expired) {
    // Outcomes of taps made before a reload (or from a notification) are shown again.
    for (const record of await recentActions().catch(() => [])) {
      if (record.userID === session.userID) notes.set(record.visitID, { text: record.text, ok: record.ok, refused: !!record.refused, state: record.state });
    }
    enterHome();
    sendQueued();
  } else {
    session = null;
  }
})();

// The gate page (the QR code on the gate): choose the unit, say who you are, ring,
// and follow the call live. Plain ES module, no framework, no build step.

import { request, ApiError } from "./api.js";
import { VisitFollower } from "./live.js";
import { VideoCall } from "../../shared/call.js";
import { Camera, locate, mediaAvailable, VoiceRecorder } from "./media.js";

const $ = (id) => document.getElementById(id);

const gateToken = decodeURIComponent(location.pathname.split("/").filter(Boolean)[1] || "");
const storageKey = `portaria.gate.${gateToken}.visit`;

const state = {
  units: [],
  location: null,
  photo: null,
  photoURL: "",
  camera: null,
  follower: null,
  visitorToken: "",
  visit: null,
  recorder: null,
  voice: null,
  voiceURL: "",
  call: null,
  callDone: false,
};

// MARK: views

function show(view) {
  for (const id of ["view-loading", "view-fatal", "view-form", "view-visit"]) $(id).hidden = id !== view;
}

function fatal(title, message) {
  $("fatal-title").textContent = title;
  $("fatal-message").textContent = message;
  show("view-fatal");
}

function setText(id, text, tone) {
  const element = $(id);
  element.textContent = text;
  element.classList.toggle("ok", tone === "ok");
  element.classList.toggle("bad", tone === "bad");
}

function showError(id, message) {
  const element = $(id);
  element.textContent = message || "";
  element.hidden = !message;
}

// MARK: loading the gate

async function loadGate() {
  show("view-loading");
  if (!gateToken) {
    $("company").textContent = "Portaria";
    fatal("Endereço incompleto", "Leia de novo o QR code do portão.");
    return;
  }
  let gate;
  try {
    gate = await request("GET", `/v1/gates/${encodeURIComponent(gateToken)}`, { what: "portão" });
  } catch (error) {
    $("company").textContent = "Portaria";
    const unknown = error instanceof ApiError && error.status === 404;
    fatal(unknown ? "Portão não encontrado" : "Não foi possível abrir esta portaria", error.message);
    return;
  }
  $("company").textContent = gate.company.name;
  document.title = `${gate.company.name} — Portaria`;
  state.units = gate.units;
  const select = $("unit");
  select.length = 1;
  for (const unit of gate.units) select.add(new Option(unit.label, unit.id));
  if (!(await resume())) show("view-form");
}

// MARK: the form

function kind() {
  return $("kind-delivery").checked ? "delivery" : "visit";
}

function updateKind() {
  const delivery = kind() === "delivery";
  $("carrier-field").hidden = !delivery;
  $("carrier-other-field").hidden = !delivery || $("carrier").value !== "Outro";
}

async function askLocation() {
  const button = $("location-button");
  button.disabled = true;
  setText("location-status", "Procurando sua localização…");
  try {
    state.location = await locate();
    setText("location-status", `Localização pronta (precisão de ${state.location.accuracy_m} m).`, "ok");
    button.textContent = "Atualizar localização";
  } catch (error) {
    state.location = null;
    setText("location-status", error.message, "bad");
  } finally {
    button.disabled = false;
  }
}

async function openCamera() {
  setText("photo-status", "");
  if (!mediaAvailable()) {
    setText("photo-status", "Este navegador não permite usar a câmera por aqui. Dá para chamar sem foto.", "bad");
    return;
  }
  state.camera = state.camera || new Camera($("camera-video"));
  $("camera-open").disabled = true;
  try {
    await state.camera.open();
    $("camera").hidden = false;
    $("camera-open").hidden = true;
    $("camera-shoot").focus();
  } catch (error) {
    setText("photo-status", error.message, "bad");
  } finally {
    $("camera-open").disabled = false;
  }
}

function closeCamera() {
  if (state.camera) state.camera.close();
  $("camera").hidden = true;
  $("camera-open").hidden = false;
}

async function takePhoto() {
  try {
    const blob = await state.camera.snapshot();
    setPhoto(blob);
    closeCamera();
    $("camera-open").textContent = "Tirar outra foto";
    setText("photo-status", "Foto pronta. Ela vai junto com a chamada.", "ok");
  } catch (error) {
    setText("photo-status", error.message, "bad");
  }
}

function setPhoto(blob) {
  if (state.photoURL) URL.revokeObjectURL(state.photoURL);
  state.photo = blob;
  state.photoURL = blob ? URL.createObjectURL(blob) : "";
  $("photo-image").src = state.photoURL;
  $("photo-preview").hidden = !blob;
}

function removePhoto() {
  setPhoto(null);
  $("camera-open").textContent = "Abrir câmera";
  setText("photo-status", "Foto removida.");
}

function validate() {
  if (!$("unit").value) return ["unit", "Escolha a unidade."];
  const name = $("name").value.trim();
  if (!name) return ["name", "Informe seu nome."];
  if (name.length > 80) return ["name", "O nome pode ter até 80 letras."];
  if (kind() === "delivery" && $("carrier").value === "Outro" && !$("carrier-other").value.trim()) {
    return ["carrier-other", "Informe a empresa da entrega."];
  }
  return null;
}

async function ring(event) {
  event.preventDefault();
  showError("form-error", "");
  const problem = validate();
  if (problem) {
    showError("form-error", problem[1]);
    $(problem[0]).focus();
    return;
  }
  const body = { unit_id: $("unit").value, kind: kind(), visitor_name: $("name").value.trim() };
  if (body.kind === "delivery") {
    body.carrier = $("carrier").value === "Outro" ? $("carrier-other").value.trim() : $("carrier").value;
  }
  if (state.location) body.location = state.location;
  const button = $("ring");
  button.disabled = true;
  button.textContent = "Chamando…";
  let created;
  try {
    created = await ringWithRetries(body);
  } catch (error) {
    showError("form-error", error.message);
    $("form-error").scrollIntoView({ block: "center", behavior: "smooth" });
    return;
  } finally {
    button.disabled = false;
    button.textContent = "Chamar";
  }
  closeCamera();
  state.visitorToken = created.visitor_token;
  state.visit = created.visit;
  try {
    sessionStorage.setItem(storageKey, JSON.stringify({ token: created.visitor_token }));
  } catch { /* private mode: the page still works, only a reload loses the call */ }
  enterVisit(created.visit);
  if (state.photo) uploadPhoto();
}

// A 503 or 507 says the server changed nothing and when to try again (its database or
// disk failed for a moment): the page rings again by itself, a few times, as the visitor
// would after a lost connection, before it shows the error.
const FAULT_RETRIES = 5;

async function ringWithRetries(body) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request("POST", `/v1/gates/${encodeURIComponent(gateToken)}/visits`, { body, what: "chamada" });
    } catch (error) {
      if (!(error instanceof ApiError) || (error.status !== 503 && error.status !== 507) || attempt > FAULT_RETRIES) throw error;
      showError("form-error", "A portaria está com problemas agora. Tentando de novo…");
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(10, error.retryAfter || 1)) * 1000));
      showError("form-error", "");
    }
  }
}

async function uploadPhoto() {
  try {
    await request("POST", "/v1/visitor/visit/photo", { body: state.photo, token: state.visitorToken, what: "a foto" });
  } catch (error) {
    showError("visit-error", `A chamada foi feita, mas a foto não foi enviada: ${error.message}`);
  }
}

// MARK: following the visit

const STATES = {
  ringing: ["ringing", "Chamando…", "Aguarde: estamos chamando a unidade."],
  answered: ["answered", "Atendido", "O morador atendeu. Aguarde a resposta."],
  unanswered: ["unanswered", "Ninguém atendeu — deixe um recado", "Ninguém atendeu agora. Grave um recado de voz para o morador."],
  cancelled: ["closed", "Chamada cancelada", "Você cancelou esta chamada."],
  expired: ["closed", "Chamada encerrada", "Esta chamada expirou."],
};
const RESOLUTIONS = {
  authorize: ["authorized", "Autorizado — pode entrar", "O morador autorizou a sua entrada."],
  deny: ["denied", "Negado", "O morador não autorizou a entrada."],
  leave_at_concierge: ["concierge", "Deixe na portaria", "Deixe a entrega com a portaria do condomínio."],
};

function describeVisit(status, action) {
  if (status === "resolved") return RESOLUTIONS[action] || ["closed", "Chamada encerrada", "O morador respondeu."];
  return STATES[status] || ["ringing", "Chamando…", ""];
}

function enterVisit(visit) {
  show("view-visit");
  const unit = visit.unit ? visit.unit.label : "";
  const what = visit.kind === "delivery" ? `Entrega${visit.carrier ? ` ${visit.carrier}` : ""}` : "Visita";
  $("visit-summary").textContent = `${what} para ${unit} · ${visit.visitor_name}`;
  $("visit-new").hidden = true;
  $("visit-cancel").hidden = false;
  showError("visit-error", "");
  endCall();
  state.callDone = false;
  resetCallView();
  renderVisit(visit.status, visit.resolution ? visit.resolution.action : undefined);
  $("visit-state").focus();
  if (state.follower) state.follower.stop();
  state.follower = new VisitFollower(state.visitorToken, {
    onVisit: ({ status, action }) => {
      renderVisit(status, action);
      followCall(status);
    },
    onCall: (frame) => { if (state.call) state.call.handle(frame); },
    onConnection: (connection) => {
      // Also a hook for the browser tests: "live" means the realtime socket is open.
      document.body.dataset.connection = connection;
      const texts = { live: "", polling: "Conexão instável: atualizando a cada poucos segundos.", offline: "Sem conexão. Tentando de novo…" };
      $("visit-connection").textContent = texts[connection] || "";
    },
    onError: (message) => showError("visit-error", message),
  });
  state.follower.start();
  followCall(visit.status);
}

// MARK: video call (decision 0009: the visitor offers once the resident answered)

function followCall(status) {
  if (status === "answered" && !state.call && !state.callDone && state.visit) startCall();
  else if (status !== "answered" && state.call) endCall();
}

function startCall() {
  const token = state.visitorToken;
  const section = $("call");
  section.hidden = false;
  section.dataset.state = "connecting";
  $("call-hangup").hidden = false;
  $("call-unmute").hidden = true;
  $("call-videos").hidden = false;
  state.call = new VideoCall({
    role: "visitor",
    visitID: state.visit.id,
    send: (frame) => !!state.follower && state.follower.send(frame),
    iceServers: () => request("GET", "/v1/calls/ice_servers", { token, what: "chamada" }),
    localVideo: $("call-local"),
    remoteVideo: $("call-remote"),
    onState: (callState, text) => {
      section.dataset.state = callState;
      $("call-status").textContent = text;
      if (callState === "ended" || callState === "unavailable") {
        state.call = null;
        state.callDone = true;
        $("call-hangup").hidden = true;
        $("call-unmute").hidden = true;
        $("call-videos").hidden = true;
      }
    },
    onMuted: () => { $("call-unmute").hidden = false; },
  });
  state.call.start();
}

/** Closes the call here without a frame: the visit is over, the server ends the call itself. */
function endCall() {
  if (state.call) state.call.close();
  state.call = null;
}

function resetCallView() {
  $("call").hidden = true;
  $("call").dataset.state = "";
  $("call-status").textContent = "";
}

function renderVisit(status, action) {
  const [tone, title, detail] = describeVisit(status, action);
  const card = $("visit-card");
  const changed = card.dataset.state !== tone || $("visit-state").textContent !== title;
  card.dataset.state = tone;
  card.dataset.status = status;
  $("visit-state").textContent = title;
  $("visit-detail").textContent = detail;
  const terminal = ["resolved", "cancelled", "expired"].includes(status);
  $("visit-cancel").hidden = terminal;
  $("visit-new").hidden = !terminal;
  $("voice").hidden = status !== "unanswered";
  if (terminal) {
    $("visit-connection").textContent = "";
    // The outcome replaces any earlier error line (a cancel that lost to the decision).
    if (status === "resolved") showError("visit-error", "");
    try { sessionStorage.removeItem(storageKey); } catch { /* ignore */ }
  }
  if (changed && navigator.vibrate && (status === "resolved" || status === "answered")) navigator.vibrate(200);
}

async function cancelVisit() {
  const button = $("visit-cancel");
  button.disabled = true;
  try {
    const visit = await request("POST", "/v1/visitor/visit/cancel", { token: state.visitorToken, what: "chamada" });
    renderVisit(visit.status, visit.resolution ? visit.resolution.action : undefined);
    if (state.follower) state.follower.stop();
  } catch (error) {
    if (error.status === 409) {
      // Decided (or ended) a moment before the tap: what the visitor needs is the outcome
      // ("Autorizado — pode entrar"), not a red line saying the call is over.
      try {
        const visit = await request("GET", "/v1/visitor/visit", { token: state.visitorToken, what: "chamada" });
        renderVisit(visit.status, visit.resolution ? visit.resolution.action : undefined);
        if (state.follower) state.follower.stop();
        return;
      } catch { /* the outcome could not be read: say what the server said */ }
    }
    showError("visit-error", error.message);
    if (state.follower) state.follower.refresh();
  } finally {
    button.disabled = false;
  }
}

function newVisit() {
  endCall();
  resetCallView();
  if (state.follower) state.follower.stop();
  state.follower = null;
  state.visitorToken = "";
  setPhoto(null);
  $("camera-open").textContent = "Abrir câmera";
  setText("photo-status", "");
  resetVoice();
  show("view-form");
  $("unit").focus();
}

/** After a reload: follow the call this tab already made, if it is still open. */
async function resume() {
  let saved;
  try { saved = JSON.parse(sessionStorage.getItem(storageKey) || "null"); } catch { saved = null; }
  if (!saved || !saved.token) return false;
  try {
    const visit = await request("GET", "/v1/visitor/visit", { token: saved.token, what: "chamada" });
    if (["resolved", "cancelled", "expired"].includes(visit.status)) throw new Error("closed");
    state.visitorToken = saved.token;
    state.visit = visit;
    enterVisit(visit);
    return true;
  } catch {
    try { sessionStorage.removeItem(storageKey); } catch { /* ignore */ }
    return false;
  }
}

// MARK: voice message

function resetVoice() {
  if (state.voiceURL) URL.revokeObjectURL(state.voiceURL);
  state.voice = null;
  state.voiceURL = "";
  $("voice-audio").removeAttribute("src");
  $("voice-review").hidden = true;
  $("voice-record").hidden = false;
  $("voice-stop").hidden = true;
  $("voice-send").disabled = false;
  setText("voice-status", "");
}

async function startVoice() {
  resetVoice();
  state.recorder = new VoiceRecorder({
    onTick: (seconds) => { $("voice-timer").textContent = String(seconds); },
    onStop: (blob, problem) => {
      $("voice-stop").hidden = true;
      $("voice-record").hidden = false;
      if (!blob) {
        setText("voice-status", problem, "bad");
        return;
      }
      state.voice = blob;
      state.voiceURL = URL.createObjectURL(blob);
      $("voice-audio").src = state.voiceURL;
      $("voice-review").hidden = false;
      $("voice-record").hidden = true;
      setText("voice-status", "Ouça se quiser e toque em Enviar recado.");
    },
  });
  try {
    await state.recorder.start();
    $("voice-timer").textContent = "0";
    $("voice-record").hidden = true;
    $("voice-stop").hidden = false;
    $("voice-stop").focus();
    setText("voice-status", "Gravando… fale perto do telefone.");
  } catch (error) {
    setText("voice-status", error.message, "bad");
  }
}

async function sendVoice() {
  if (!state.voice) return;
  const button = $("voice-send");
  button.disabled = true;
  setText("voice-status", "Enviando recado…");
  try {
    await request("POST", "/v1/visitor/visit/voice_message", { body: state.voice, token: state.visitorToken, what: "o recado", timeoutMs: 60000 });
    setText("voice-status", "Recado enviado. O morador vai ouvir assim que puder.", "ok");
    $("voice-review").hidden = true;
    $("voice-record").hidden = true;
  } catch (error) {
    setText("voice-status", `O recado não foi enviado: ${error.message}`, "bad");
    button.disabled = false;
  }
}

// MARK: wiring

function wire() {
  $("kind-visit").addEventListener("change", updateKind);
  $("kind-delivery").addEventListener("change", updateKind);
  $("carrier").addEventListener("change", updateKind);
  $("location-button").addEventListener("click", askLocation);
  $("camera-open").addEventListener("click", openCamera);
  $("camera-close").addEventListener("click", closeCamera);
  $("camera-shoot").addEventListener("click", takePhoto);
  $("photo-remove").addEventListener("click", removePhoto);
  $("view-form").addEventListener("submit", ring);
  $("visit-cancel").addEventListener("click", cancelVisit);
  $("visit-new").addEventListener("click", newVisit);
  $("voice-record").addEventListener("click", startVoice);
  $("voice-stop").addEventListener("click", () => {
    if (!state.recorder) return;
    // Converting a recording to WAV (decision 0077) takes a moment after the stop.
    setText("voice-status", "Preparando o recado…");
    state.recorder.stop();
  });
  $("voice-send").addEventListener("click", sendVoice);
  $("voice-again").addEventListener("click", startVoice);
  $("fatal-retry").addEventListener("click", loadGate);
  $("call-hangup").addEventListener("click", () => { if (state.call) state.call.hangup(); });
  $("call-unmute").addEventListener("click", () => {
    $("call-remote").muted = false;
    $("call-unmute").hidden = true;
  });
  if (!mediaAvailable()) {
    setText("photo-status", "Este navegador não permite usar a câmera por aqui. Dá para chamar sem foto.");
    $("camera-open").hidden = true;
  }
  window.addEventListener("pagehide", () => {
    if (state.camera) state.camera.close();
    if (state.call) state.call.hangup();
  });
  updateKind();
}

wire();
loadGate();

// Painel de saúde das notificações (GET /v1/admin/push_health).
// The session token lives in memory only: reloading the page asks for the password again.
// Times are the condominium's (GET /v1/me `company.time_zone`, São Paulo by default),
// never the zone of the administrator's browser.

import { request } from "../shared/api.js";

const STATUS = { failing: "Falhando", unverified: "Não verificado", healthy: "Saudável" };
const RISKS = {
  notifications_disabled: "Notificações desativadas",
  full_screen_intent_revoked: "Tela cheia (chamada) revogada",
  battery_optimization: "Otimização de bateria ativa",
  token_stale: "Token não renovado há mais de 30 dias",
  token_unregistered: "Token recusado pelo provedor",
  voip_token_missing: "Sem token VoIP (iPhone não toca)",
};
const PLATFORM = { ios: "iPhone", android: "Android", web: "Navegador" };

const DEFAULT_ZONE = "America/Sao_Paulo";
const COLUMNS = ["Situação", "Morador", "Dispositivo", "Falhas seguidas", "Último erro do provedor", "Último push",
  "Última confirmação", "Idade do token", "Riscos"];

const state = { token: null, refreshToken: null, companies: [] };
const $ = (id) => document.getElementById(id);

/** The chosen condominium's time zone. */
function zone() {
  const company = state.companies.find((c) => c.id === $("company").value);
  return (company && company.time_zone) || DEFAULT_ZONE;
}

function formatDate(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "—";
  const options = { dateStyle: "short", timeStyle: "short" };
  try {
    return date.toLocaleString("pt-BR", { ...options, timeZone: zone() });
  } catch {
    return date.toLocaleString("pt-BR", { ...options, timeZone: DEFAULT_ZONE });
  }
}

function showError(element, message) {
  element.textContent = message;
  element.hidden = !message;
}

/** The admin's wording: the server's own message is shown only for the admin (an operator). */
function api(path, { method = "GET", body, companyID } = {}) {
  return request(method, path, {
    body, token: state.token, companyID,
    describe: (status, error) => (status === 401 ? "Usuário ou senha incorretos." : error.message || `HTTP ${status}`),
  });
}

async function login(event) {
  event.preventDefault();
  showError($("login-error"), "");
  try {
    const body = await api("/v1/auth/login", {
      method: "POST",
      body: { username: $("username").value, password: $("password").value },
    });
    state.token = body.jwt_token;
    state.refreshToken = body.refresh_token;
    $("password").value = "";
    // Only companies where this user may see push health.
    const allowed = [];
    for (const company of body.companies) {
      try {
        await api("/v1/admin/push_health", { companyID: company.id });
        // The condominium's clock (GET /v1/me `company.time_zone`); São Paulo if unsaid.
        const me = await api("/v1/me", { companyID: company.id }).catch(() => ({}));
        allowed.push({ ...company, time_zone: (me.company && me.company.time_zone) || DEFAULT_ZONE });
      } catch (error) {
        if (error.status !== 403) throw error;
      }
    }
    if (allowed.length === 0) {
      endSession();
      showError($("login-error"), "Este usuário não tem permissão para ver a saúde das notificações.");
      return;
    }
    state.companies = allowed;
    $("company").replaceChildren(...allowed.map((c) => new Option(c.name, c.id)));
    $("login").hidden = true;
    $("panel").hidden = false;
    $("logout").hidden = false;
    // Focus goes to the page's heading: a screen reader starts reading the panel there.
    $("title").focus();
    await load();
  } catch (error) {
    showError($("login-error"), error.status === 401 ? "Usuário ou senha incorretos." : `Não foi possível entrar: ${error.message}`);
  }
}

/** Ends the session on the server (best effort) and forgets it here. */
function endSession() {
  if (state.refreshToken) {
    request("POST", "/v1/auth/logout", { body: { refresh_token: state.refreshToken }, token: state.token }).catch(() => {});
  }
  state.token = null;
  state.refreshToken = null;
  state.companies = [];
}

/** "Sair": back to the login card, nothing of the panel left on screen. */
function logout() {
  endSession();
  $("panel").hidden = true;
  $("logout").hidden = true;
  $("devices").tBodies[0].replaceChildren();
  $("summary").replaceChildren();
  $("login").hidden = false;
  $("username").focus();
}

function cell(text) {
  const td = document.createElement("td");
  td.textContent = text;
  return td;
}

function render(report) {
  const { summary, devices } = report;
  $("summary").replaceChildren(
    ...[["failing", summary.failing], ["unverified", summary.unverified], ["healthy", summary.healthy]].map(([key, count]) => {
      const li = document.createElement("li");
      li.dataset.status = key;
      li.innerHTML = `<span class="badge ${key}"></span> `;
      li.querySelector(".badge").textContent = STATUS[key];
      li.append(`${count}`);
      return li;
    }),
  );
  $("generated").textContent = `Atualizado em ${formatDate(report.generated_at)}`;
  $("empty").hidden = devices.length > 0;
  const rows = devices.map((device) => {
    const tr = document.createElement("tr");
    tr.className = device.status;
    tr.dataset.deviceId = device.device_id;
    const status = document.createElement("td");
    const badge = document.createElement("span");
    badge.className = `badge ${device.status}`;
    badge.textContent = STATUS[device.status] || device.status;
    status.append(badge);
    // Makers come as the apps report them ("xiaomi"): shown with a capital.
    const maker = device.manufacturer ? device.manufacturer.charAt(0).toUpperCase() + device.manufacturer.slice(1) : "";
    const what = [PLATFORM[device.platform] || device.platform, device.device_name, maker, device.os_version]
      .filter(Boolean).join(" · ");
    const risks = document.createElement("td");
    if (device.risk_flags.length) {
      const list = document.createElement("ul");
      list.className = "risks";
      for (const flag of device.risk_flags) {
        const li = document.createElement("li");
        li.textContent = RISKS[flag] || flag;
        list.append(li);
      }
      risks.append(list);
    } else {
      risks.textContent = "—";
    }
    tr.append(
      status,
      cell(device.user.name),
      cell(what),
      cell(String(device.consecutive_failures) + (device.unacked_pushes ? ` (${device.unacked_pushes} sem confirmação)` : "")),
      cell(device.last_provider_error || "—"),
      cell(formatDate(device.last_push_at)),
      cell(formatDate(device.last_ack_at)),
      cell(device.token_age_days === 1 ? "1 dia" : `${device.token_age_days} dias`),
      risks,
    );
    // On a phone each row is a card: every value says which column it is.
    [...tr.cells].forEach((td, index) => { td.dataset.label = COLUMNS[index]; });
    return tr;
  });
  $("devices").tBodies[0].replaceChildren(...rows);
}

async function load() {
  showError($("panel-error"), "");
  try {
    render(await api("/v1/admin/push_health", { companyID: $("company").value }));
  } catch (error) {
    showError($("panel-error"), `Não foi possível carregar: ${error.message}`);
  }
}

$("login").addEventListener("submit", login);
$("logout").addEventListener("click", logout);
$("refresh").addEventListener("click", load);
$("company").addEventListener("change", load);

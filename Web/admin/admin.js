// Painel de saúde das notificações (GET /v1/admin/push_health).
// The session token lives in memory only: reloading the page asks for the password again.

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

const state = { token: null, companies: [] };
const $ = (id) => document.getElementById(id);

function formatDate(iso) {
  if (!iso) return "—";
  return new Date(iso).toLocaleString("pt-BR", { dateStyle: "short", timeStyle: "short" });
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
    $("password").value = "";
    // Only companies where this user may see push health.
    const allowed = [];
    for (const company of body.companies) {
      try {
        await api("/v1/admin/push_health", { companyID: company.id });
        allowed.push(company);
      } catch (error) {
        if (error.status !== 403) throw error;
      }
    }
    if (allowed.length === 0) {
      state.token = null;
      showError($("login-error"), "Este usuário não tem permissão para ver a saúde das notificações.");
      return;
    }
    state.companies = allowed;
    $("company").replaceChildren(...allowed.map((c) => new Option(c.name, c.id)));
    $("login").hidden = true;
    $("panel").hidden = false;
    await load();
  } catch (error) {
    showError($("login-error"), error.status === 401 ? "Usuário ou senha incorretos." : `Não foi possível entrar: ${error.message}`);
  }
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
    const what = [PLATFORM[device.platform] || device.platform, device.device_name, device.manufacturer, device.os_version]
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
$("refresh").addEventListener("click", load);
$("company").addEventListener("change", load);

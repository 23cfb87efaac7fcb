// Talks to the Portaria API of this origin and turns every failure into a sentence in
// Portuguese a visitor can act on. Nothing here swallows an error: callers get an
// ApiError and show its `message`.

export class ApiError extends Error {
  constructor(message, { status = 0, code = "", field = "", retryAfter = 0 } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
    this.retryAfter = retryAfter;
  }
}

const FIELD_MESSAGES = {
  visitor_name: "Informe seu nome (até 80 letras).",
  unit_id: "Escolha a unidade.",
  carrier: "Informe a empresa da entrega (até 60 letras).",
  kind: "Escolha Visita ou Entrega.",
  "location.lat": "A localização do aparelho veio inválida; chame sem ela.",
  "location.lon": "A localização do aparelho veio inválida; chame sem ela.",
  "location.accuracy_m": "A localização do aparelho veio imprecisa demais; chame sem ela.",
  voice_message: "O recado precisa ter no máximo 60 segundos.",
};

/** The pt-BR sentence for an HTTP error answer (`what` names the action, e.g. "a foto"). */
export function describe(status, code, field, retryAfter, what) {
  if (status === 429) {
    return retryAfter > 60
      ? `Muitas chamadas; aguarde ${Math.ceil(retryAfter / 60)} minutos.`
      : "Muitas chamadas; aguarde um minuto.";
  }
  if (status === 400 && field && FIELD_MESSAGES[field]) return FIELD_MESSAGES[field];
  if (status === 400) return "Algum dado não foi aceito. Confira e tente de novo.";
  if (status === 401) return "Esta chamada expirou. Faça uma nova chamada.";
  if (status === 404 && code === "NOT_FOUND" && what === "portão") {
    return "Este QR code não é de um portão ativo. Confira o endereço ou fale com a portaria.";
  }
  if (status === 404) return "Não encontramos esta chamada. Faça uma nova chamada.";
  if (status === 409) return "Esta chamada já foi encerrada.";
  if (status === 413) return `${capitalize(what)} ficou grande demais para enviar.`;
  if (status === 415) return `${capitalize(what)} está num formato que não aceitamos.`;
  if (status >= 500) return "A portaria está com problemas agora. Tente de novo em instantes.";
  return `Não deu certo (erro ${status}). Tente de novo.`;
}

function capitalize(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : "O envio";
}

/**
 * One request. `body` is an object (sent as JSON) or a Blob (sent raw with its type).
 * Resolves with the decoded JSON; rejects with an ApiError in Portuguese.
 */
export async function request(method, path, { body, token, what = "", timeoutMs = 20000 } = {}) {
  const headers = { Accept: "application/json" };
  let payload;
  if (body instanceof Blob) {
    payload = body;
    headers["Content-Type"] = body.type || "application/octet-stream";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers["Content-Type"] = "application/json";
  }
  if (token) headers.Authorization = `Bearer ${token}`;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: payload, signal: controller.signal,
      cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
    });
  } catch (error) {
    const timedOut = error && error.name === "AbortError";
    throw new ApiError(timedOut
      ? "A portaria demorou demais para responder. Verifique a internet e tente de novo."
      : "Sem conexão com a portaria. Verifique a internet e tente de novo.");
  } finally {
    clearTimeout(timer);
  }
  const text = await response.text().catch(() => "");
  let json = null;
  if (text) {
    try { json = JSON.parse(text); } catch { json = null; }
  }
  if (!response.ok) {
    const error = (json && json.error) || {};
    const retryAfter = Number(response.headers.get("Retry-After")) || 0;
    const field = typeof error.field === "string" ? error.field : "";
    throw new ApiError(describe(response.status, error.code || "", field, retryAfter, what),
      { status: response.status, code: error.code || "", field, retryAfter });
  }
  return json;
}

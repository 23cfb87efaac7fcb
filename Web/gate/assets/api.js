// The gate's wording of the shared API client: every failure becomes a sentence in
// Portuguese a visitor can act on. Nothing here swallows an error: callers get an
// ApiError and show its `message`.

import * as shared from "../../shared/api.js";

export { ApiError } from "../../shared/api.js";

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

/**
 * The pt-BR sentence for an HTTP error answer (`what` names the action, e.g. "a foto").
 * `serverSentence`: the server's own message when it wrote one for visitors (a unit's or
 * a gate's ring cap, `limit` "unit" or "gate"); it is shown as it comes.
 */
export function describe(status, code, field, retryAfter, what, serverSentence = "") {
  if (status === 429 && serverSentence) return serverSentence;
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

/** The message of a ring cap's 429, which the server words for the visitor (pt-BR). */
function visitorSentence(error) {
  const forVisitor = error.limit === "unit" || error.limit === "gate";
  return forVisitor && typeof error.message === "string" ? error.message.slice(0, 200) : "";
}

function capitalize(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : "O envio";
}

/**
 * One request through the shared client (`Web/shared/api.js`), worded for a visitor.
 * Resolves with the decoded JSON; rejects with an ApiError in Portuguese.
 */
export function request(method, path, { body, token, what = "", timeoutMs = 20000 } = {}) {
  return shared.request(method, path, {
    body, token, timeoutMs,
    describe: (status, error, retryAfter) => describe(status, error.code || "",
      typeof error.field === "string" ? error.field : "", retryAfter, what, visitorSentence(error)),
    transport: {
      offline: "Sem conexão com a portaria. Verifique a internet e tente de novo.",
      timedOut: "A portaria demorou demais para responder. Verifique a internet e tente de novo.",
    },
  });
}

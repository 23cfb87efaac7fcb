// The one way the web pages (gate, app, admin) and the app's service worker talk to the
// Portaria API of this origin. Every failure becomes an ApiError carrying the HTTP status,
// the error code and the server's error object, plus a pt-BR sentence chosen by the
// caller's `describe` (a visitor and a resident are told different things). A retried
// request keeps its Idempotency-Key, so the server replays instead of applying twice.
// Runs in windows and in workers: no DOM here.

export class ApiError extends Error {
  /**
   * @param {string} message pt-BR, ready to show
   * @param {{status?: number, code?: string, field?: string, retryAfter?: number, body?: object}} details
   *   `status` 0 = no HTTP answer (offline, timeout); `body` = the envelope's `error` object
   *   (`code`, `message`, and the code's details such as `resolved_by`, `via`, `status`).
   */
  constructor(message, { status = 0, code = "", field = "", retryAfter = 0, body = {} } = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.field = field;
    this.retryAfter = retryAfter;
    this.body = body;
  }
}

/** Default sentences for callers that do not bring their own table. */
export function describeGeneric(status) {
  if (status === 401) return "Sua sessão expirou. Entre de novo.";
  if (status === 403) return "Você não tem permissão para isso.";
  if (status === 404) return "Não encontrado.";
  if (status === 429) return "Muitas tentativas; aguarde um minuto.";
  if (status >= 500) return "O servidor está com problemas agora. Tente de novo em instantes.";
  return `Não deu certo (erro ${status}). Tente de novo.`;
}

export const OFFLINE = "Sem conexão com o servidor. Verifique a internet e tente de novo.";
export const TIMED_OUT = "O servidor demorou demais para responder. Verifique a internet e tente de novo.";

/**
 * One request. `body` is an object (sent as JSON) or a Blob (sent raw with its type).
 * Resolves with the decoded JSON (or a Blob with `raw`); rejects with an ApiError.
 *
 * @param {object} options
 * @param {string} [options.token] bearer token
 * @param {string} [options.companyID] `X-Company-Id`
 * @param {string} [options.idempotencyKey] sent as `Idempotency-Key`
 * @param {(status: number, error: object, retryAfter: number) => string} [options.describe]
 * @param {{offline?: string, timedOut?: string}} [options.transport] sentences for no answer
 */
export async function request(method, path, {
  body, token, companyID, idempotencyKey, headers = {}, timeoutMs = 20000, raw = false,
  describe = describeGeneric, transport = {},
} = {}) {
  const allHeaders = { Accept: "application/json", ...headers };
  let payload;
  if (typeof Blob !== "undefined" && body instanceof Blob) {
    payload = body;
    allHeaders["Content-Type"] = body.type || "application/octet-stream";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    allHeaders["Content-Type"] = "application/json";
  }
  if (token) allHeaders.Authorization = `Bearer ${token}`;
  if (companyID) allHeaders["X-Company-Id"] = companyID;
  if (idempotencyKey) allHeaders["Idempotency-Key"] = idempotencyKey;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let response;
  try {
    response = await fetch(path, {
      method, headers: allHeaders, body: payload, signal: controller.signal,
      cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
    });
  } catch (error) {
    const timedOut = error && error.name === "AbortError";
    throw new ApiError(timedOut ? (transport.timedOut || TIMED_OUT) : (transport.offline || OFFLINE));
  } finally {
    clearTimeout(timer);
  }
  if (raw && response.ok) return response.blob();
  const text = await response.text().catch(() => "");
  let json = null;
  if (text) {
    try { json = JSON.parse(text); } catch { json = null; }
  }
  if (response.ok) return json || {};
  // Only the API's own envelope speaks for the server; a proxy's page says nothing.
  const error = (json && typeof json.error === "object" && json.error) || {};
  const retryAfter = Number(response.headers.get("Retry-After")) || 0;
  const field = typeof error.field === "string" ? error.field : "";
  throw new ApiError(describe(response.status, error, retryAfter),
    { status: response.status, code: typeof error.code === "string" ? error.code : "", field, retryAfter, body: error });
}

/**
 * Whether repeating the same request (same key) may get a different answer: no answer at
 * all, the server busy, or our own earlier attempt still running (`REQUEST_IN_PROGRESS`).
 * Everything else — including every other 409 — is the server's final word.
 */
export function isTransient(error) {
  if (!(error instanceof ApiError)) return false;
  const { status } = error;
  if (status === 0 || status === 408 || status === 425 || status === 429 || status >= 500) return true;
  return status === 409 && error.code === "REQUEST_IN_PROGRESS";
}

/** Back-off before retry `attempt` (1-based): 1, 2, 4, 8 … s capped at `cap`, never sooner than Retry-After. */
export function backoff(attempt, error, cap = 30000) {
  const base = Math.min(cap, 1000 * 2 ** Math.max(0, attempt - 1));
  const asked = error && error.retryAfter ? error.retryAfter * 1000 : 0;
  return Math.max(base, asked);
}

export function newIdempotencyKey() {
  return crypto.randomUUID();
}

/**
 * Runs `send(key)` until it succeeds or fails for good, with one Idempotency-Key for every
 * attempt. `onRetry(attempt, error, delayMs)` is told before each wait.
 */
export async function withRetries(send, { key = newIdempotencyKey(), attempts = 5, onRetry = () => {} } = {}) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send(key);
    } catch (error) {
      if (!isTransient(error) || attempt >= attempts) throw error;
      const delay = backoff(attempt, error);
      onRetry(attempt, error, delay);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

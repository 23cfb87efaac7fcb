// The resident's session, kept in IndexedDB so the page and the service worker share it:
// an access token (15 minutes), the refresh token, the chosen company and its time zone.
//
// A 401 means the access token ran out, not that the resident left: `authorized` refreshes
// once and sends the same request again (same Idempotency-Key). The server spends a
// refresh token on use and revokes the whole session if a spent one comes back, so page
// and worker refresh under one Web Lock and the loser reuses the winner's new tokens.

import { ApiError, request } from "./api.js";
import { deleteValue, getValue, setValue } from "./store.js";

const KEY = "session";

/** @returns {Promise<null | {token: string, refreshToken: string, companyID: string,
 *   companyName: string, userID: string, name: string, timeZone: string, expired?: boolean}>} */
export async function loadSession() {
  return (await getValue(KEY)) || null;
}

export function saveSession(session) {
  return setValue(KEY, session);
}

export function clearSession() {
  return deleteValue(KEY);
}

/** Runs `body` holding the named lock across windows and workers (or directly where the browser has no Web Locks). */
export function withLock(name, body) {
  const locks = typeof navigator !== "undefined" && navigator.locks;
  return locks ? locks.request(name, body) : body();
}

export const SESSION_ENDED = "SESSION_ENDED";

/**
 * New tokens for the session whose access token `failedToken` was refused. Rejects with
 * an ApiError 401 `SESSION_ENDED` when the server refuses the refresh token (the resident
 * must log in again; the session is kept, marked expired, so queued taps wait for it), or
 * with the transport/5xx error when the server could not be asked.
 */
export async function refreshSession(failedToken) {
  return withLock("portaria.refresh", async () => {
    const session = await loadSession();
    if (!session || session.expired) throw new ApiError("Sua sessão expirou. Entre de novo.", { status: 401, code: SESSION_ENDED });
    if (session.token !== failedToken) return session;  // refreshed meanwhile by the other context
    let answer;
    try {
      answer = await request("POST", "/v1/auth/refresh", { body: { refresh_token: session.refreshToken } });
    } catch (error) {
      if (error.status === 400 || error.status === 401) {
        await saveSession({ ...session, expired: true });
        throw new ApiError("Sua sessão expirou. Entre de novo.", { status: 401, code: SESSION_ENDED });
      }
      throw error;
    }
    const renewed = { ...session, token: answer.jwt_token, refreshToken: answer.refresh_token, expired: false };
    await saveSession(renewed);
    return renewed;
  });
}

/**
 * A request as the logged-in resident, in the session's company. On 401 the session is
 * refreshed and the request sent once more, unchanged.
 */
export async function authorized(method, path, options = {}) {
  let session = await loadSession();
  if (!session || session.expired) throw new ApiError("Sua sessão expirou. Entre de novo.", { status: 401, code: SESSION_ENDED });
  try {
    return await request(method, path, { ...options, token: session.token, companyID: options.companyID || session.companyID });
  } catch (error) {
    if (error.status !== 401) throw error;
    session = await refreshSession(session.token);
    return request(method, path, { ...options, token: session.token, companyID: options.companyID || session.companyID });
  }
}

// HTTP client for DESIGN.md's API. Every answer becomes {ok, status, body, problem}; a transport failure
// is status 0, so callers tell "the server said no" (a problem document) from "we do not know" (retry).

export const DEV_USER_HEADER = "X-Agentturn-Dev-User";

export function uuid() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Worth retrying with the same Idempotency-Key: nobody knows whether the server acted. */
export function isTransient(result) {
  return result.status === 0 || result.status === 429 || result.status >= 500;
}

export function problemText(result) {
  if (result.status === 0) return "The server could not be reached.";
  const p = result.problem;
  if (p) return [p.title, p.detail].filter(Boolean).join(": ");
  return `HTTP ${result.status}`;
}

export class Api {
  /** @param {() => string|null} devUser the local dev server's user switch (ignored by deployed APIs) */
  constructor(devUser, base = "") {
    this.devUser = devUser;
    this.base = base;
  }

  /** This client with the caller fixed now: every retry of one request goes as the person who sent it. */
  asCaller() {
    const user = this.devUser();
    return new Api(() => user, this.base);
  }

  async request(method, path, { body, idempotencyKey, timeoutMs = 30000 } = {}) {
    const headers = { Accept: "application/json, application/problem+json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
    const user = this.devUser();
    if (user) headers[DEV_USER_HEADER] = user;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let response;
    try {
      response = await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
        signal: controller.signal,
        cache: "no-store",
      });
    } catch (error) {
      return { ok: false, status: 0, body: null, problem: null, error };
    } finally {
      clearTimeout(timer);
    }
    let parsed = null;
    const text = await response.text().catch(() => "");
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
    }
    const type = response.headers.get("Content-Type") || "";
    const problem = !response.ok && parsed && (type.includes("problem+json") || parsed.title) ? parsed : null;
    return { ok: response.ok, status: response.status, body: parsed, problem, headers: response.headers };
  }

  /** The caller's conversations, newest first; `cursor` is the previous page's `nextCursor`. */
  conversations(limit = 30, cursor = null) {
    const query = new URLSearchParams({ limit: String(limit) });
    if (cursor) query.set("cursor", cursor);
    return this.request("GET", `/conversations?${query}`);
  }

  messages(conversationId, limit = 200) {
    return this.request("GET", `/conversations/${encodeURIComponent(conversationId)}/messages?limit=${limit}`);
  }

  turn(turnId) {
    return this.request("GET", `/turns/${encodeURIComponent(turnId)}`);
  }

  startTurn(conversationId, input, agentId, idempotencyKey) {
    return this.request("POST", `/conversations/${encodeURIComponent(conversationId)}/turns`, {
      body: { input, agentId },
      idempotencyKey,
    });
  }

  /** kind: submit | decline (forms) | approve | reject | respond (tool calls) */
  action(turnId, actionId, kind, body, idempotencyKey) {
    const path = `/turns/${encodeURIComponent(turnId)}/actions/${encodeURIComponent(actionId)}/${kind}`;
    return this.request("POST", path, { body, idempotencyKey });
  }

  cancel(turnId, idempotencyKey) {
    return this.request("POST", `/turns/${encodeURIComponent(turnId)}/cancel`, { body: {}, idempotencyKey });
  }

  devInfo() {
    return this.request("GET", "/_dev/info", { timeoutMs: 5000 });
  }
}

/**
 * One logical request that may be sent several times: the Idempotency-Key is minted once per attempt and
 * reused for every retry of that same body, so a retry after a lost answer replays the first answer
 * instead of acting twice. A different body (the person changed the form) is a new attempt, a new key.
 */
export class Attempt {
  constructor() {
    this.key = null;
    this.body = null;
  }

  keyFor(body) {
    const canonical = JSON.stringify(body ?? null);
    if (this.key === null || this.body !== canonical) {
      this.key = uuid();
      this.body = canonical;
    }
    return this.key;
  }

  /** The server gave a definite answer: the next send, even of the same body, is a new attempt. */
  settle() {
    this.key = null;
    this.body = null;
  }
}

/** Sends with bounded automatic retries (same key) on transient failures. */
export async function sendWithRetry(attempt, body, send, { retries = 2, baseDelayMs = 300 } = {}) {
  const key = attempt.keyFor(body);
  let result = await send(key);
  for (let i = 0; i < retries && isTransient(result); i += 1) {
    const retryAfter = Number(result.headers?.get?.("Retry-After"));
    const delay = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : baseDelayMs * 2 ** i;
    await new Promise((resolve) => setTimeout(resolve, Math.min(delay, 5000)));
    result = await send(key);
  }
  if (!isTransient(result)) attempt.settle();
  return result;
}

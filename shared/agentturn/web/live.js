// The live timeline: a subscription to the conversation's channel over AppSync Events' WebSocket protocol
// (served by `agentturn dev` locally, by AppSync Events deployed). The page still reads the timeline through
// the API; the channel only says when to read it (ids and versions), what the turn is doing, and the model's
// text as it streams. When the socket fails the console polls, and the socket reconnects with backoff.

const SUBPROTOCOL = "aws-appsync-event-ws";
const NAMESPACE = "agentturn";

/** The conversation's segment of its channel: the first 32 hex digits of the SHA-256 of its id. */
export async function conversationSegment(conversationId) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(conversationId));
  return [...new Uint8Array(digest)]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .slice(0, 32);
}

/** `/agentturn/{owner}/{conversation}`: one channel per user and conversation (the server refuses others). */
export async function channelFor(owner, conversationId) {
  return `/${NAMESPACE}/${owner}/${await conversationSegment(conversationId)}`;
}

function base64url(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function newId() {
  return globalThis.crypto?.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`;
}

/**
 * One WebSocket, at most one subscription. `state` is "off" (nothing to subscribe to), "connecting",
 * "live" (subscribed: notices will come), "down" (the socket failed; reconnecting with backoff) or
 * "refused" (the server refused the subscription: polling only, no retry).
 */
export class LiveChannel {
  /**
   * @param {{realtimeUrl: string, authorization: () => object, onMessage: (m: object) => void,
   *          onState: (state: string) => void, firstRetryMs?: number, maxRetryMs?: number}} options
   */
  constructor({ realtimeUrl, authorization, onMessage, onState, firstRetryMs = 500, maxRetryMs = 15000 }) {
    this.url = realtimeUrl;
    this.authorization = authorization;
    this.onMessage = onMessage;
    this.onState = onState;
    this.firstRetryMs = firstRetryMs;
    this.maxRetryMs = maxRetryMs;
    this.state = "off";
    this.socket = null;
    this.channel = null;
    this.subscriptionId = null;
    this.retries = 0;
    this.retryTimer = null;
    this.watchdog = null;
    this.keepAliveMs = 300000;
  }

  get live() {
    return this.state === "live";
  }

  /** Follow `channel` from now on (null: none); reconnects only if needed. */
  follow(channel) {
    if (channel === this.channel && this.state !== "refused") return;
    this.channel = channel;
    if (!channel) {
      this.close();
      return;
    }
    if (this.socket && this.socket.readyState === WebSocket.OPEN && this.acked) this.subscribe();
    else this.connect();
  }

  close() {
    clearTimeout(this.retryTimer);
    clearTimeout(this.watchdog);
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.close();
    this.setState("off");
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.onState(state);
  }

  connect() {
    clearTimeout(this.retryTimer);
    if (this.socket) {
      const old = this.socket;
      this.socket = null;
      old.close();
    }
    this.acked = false;
    this.subscriptionId = null;
    this.setState("connecting");
    let socket;
    try {
      socket = new WebSocket(this.url, [SUBPROTOCOL, `header-${base64url(JSON.stringify(this.authorization()))}`]);
    } catch {
      this.failed();
      return;
    }
    this.socket = socket;
    socket.onopen = () => socket.send(JSON.stringify({ type: "connection_init" }));
    socket.onmessage = (event) => {
      if (socket === this.socket) this.received(event.data);
    };
    socket.onclose = () => {
      if (socket === this.socket) this.failed();
    };
    socket.onerror = () => {
      if (socket === this.socket) socket.close();
    };
  }

  subscribe() {
    // One subscription at a time: the conversation (or the user) changed, the old channel is let go.
    if (this.subscriptionId) this.socket.send(JSON.stringify({ type: "unsubscribe", id: this.subscriptionId }));
    this.subscriptionId = newId();
    this.socket.send(
      JSON.stringify({
        type: "subscribe",
        id: this.subscriptionId,
        channel: this.channel,
        authorization: this.authorization(),
      }),
    );
  }

  received(raw) {
    let message;
    try {
      message = JSON.parse(raw);
    } catch {
      return;
    }
    switch (message.type) {
      case "connection_ack":
        this.acked = true;
        this.keepAliveMs = message.connectionTimeoutMs || this.keepAliveMs;
        this.alive();
        if (this.channel) this.subscribe();
        break;
      case "ka":
        this.alive();
        break;
      case "subscribe_success":
        if (message.id === this.subscriptionId) {
          this.retries = 0;
          this.setState("live");
        }
        break;
      case "subscribe_error":
        if (message.id === this.subscriptionId) {
          // Not ours to retry: the server said no (another user's channel, or no live timeline for us).
          this.socket.close();
          this.socket = null;
          this.setState("refused");
        }
        break;
      case "data":
        if (message.id !== this.subscriptionId) break;
        try {
          this.onMessage(JSON.parse(message.event));
        } catch {
          // a message we cannot read is skipped; the next notice brings the timeline up to date anyway
        }
        break;
      default:
        break;
    }
  }

  /** The server's keep-alives: without one for `connectionTimeoutMs`, the connection is dead. */
  alive() {
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => this.socket && this.socket.close(), this.keepAliveMs);
  }

  failed() {
    clearTimeout(this.watchdog);
    this.socket = null;
    if (!this.channel || this.state === "refused") return;
    this.setState("down");
    const delay = Math.min(this.firstRetryMs * 2 ** this.retries, this.maxRetryMs) * (0.5 + Math.random() / 2);
    this.retries += 1;
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }
}

/** `fn` run at most once at a time: a call while it runs makes it run once more afterwards (notices come
 * in bursts; each must be followed by a read that starts after it, but one such read is enough). */
export function serial(fn) {
  let running = null;
  let again = false;
  const run = async () => {
    do {
      again = false;
      await fn();
    } while (again);
    running = null;
  };
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = run();
    return running;
  };
}

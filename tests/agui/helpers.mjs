// What the AG-UI client tests share: the official HttpAgent against `agentturn dev`, every event recorded.
import { HttpAgent } from "@ag-ui/client";

export const BASE = process.env.AGUI_URL ?? "http://127.0.0.1:8787";

/** An HttpAgent for `agentId` on `threadId`, as the dev user `user` (the dev gateway's stand-in for a JWT). */
export function agentFor(agentId, { threadId, user = "alice", initialMessages } = {}) {
  const path = agentId === null ? "/ag-ui" : `/ag-ui/${encodeURIComponent(agentId)}`;
  return new HttpAgent({
    url: BASE + path,
    threadId,
    initialMessages,
    headers: { "X-Agentturn-Dev-User": user },
  });
}

/**
 * One runAgent: the events as the client saw them (after its verifier), and how it ended. A verifier or
 * transport failure rejects runAgent; that is reported as `failure`, so a test asserts it is absent.
 */
export async function run(agent, parameters = {}) {
  const events = [];
  let failure = null;
  let result;
  const started = performance.now();
  let firstText = null;
  try {
    result = await agent.runAgent(parameters, {
      onEvent({ event }) {
        if (event.type === "TEXT_MESSAGE_CONTENT" && firstText === null) firstText = performance.now() - started;
        events.push(event);
      },
    });
  } catch (error) {
    failure = error;
  }
  const finished = events.find((e) => e.type === "RUN_FINISHED");
  const error = events.find((e) => e.type === "RUN_ERROR");
  const interrupts = finished?.outcome?.type === "interrupt" ? finished.outcome.interrupts : [];
  return { events, failure, result, finished, error, interrupts, types: events.map((e) => e.type), firstText };
}

/** A raw POST (for inputs the official client refuses to send, and for problem documents). */
export async function post(path, body, { user = "alice", headers = {} } = {}) {
  const response = await fetch(BASE + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-Agentturn-Dev-User": user, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  const events = type.startsWith("text/event-stream")
    ? text.split("\n\n").filter((f) => f.startsWith("data: ")).map((f) => JSON.parse(f.slice(6)))
    : [];
  return { status: response.status, type, text, events, json: type.includes("json") ? JSON.parse(text) : null };
}

export function userMessage(content, id = `u-${Math.random().toString(36).slice(2)}`) {
  return { id, role: "user", content };
}

export function uniqueThread(prefix) {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** POST a run and stop reading after `count` events (the page closed there); the events read so far. */
export async function dropAfter(path, body, count, { user = "alice" } = {}) {
  const controller = new AbortController();
  const response = await fetch(BASE + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-Agentturn-Dev-User": user },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const events = [];
  while (events.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    let end;
    while ((end = text.indexOf("\n\n")) >= 0 && events.length < count) {
      const frame = text.slice(0, end);
      text = text.slice(end + 2);
      if (frame.startsWith("data: ")) events.push(JSON.parse(frame.slice(6)));
    }
  }
  controller.abort();
  return events;
}

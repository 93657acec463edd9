// Drives page.mjs against `agentturn dev` (run by tests/e2e/test_amplify_events.py): a form cycle's live
// messages, a person's publish refused and an IAM publish accepted (both settle), another user's channel
// refused. Prints one JSON line. Node 20 has no global WebSocket (Node 22 has): `ws` stands in, as in any
// Node program using Amplify; the self-signed certificate is trusted through NODE_EXTRA_CA_CERTS.
import { createHash, randomUUID } from "node:crypto";
import WebSocket from "ws";
import { configure } from "./configure.mjs";
import { follow, publish } from "./page.mjs";

globalThis.WebSocket ??= WebSocket;
const { ENDPOINT, API, DEV_USER, OTHER_USER } = process.env;
const channelFor = (owner, conversationId) =>
  `/agentturn/${owner}/${createHash("sha256").update(conversationId).digest("hex").slice(0, 32)}`;
const within = (ms, promise, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))]);
const settle = (promise) => promise.then(() => ({ ok: true }), (error) => ({ ok: false, error: String(error.message || error) }));

async function call(method, path, body, headers = {}) {
  const answer = await fetch(`${API}${path}`, {
    method,
    headers: { "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: answer.status, body: await answer.json() };
}

configure({ endpoint: ENDPOINT, subject: DEV_USER, credentials: { accessKeyId: "testing", secretAccessKey: "testing" } });
const result = {};
const conversation = `amplify-${randomUUID().slice(0, 8)}`;
const received = [];
let finished;
const done = new Promise((resolve) => (finished = resolve));
const onEvent = (event) => {
  received.push(event);
  if (event.type === "timeline" && event.status === "COMPLETED") finished();
};
const { connection } = await within(20000, follow(channelFor(DEV_USER, conversation), onEvent, (e) => (result.followError = String(e))), "subscribe");

// A form cycle: the turn waits for the ticket form, the person submits it, the worker finishes the turn.
const started = await call("POST", `/conversations/${conversation}/turns`, {
  // An agent whose model and tool each outlast the live feed's status window: its statuses are pushed too.
  agentId: process.env.AGENT_ID || "support-agent",
  input: "create a high priority login incident ticket",
});
result.started = started.body.status;
const submitted = await call(
  "POST",
  `/turns/${started.body.turnId}/actions/${started.body.suspension.actionId}/submit`,
  { data: { affectedSystem: "SSO", impactScope: "ALL_USERS" } },
  { "Idempotency-Key": randomUUID() },
);
result.submitted = submitted.status;
await within(60000, done, "the completed turn's live message");
result.received = received;

// A person's publish is refused as deployed (IAM only), and the promise settles.
result.personPublish = await within(10000, settle(publish(connection, { hello: "from a page" })), "person publish");
// An IAM-signed publish is accepted, settles, and reaches the subscriber.
const echoed = new Promise((resolve) => {
  const check = setInterval(() => {
    if (received.some((e) => e.hello === "signed")) { clearInterval(check); resolve(); }
  }, 20);
});
result.iamPublish = await within(10000, settle(publish(connection, { hello: "signed" }, { authMode: "iam" })), "iam publish");
await within(10000, echoed, "the signed event");
result.echoed = true;

// Another user's channel: refused as the deployed onSubscribe handler refuses it.
result.otherChannel = await within(
  10000,
  settle(follow(channelFor(OTHER_USER, conversation), () => {}, () => {})),
  "other user's channel",
);
console.log(JSON.stringify(result));
process.exit(0);

// The official AG-UI client (@ag-ui/client 1.x HttpAgent, its event verifier on) against `agentturn dev`.
// Run by tests/agui/test_agui_client.py, which starts the server (AGUI_URL) with tests/agui/agents.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BASE, agentFor, post, run, uniqueThread, userMessage } from "./helpers.mjs";

const CODE = (name) => `agentturn:${name}`;

function assertClean(outcome) {
  assert.equal(outcome.failure, null, `the client failed: ${outcome.failure}`);
  assert.equal(outcome.types[0], "RUN_STARTED");
}

/** An agent with one user message added, run once. */
async function ask(agentId, text, threadId = uniqueThread(agentId)) {
  const agent = agentFor(agentId, { threadId });
  agent.addMessage(userMessage(text));
  return { agent, threadId, outcome: await run(agent) };
}

test("GIVEN a model that asks for a form WHEN the user writes THEN the stream ends in one input_required interrupt, state and messages first", async () => {
  const { agent, outcome } = await ask("agui-form", "book a trip");
  assertClean(outcome);
  const types = outcome.types;
  assert.deepEqual(types.slice(-3), ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
  assert.ok(types.includes("TEXT_MESSAGE_CONTENT"), "the model's text streams");
  const start = outcome.events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(start.toolCallName, "request_user_input");
  const [interrupt] = outcome.interrupts;
  assert.equal(outcome.interrupts.length, 1);
  assert.equal(interrupt.reason, "input_required");
  assert.equal(interrupt.message, "Trip details");
  assert.equal(interrupt.toolCallId, start.toolCallId);
  assert.deepEqual(interrupt.responseSchema.required, ["city", "nights"]);
  assert.equal(interrupt.metadata.agentturn.formKey, "trip_details");
  assert.equal(interrupt.metadata.agentturn.actionId, start.toolCallId);
  assert.ok(interrupt.metadata.agentturn.turnId);
  // The client took the interrupt as pending; its messages are the server's timeline.
  assert.deepEqual(agent.pendingInterrupts.map((i) => i.id), [interrupt.id]);
  assert.deepEqual(agent.messages.map((m) => m.role), ["user", "assistant"]);
});

test("GIVEN a form interrupt WHEN it is resumed with valid data THEN the tool result comes against the original call and the run succeeds", async () => {
  const { agent, outcome } = await ask("agui-form", "book a trip");
  const [interrupt] = outcome.interrupts;
  const resumed = await run(agent, {
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { city: "Lyon", nights: 2 } }],
  });
  assertClean(resumed);
  const result = resumed.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, interrupt.toolCallId);
  assert.deepEqual(JSON.parse(result.content), { status: "submitted", formKey: "trip_details", data: { city: "Lyon", nights: 2 } });
  assert.ok(!resumed.types.includes("TOOL_CALL_START"), "the call is not announced again");
  assert.equal(resumed.finished.outcome.type, "success");
  assert.match(resumed.finished.result, /^Done: /);
  assert.deepEqual(agent.pendingInterrupts, []);
});

test("GIVEN a tool that raises a form WHEN the address is submitted THEN the tool runs again with it", async () => {
  const { agent, outcome } = await ask("agui-tool-form", "ship the book");
  assertClean(outcome);
  const [interrupt] = outcome.interrupts;
  assert.equal(interrupt.reason, "input_required");
  assert.equal(interrupt.message, "Shipping address");
  assert.equal(interrupt.metadata.agentturn.inputTarget, "TOOL");
  assert.equal(interrupt.metadata.agentturn.toolName, "ship_parcel");
  const bad = await run(agentFor("agui-tool-form", { threadId: agent.threadId }), {
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { street: "Main St 1", zip: "12" } }],
  });
  assert.equal(bad.error.code, CODE("resume_invalid_payload"));
  const resumed = await run(agent, {
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { street: "Main St 1", zip: "12345" } }],
  });
  assertClean(resumed);
  const result = resumed.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, "call-ship");
  assert.deepEqual(JSON.parse(result.content), { shipped: "book", to: { street: "Main St 1", zip: "12345" } });
  assert.equal(resumed.finished.outcome.type, "success");
});

test("GIVEN three approvals in one run WHEN approved, approved with editedArgs and cancelled THEN the tool runs twice, the second time with exactly the edit", async () => {
  const { agent, outcome } = await ask("agui-approvals", "refund the three orders");
  assertClean(outcome);
  assert.equal(outcome.interrupts.length, 3);
  for (const interrupt of outcome.interrupts) {
    assert.equal(interrupt.reason, "tool_call");
    assert.ok(interrupt.toolCallId);
    assert.deepEqual(interrupt.responseSchema.required, ["approved"]);
    assert.deepEqual(interrupt.responseSchema.properties.editedArgs.required, ["orderId", "amount"]);
    assert.ok("respond" in interrupt.responseSchema.properties);
  }
  const starts = outcome.events.filter((e) => e.type === "TOOL_CALL_START").map((e) => e.toolCallId);
  assert.deepEqual(outcome.interrupts.map((i) => i.toolCallId), starts);
  const [first, second, third] = outcome.interrupts;
  const edit = { orderId: "O-2", amount: 5 };
  const resumed = await run(agent, {
    resume: [
      { interruptId: first.id, status: "resolved", payload: { approved: true } },
      { interruptId: second.id, status: "resolved", payload: { approved: true, editedArgs: edit } },
      { interruptId: third.id, status: "cancelled" },
    ],
  });
  assertClean(resumed);
  const results = Object.fromEntries(
    resumed.events.filter((e) => e.type === "TOOL_CALL_RESULT").map((e) => [e.toolCallId, e.content]),
  );
  assert.deepEqual(JSON.parse(results[first.toolCallId]), { refunded: "O-1", amount: 10 });
  const edited = JSON.parse(results[second.toolCallId]);
  assert.equal(edited.status, "edited");
  assert.deepEqual(edited.arguments, edit);
  assert.deepEqual(edited.result, { refunded: "O-2", amount: 5 });
  assert.ok(results[third.toolCallId], "the cancelled call gets a result too (not executed)");
  assert.doesNotMatch(results[third.toolCallId], /refunded/);
  assert.equal(resumed.finished.outcome.type, "success");
});

test("GIVEN an approval WHEN the person answers in the tool's place THEN the tool does not run and the answer is its result", async () => {
  const { agent, outcome } = await ask("agui-approvals", "refund one order");
  const [interrupt] = outcome.interrupts;
  assert.equal(outcome.interrupts.length, 1);
  const resumed = await run(agent, {
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: false, respond: { refunded: "by hand" } } }],
  });
  assertClean(resumed);
  const result = resumed.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, interrupt.toolCallId);
  assert.match(result.content, /by hand/);
  assert.doesNotMatch(result.content, /"amount"/);
});

test("GIVEN pending interrupts WHEN a run carries a new message and no resume THEN RUN_ERROR interrupts_pending, and the cards stay", async () => {
  const { threadId, outcome } = await ask("agui-form", "book a trip");
  const fresh = agentFor("agui-form", { threadId });
  fresh.addMessage(userMessage("never mind"));
  const refused = await run(fresh);
  assert.equal(refused.error.code, CODE("interrupts_pending"));
  const reload = await run(agentFor("agui-form", { threadId }));
  assertClean(reload);
  assert.deepEqual(reload.interrupts.map((i) => i.id), outcome.interrupts.map((i) => i.id));
  assert.ok(!reload.events.some((e) => e.type === "MESSAGES_SNAPSHOT" && e.messages.some((m) => m.content === "never mind")));
});

test("GIVEN an agent that steers away WHEN a new message comes while a form waits THEN the form is declined with a reason and the message starts the next turn", async () => {
  const { threadId, outcome } = await ask("agui-steer", "book a trip");
  const [interrupt] = outcome.interrupts;
  const next = agentFor("agui-steer", { threadId });
  next.addMessage(userMessage("actually, book another trip"));
  const steered = await run(next);
  assertClean(steered);
  assert.equal(steered.interrupts.length, 1);
  assert.notEqual(steered.interrupts[0].id, interrupt.id);
  const snapshot = steered.events.filter((e) => e.type === "MESSAGES_SNAPSHOT").at(-1);
  const declined = snapshot.messages.find((m) => m.role === "tool" && m.toolCallId === interrupt.toolCallId);
  assert.match(declined.content, /superseded/);
  assert.ok(snapshot.messages.some((m) => m.role === "user" && m.content === "actually, book another trip"));
});

test("GIVEN open interrupts WHEN resume is partial, names an unknown id, or breaks the schema THEN RUN_ERROR with its code and nothing is stored", async () => {
  const { threadId, outcome } = await ask("agui-approvals", "refund the three orders");
  const ids = outcome.interrupts.map((i) => i.id);
  // A fresh HttpAgent knows no pending interrupts, so it sends what the server must refuse.
  const partial = await run(agentFor("agui-approvals", { threadId }), {
    resume: [{ interruptId: ids[0], status: "resolved", payload: { approved: true } }],
  });
  assert.equal(partial.error.code, CODE("resume_incomplete"));
  const unknown = await run(agentFor("agui-approvals", { threadId }), {
    resume: [...ids.map((id) => ({ interruptId: id, status: "cancelled" })), { interruptId: "nope", status: "cancelled" }],
  });
  assert.equal(unknown.error.code, CODE("resume_unknown_interrupt"));
  const invalid = await run(agentFor("agui-approvals", { threadId }), {
    resume: ids.map((id, n) => ({
      interruptId: id,
      status: "resolved",
      payload: n === 2 ? { approved: true, editedArgs: { orderId: "O-3", amount: -1 } } : { approved: true },
    })),
  });
  assert.equal(invalid.error.code, CODE("resume_invalid_payload"));
  const notBoolean = await run(agentFor("agui-approvals", { threadId }), {
    resume: ids.map((id) => ({ interruptId: id, status: "resolved", payload: { approved: "yes" } })),
  });
  assert.equal(notBoolean.error.code, CODE("resume_invalid_payload"));
  // Nothing was applied: the same three interrupts are still open, and no tool ran.
  const reload = await run(agentFor("agui-approvals", { threadId }));
  assertClean(reload);
  assert.deepEqual(reload.interrupts.map((i) => i.id), ids);
  assert.ok(!reload.events.some((e) => e.type === "MESSAGES_SNAPSHOT" && e.messages.some((m) => m.role === "tool")));
});

test("GIVEN a form that expires in a second WHEN the resume comes after expiresAt THEN RUN_ERROR resume_expired and the card stays unanswered", async () => {
  const { threadId, outcome } = await ask("agui-expiring", "book a trip");
  const [interrupt] = outcome.interrupts;
  assert.ok(interrupt.expiresAt, "the wait's deadline is the interrupt's expiresAt");
  const due = new Date(interrupt.expiresAt).getTime();
  while (Date.now() <= due) await new Promise((resolve) => setTimeout(resolve, due - Date.now() + 5));
  const late = await post("/ag-ui/agui-expiring", {
    threadId,
    runId: "late-run",
    messages: [],
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { city: "Lyon", nights: 2 } }],
  });
  assert.equal(late.status, 200);
  assert.deepEqual(late.events.map((e) => e.type), ["RUN_STARTED", "RUN_ERROR"]);
  assert.equal(late.events[1].code, CODE("resume_expired"));
});

test("GIVEN a resume applied once WHEN the same resume is sent again (a retry, another runId) THEN it is applied once and answers the outcome", async () => {
  const { agent, threadId, outcome } = await ask("agui-approvals", "refund one order");
  const [interrupt] = outcome.interrupts;
  const resume = [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }];
  const first = await run(agent, { resume });
  assertClean(first);
  const again = await run(agentFor("agui-approvals", { threadId }), { resume });
  assertClean(again);
  assert.equal(again.finished.outcome.type, "success");
  assert.equal(again.finished.result, first.finished.result, "the outcome of the first application");
  assert.ok(!again.types.includes("TOOL_CALL_RESULT"), "no second application");
  const snapshot = again.events.find((e) => e.type === "MESSAGES_SNAPSHOT");
  assert.equal(snapshot.messages.filter((m) => m.role === "tool").length, 1, "the refund ran once");
  const conflicting = await run(agentFor("agui-approvals", { threadId }), {
    resume: [{ interruptId: interrupt.id, status: "cancelled" }],
  });
  assert.equal(conflicting.error.code, CODE("resume_conflict"));
});

test("GIVEN a finished thread WHEN a run carries no new message and no resume THEN the messages and the finished answer come back", async () => {
  const { agent, threadId, outcome } = await ask("agui-approvals", "refund one order");
  await run(agent, { resume: [{ interruptId: outcome.interrupts[0].id, status: "resolved", payload: { approved: true } }] });
  const reload = await run(agentFor("agui-approvals", { threadId }));
  assertClean(reload);
  assert.equal(reload.finished.outcome.type, "success");
  assert.match(reload.finished.result, /^Done: /);
  const roles = reload.events.find((e) => e.type === "MESSAGES_SNAPSHOT").messages.map((m) => m.role);
  assert.deepEqual(roles, ["user", "assistant", "tool", "assistant"]);
});

test("GIVEN bad requests THEN problem+json 4xx before any stream, and another user's thread shows nothing of it", async () => {
  const malformed = await post("/ag-ui/agui-form", { threadId: "t", messages: "no" });
  assert.equal(malformed.status, 422);
  assert.equal(malformed.type, "application/problem+json");
  assert.deepEqual(malformed.json.errors.map((e) => e.path).sort(), ["/messages", "/runId"]);
  const notJson = await post("/ag-ui/agui-form", "{nope");
  assert.equal(notJson.status, 400);
  const unknownAgent = await post("/ag-ui/nobody", { threadId: "t", runId: "r", messages: [] });
  assert.equal(unknownAgent.status, 404);
  assert.equal(unknownAgent.json.type, "https://agentturn.dev/problems/agent-not-found");
  const huge = await post("/ag-ui/agui-form", { threadId: "t", runId: "r", messages: [userMessage("x".repeat(200_000))] });
  assert.equal(huge.status, 413);
  assert.equal(huge.type, "application/problem+json");
  // Alice's thread, read as bob: bob's own (empty) namespace, none of alice's messages or interrupts.
  const { threadId, outcome } = await ask("agui-form", "book a secret trip");
  assert.equal(outcome.interrupts.length, 1);
  const asBob = await post("/ag-ui/agui-form", { threadId, runId: "peek", messages: [] }, { user: "bob" });
  assert.equal(asBob.status, 200);
  const snapshot = asBob.events.find((e) => e.type === "MESSAGES_SNAPSHOT");
  assert.deepEqual(snapshot.messages, []);
  assert.equal(asBob.events.at(-1).outcome.type, "success");
  const bobResumes = await post(
    "/ag-ui/agui-form",
    { threadId, runId: "steal", messages: [], resume: [{ interruptId: outcome.interrupts[0].id, status: "cancelled" }] },
    { user: "bob" },
  );
  assert.equal(bobResumes.events.at(-1).code, CODE("resume_unknown_interrupt"));
  // A resume naming another thread's interrupt (alice's own): refused, and that interrupt stays open.
  const elsewhere = await post("/ag-ui/agui-form", {
    threadId: uniqueThread("other"),
    runId: "cross",
    messages: [],
    resume: [{ interruptId: outcome.interrupts[0].id, status: "cancelled" }],
  });
  assert.equal(elsewhere.events.at(-1).code, CODE("resume_unknown_interrupt"));
  const still = await run(agentFor("agui-form", { threadId }));
  assert.deepEqual(still.interrupts.map((i) => i.id), outcome.interrupts.map((i) => i.id));
});

test("GIVEN the default agent route and capabilities THEN they answer as AG-UI defines", async () => {
  const response = await fetch(`${BASE}/ag-ui/agui-approvals/capabilities`, { headers: { "X-Agentturn-Dev-User": "alice" } });
  assert.equal(response.status, 200);
  const capabilities = await response.json();
  assert.equal(capabilities.transport.streaming, true);
  assert.deepEqual(
    [capabilities.humanInTheLoop.interrupts, capabilities.humanInTheLoop.approvals, capabilities.humanInTheLoop.approveWithEdits],
    [true, true, true],
  );
  assert.deepEqual(capabilities.tools.items.map((t) => t.name), ["issue_refund"]);
  const defaults = await run(agentFor(null, { threadId: uniqueThread("default") }));
  assertClean(defaults);
  assert.equal(defaults.finished.outcome.type, "success");
});

test("GIVEN a client that goes away mid-stream WHEN it comes back without input THEN the turn went on without it and its answer is there", async () => {
  const threadId = uniqueThread("dropped");
  const controller = new AbortController();
  const response = await fetch(`${BASE}/ag-ui/agui-slow`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-Agentturn-Dev-User": "alice" },
    body: JSON.stringify({ threadId, runId: "dropped-run", messages: [userMessage("hello")] }),
    signal: controller.signal,
  });
  const reader = response.body.getReader();
  let seen = "";
  while (!seen.includes('"TEXT_MESSAGE_CONTENT"')) {
    const { value, done } = await reader.read();
    assert.ok(!done, "the stream ended before any text");
    seen += new TextDecoder().decode(value);
  }
  controller.abort(); // the page is closed while the model writes
  const back = await run(agentFor("agui-slow", { threadId }));
  assertClean(back);
  assert.equal(back.finished.outcome.type, "success");
  assert.match(back.finished.result, /^A slow model writes this answer/);
  const roles = back.events.find((e) => e.type === "MESSAGES_SNAPSHOT").messages.map((m) => m.role);
  assert.deepEqual(roles, ["user", "assistant"]);
});

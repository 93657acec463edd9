// A client that goes away at every boundary of a form cycle: the turn is neither lost, nor doubled, nor stuck.
// For each k, the interrupting run and then the resuming run are read for only k events; a new client that
// knows only the thread then asks for it (no message, no resume) and must get the right outcome.
import assert from "node:assert/strict";
import { test } from "node:test";

import { agentFor, dropAfter, run, uniqueThread, userMessage } from "./helpers.mjs";

const ASK_EVENTS = 14; // RUN_STARTED … RUN_FINISHED of the interrupting run of agui-form
const ANSWER_EVENTS = 19; // … and of the resuming run

test("GIVEN a client that drops at every event of a form cycle THEN 0 lost, 0 doubled, 0 stuck", async () => {
  const figures = { lost: 0, doubled: 0, stuck: 0, cycles: 0 };
  for (let k = 1; k <= Math.max(ASK_EVENTS, ANSWER_EVENTS); k++) {
    const threadId = uniqueThread(`drop-${k}`);
    await dropAfter("/ag-ui/agui-form", { threadId, runId: `ask-${k}`, messages: [userMessage("book a trip")] }, k);
    // The dropped request may not have made its turn yet when the new client asks (it was dropped right after
    // RUN_STARTED): it asks again (bounded) while the thread shows no interrupt.
    let waiting = await run(agentFor("agui-form", { threadId }));
    for (let attempt = 0; attempt < 100 && waiting.failure === null && waiting.interrupts.length === 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      waiting = await run(agentFor("agui-form", { threadId }));
    }
    assert.equal(waiting.failure, null);
    if (waiting.interrupts.length !== 1) {
      figures.lost += 1;
      continue;
    }
    const [interrupt] = waiting.interrupts;
    await dropAfter(
      "/ag-ui/agui-form",
      {
        threadId,
        runId: `answer-${k}`,
        messages: [],
        resume: [{ interruptId: interrupt.id, status: "resolved", payload: { city: "Oslo", nights: 1 } }],
      },
      k,
    );
    // The dropped request may still be applying the answer when the new client asks: it asks again (bounded)
    // while it is shown the very interrupt it answered.
    let done = await run(agentFor("agui-form", { threadId }));
    for (let attempt = 0; attempt < 50 && done.interrupts.some((i) => i.id === interrupt.id); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      done = await run(agentFor("agui-form", { threadId }));
    }
    assert.equal(done.failure, null);
    if (done.finished?.outcome?.type !== "success") {
      figures.stuck += 1;
      console.log(`stuck at ${k}: ${JSON.stringify(done.events.at(-1))}`);
      continue;
    }
    const messages = done.events.find((e) => e.type === "MESSAGES_SNAPSHOT").messages;
    const users = messages.filter((m) => m.role === "user").length;
    const results = messages.filter((m) => m.role === "tool").length;
    if (users !== 1 || results !== 1) figures.doubled += 1;
    figures.cycles += 1;
  }
  console.log(`drops: ${JSON.stringify(figures)}`);
  assert.deepEqual({ ...figures, cycles: undefined }, { lost: 0, doubled: 0, stuck: 0, cycles: undefined });
  assert.equal(figures.cycles, Math.max(ASK_EVENTS, ANSWER_EVENTS));
});

// One half of the restart test: `interrupt` starts a form turn and prints the thread and its interrupt;
// `resume THREAD_JSON` (after the server was restarted) resumes it with a fresh HttpAgent, as a reloaded page
// would, and prints what it saw. tests/agui/test_agui_client.py restarts `agentturn dev` between the two.
import { agentFor, run, uniqueThread, userMessage } from "./helpers.mjs";

const [phase, state] = process.argv.slice(2);

if (phase === "interrupt") {
  const threadId = uniqueThread("restart");
  const agent = agentFor("agui-form", { threadId });
  agent.addMessage(userMessage("book a trip"));
  const outcome = await run(agent);
  console.log(JSON.stringify({ threadId, failure: outcome.failure && String(outcome.failure), types: outcome.types, interrupts: outcome.interrupts }));
} else if (phase === "resume") {
  const { threadId } = JSON.parse(state);
  // A reloaded page: a new client that knows only the thread id asks for the current state first ...
  const agent = agentFor("agui-form", { threadId });
  const reload = await run(agent);
  const shown = agent.messages.map((m) => m.role);
  // ... shows the same card, and answers it.
  const [interrupt] = reload.interrupts;
  const resumed = await run(agent, {
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { city: "Kyoto", nights: 3 } }],
  });
  console.log(
    JSON.stringify({
      reload: { failure: reload.failure && String(reload.failure), interrupts: reload.interrupts, messages: shown },
      resumed: { failure: resumed.failure && String(resumed.failure), types: resumed.types, finished: resumed.finished },
    }),
  );
} else {
  throw new Error(`unknown phase ${phase}`);
}

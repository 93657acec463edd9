// Time from HttpAgent.runAgent to the first TEXT_MESSAGE_CONTENT, and events per form cycle, against a running
// `agentturn dev` serving tests/agui/agents.py (AGENTTURN_AGENTS=tests.agui.agents:agui_agents):
//
//   AGUI_URL=http://127.0.0.1:8787 node bench/agui_first_token.mjs [runs]
//
// The scripted "agui-slow" model sends its first token after 1 s; the overhead is what exceeds that.
import { agentFor, run, uniqueThread, userMessage } from "../tests/agui/helpers.mjs";

const runs = Number(process.argv[2] ?? 10);
const firsts = [];
for (let n = 0; n < runs; n++) {
  const agent = agentFor("agui-slow", { threadId: uniqueThread("bench") });
  agent.addMessage(userMessage("hello"));
  const outcome = await run(agent);
  if (outcome.failure) throw outcome.failure;
  firsts.push(outcome.firstText);
}
firsts.sort((a, b) => a - b);
const median = firsts[Math.floor(firsts.length / 2)];

// One form cycle: the run that asks (interrupt) and the run that answers (resume → success).
const agent = agentFor("agui-form", { threadId: uniqueThread("bench-form") });
agent.addMessage(userMessage("book a trip"));
const asked = await run(agent);
const answered = await run(agent, {
  resume: [{ interruptId: asked.interrupts[0].id, status: "resolved", payload: { city: "Lyon", nights: 2 } }],
});
console.log(
  JSON.stringify({
    runs,
    firstTextMs: { min: firsts[0], median, max: firsts.at(-1) },
    overheadMs: { median: median - 1000 },
    formCycleEvents: { interruptRun: asked.events.length, resumeRun: answered.events.length, total: asked.events.length + answered.events.length },
    interruptRunTypes: asked.types,
    resumeRunTypes: answered.types,
  }, null, 1),
);

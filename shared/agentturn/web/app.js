// The console: one conversation at a time. Reads the timeline, starts turns, and polls while a turn is
// queued or running (bounded, with backoff); the cards do the answering.

import { Api, Attempt, problemText, sendWithRetry } from "./api.js";
import { LiveChannel, channelFor, serial } from "./live.js";
import { LiveView } from "./live_view.js";
import { Poller } from "./poller.js";
import { Timeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const RUNNABLE = new Set(["READY", "RUNNING"]);
const STATUS_TEXT = {
  READY: "queued: waiting for the worker…",
  RUNNING: "running…",
  WAITING_FOR_USER: "waiting for you: answer the form above",
  WAITING_FOR_APPROVAL: "waiting for a decision: approve or reject above",
  COMPLETED: "done",
  FAILED: "failed",
  CANCELLED: "cancelled",
  MAX_ITERATIONS_REACHED: "stopped: iteration limit reached",
  MAX_STEPS_REACHED: "stopped: step limit reached",
  BUDGET_EXCEEDED: "stopped: budget exceeded",
};
const CONVERSATION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const params = new URLSearchParams(location.search);

const state = {
  conversationId: null,
  user: localStorage.getItem("agentturn.devUser") || "",
  activeTurnId: null,
  lastTurnId: null,
  finished: new Map(), // turnId -> terminal TurnView (never changes again)
  settled: null, // "turnId@version" of the last non-runnable turn a poll has confirmed
};

const api = new Api(() => state.user || null);
function showDemoModel() {
  $("demo-badge").hidden = false;
  $("demo-banner").hidden = false;
}

const timeline = new Timeline($("timeline"), {
  api,
  // ?clientValidation=off skips the browser-side checks, to see what the server refuses (and for tests).
  noValidate: params.get("clientValidation") === "off",
  onAction: () => wake(),
  // Against a deployed API the console learns it from the replies ("[demo model] ..."), locally from /_dev/info.
  onDemoModel: showDemoModel,
});
const poller = new Poller(refresh, {
  onGiveUp: () => notice("Still waiting for the turn; the page stopped polling. Reload to check again.", false),
});

// The live timeline (live.js): while subscribed, the page reads the timeline when told to, and polls only
// slowly as a safety net; when the socket fails it polls as before.
const liveView = new LiveView($("timeline"));
const safetyPoller = new Poller(refresh, { firstDelayMs: 50, factor: 3, maxDelayMs: 10000, maxDurationMs: 600000 });
const refreshOnce = serial(refresh);
let live = null;
let devUser = "";

function wake() {
  if (live?.live) {
    poller.stop();
    safetyPoller.start();
  } else poller.start();
}

function onLive(message) {
  if (message.conversationId !== state.conversationId) return;
  if (message.type === "delta") liveView.delta(message);
  else if (message.type === "status") liveView.status(message);
  else if (message.type === "timeline") {
    const after = liveView.saved(message);
    refreshOnce().then(after);
  }
}

function onLiveState(liveState) {
  document.body.dataset.live = liveState;
  if (liveState === "live") wake();
  else if (liveState === "down" || liveState === "refused") {
    safetyPoller.stop();
    poller.start();
  }
}

function followConversation() {
  if (!live) return;
  const id = state.conversationId;
  channelFor(state.user || devUser, id).then((channel) => {
    if (id === state.conversationId) live.follow(channel);
  });
}

function notice(text, isError = true) {
  const box = $("notice");
  box.textContent = text || "";
  box.hidden = !text;
  box.classList.toggle("error", Boolean(isError));
}

function showTurn(turn) {
  const line = $("turn-status");
  if (!turn) {
    line.textContent = "";
    line.dataset.status = "";
    return;
  }
  const parts = [`turn ${turn.turnId.slice(0, 8)}… (${turn.agentId}): ${STATUS_TEXT[turn.status] || turn.status}`];
  if (turn.status === "FAILED" && turn.error) parts.push(`${turn.error.type}: ${turn.error.message}`);
  line.textContent = parts.join(" — ");
  line.dataset.status = turn.status;
}

/** One poll: the timeline, then the turn that holds the conversation. Resolves true to keep polling. */
async function refresh() {
  const cid = state.conversationId;
  const result = await api.messages(cid);
  if (cid !== state.conversationId) return false; // switched meanwhile
  if (result.status === 404) {
    timeline.render([]);
    $("empty").hidden = false;
    return false;
  }
  if (!result.ok) {
    notice(problemText(result));
    return result.status === 0 || result.status >= 500;
  }
  const messages = result.body?.messages || [];
  timeline.render(messages);
  liveView.settle(messages);
  $("empty").hidden = messages.length > 0;
  state.activeTurnId = result.body?.activeTurnId || null;
  $("cancel-turn").hidden = !state.activeTurnId;
  const last = messages.length ? messages[messages.length - 1].turnId : null;
  const turnId = state.activeTurnId || last || state.lastTurnId;
  if (!turnId) {
    showTurn(null);
    return false;
  }
  let turn = state.finished.get(turnId);
  if (!turn) {
    const read = await api.turn(turnId);
    if (!read.ok) return read.status === 0 || read.status >= 500;
    turn = read.body;
    if (!RUNNABLE.has(turn.status) && !turn.status.startsWith("WAITING")) state.finished.set(turnId, turn);
  }
  showTurn(turn);
  if (RUNNABLE.has(turn.status)) return true;
  // The turn may have moved on between the two reads (the worker is fast): one more round, so the
  // timeline shown is at least as new as the status shown, then stop.
  const settled = `${turn.turnId}@${turn.version}`;
  if (state.settled === settled) return false;
  state.settled = settled;
  return true;
}

function setConversation(id, { push = true } = {}) {
  state.conversationId = id;
  state.activeTurnId = null;
  state.lastTurnId = null;
  $("conversation").value = id;
  if (push) history.replaceState(null, "", `${location.pathname}${location.search}#c=${encodeURIComponent(id)}`);
  timeline.reset();
  liveView.reset();
  showTurn(null);
  notice("");
  followConversation();
  wake();
}

function newConversationId() {
  const random = crypto.getRandomValues(new Uint32Array(2));
  return `c-${[...random].map((n) => n.toString(36)).join("")}`;
}

const startAttempt = new Attempt();

async function send(event) {
  event.preventDefault();
  const input = $("input").value.trim();
  if (!input) return;
  const agentId = $("agent").value;
  localStorage.setItem("agentturn.agent", agentId);
  $("send").disabled = true;
  notice("");
  liveView.echo(input);
  const body = { input, agentId, conversationId: state.conversationId };
  const result = await sendWithRetry(startAttempt, body, (key) => api.startTurn(state.conversationId, input, agentId, key));
  $("send").disabled = false;
  if (result.ok) {
    $("input").value = "";
    state.lastTurnId = result.body?.turnId || null;
    if (result.body?.status) showTurn(result.body);
  } else if (result.status === 409 && result.problem?.activeTurnId) {
    liveView.echo(null);
    notice("This conversation has a turn that has not finished: answer or cancel it first.");
  } else {
    liveView.echo(null);
    notice(problemText(result));
  }
  wake();
}

const cancelAttempt = new Attempt();

async function cancelTurn() {
  const turnId = state.activeTurnId;
  if (!turnId) return;
  const result = await sendWithRetry(cancelAttempt, { turnId }, (key) => api.cancel(turnId, key));
  if (!result.ok) notice(problemText(result));
  wake();
}

async function loadDevInfo() {
  // Only `agentturn dev` answers this; against a deployed API the user switch stays hidden.
  const info = await api.devInfo();
  if (!info.ok || !info.body) return;
  if (info.body.model === "demo") showDemoModel();
  if (info.body.live) {
    devUser = info.body.defaultUser;
    const { realtimeUrl, host } = info.body.live;
    // Locally the dev user stands for the JWT a deployed page would send (AppSync checks it, then the
    // channel namespace's handler checks that the channel is the caller's own).
    const authorization = () => ({ host, "x-agentturn-dev-user": state.user || devUser });
    live = new LiveChannel({ realtimeUrl, authorization, onMessage: onLive, onState: onLiveState });
    followConversation();
  }
  const users = [...new Set([info.body.defaultUser, ...(info.body.users || [])].filter(Boolean))];
  if (state.user && !users.includes(state.user)) users.push(state.user);
  const select = $("user");
  select.replaceChildren(
    ...users.map((user) => {
      const option = document.createElement("option");
      option.value = user === info.body.defaultUser ? "" : user;
      option.textContent = user === info.body.defaultUser ? `${user} (default)` : user;
      return option;
    }),
  );
  select.value = state.user;
  $("user-switch").hidden = false;
  const agents = info.body.agents || [];
  if (agents.length) {
    const picker = $("agent");
    const wanted = localStorage.getItem("agentturn.agent") || picker.value;
    picker.replaceChildren(
      ...agents.map((id) => {
        const option = document.createElement("option");
        option.value = id;
        option.textContent = id;
        return option;
      }),
    );
    picker.value = agents.includes(wanted) ? wanted : agents.includes("assistant") ? "assistant" : agents[0];
  }
}

function init() {
  $("composer").addEventListener("submit", send);
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("cancel-turn").addEventListener("click", cancelTurn);
  $("new-conversation").addEventListener("click", () => setConversation(newConversationId()));
  $("session").addEventListener("submit", (event) => event.preventDefault());
  $("conversation").addEventListener("change", () => {
    const id = $("conversation").value.trim();
    if (CONVERSATION_ID.test(id)) setConversation(id);
    else notice("A conversation id is 1–128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit.");
  });
  $("user").addEventListener("change", () => {
    state.user = $("user").value;
    localStorage.setItem("agentturn.devUser", state.user);
    setConversation(state.conversationId, { push: false }); // another user sees another namespace
  });
  const savedAgent = localStorage.getItem("agentturn.agent");
  if (params.get("agent")) $("agent").value = params.get("agent");
  else if (savedAgent) $("agent").value = savedAgent;
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("c");
  setConversation(fromHash && CONVERSATION_ID.test(fromHash) ? fromHash : newConversationId());
  loadDevInfo().then(() => {
    if (params.get("agent")) $("agent").value = params.get("agent");
  });
}

init();

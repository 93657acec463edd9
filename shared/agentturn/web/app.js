// The console: a list of the person's conversations, and one conversation at a time. Reads the timeline,
// starts turns, and polls while a turn is queued or running (bounded, with backoff); the cards do the
// answering. The URL's `#c=<id>` names the open conversation, so links, reloads and the browser's back and
// forward buttons all work.

import { Api, Attempt, problemText, sendWithRetry } from "./api.js";
import { ConversationList, conversationHref } from "./conversations.js";
import { Inbox } from "./inbox.js";
import { Poller } from "./poller.js";
import { ScrollKeeper } from "./scroll.js";
import { Timeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const RUNNABLE = new Set(["READY", "RUNNING"]);
// What the status line says, in words for the person using the console (no turn ids, no agent ids).
const STATUS_TEXT = {
  READY: "Queued: waiting for the agent to start…",
  RUNNING: "The agent is working…",
  WAITING_FOR_USER: "Waiting for you: fill in the form above.",
  WAITING_FOR_APPROVAL: "Waiting for your decision above.",
  COMPLETED: "Done.",
  FAILED: "Something went wrong; the agent stopped.",
  CANCELLED: "Cancelled.",
  MAX_ITERATIONS_REACHED: "Stopped: the agent reached its step limit.",
  MAX_STEPS_REACHED: "Stopped: the agent reached its step limit.",
  BUDGET_EXCEEDED: "Stopped: the agent reached its budget.",
};
const ACTIVITY_TEXT = { READY: "Queued…", RUNNING: "Thinking…" };
const CONVERSATION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const BUSY_NOTICE = "This conversation has a turn that has not finished: answer or cancel it first.";
const params = new URLSearchParams(location.search);

const state = {
  conversationId: null,
  user: localStorage.getItem("agentturn.devUser") || "",
  activeTurnId: null,
  lastTurnId: null,
  finished: new Map(), // turnId -> terminal TurnView (never changes again)
  settled: null, // "turnId@version" of the last non-runnable turn a poll has confirmed
  cancelling: false,
  sending: false, // a message is on its way: Send stays disabled until the server answered
  // Which view (user and conversation) is on screen: bumped whenever either changes, so an answer to a read
  // made for the previous one is dropped instead of drawn under the new one.
  view: 0,
};

const api = new Api(() => state.user || null);
function showDemoModel() {
  $("demo-badge").hidden = false;
  $("demo-banner").hidden = false;
}

const scroll = new ScrollKeeper($("scroller"), $("jump-latest"));
const timeline = new Timeline($("timeline"), {
  api,
  // ?clientValidation=off skips the browser-side checks, to see what the server refuses (and for tests).
  noValidate: params.get("clientValidation") === "off",
  onAction: (turnId) => {
    live.view?.wake(turnId); // the person answered: what the channel says next about this turn is news
    wake();
  },
  // Against a deployed API the console learns it from the replies ("[demo model] ..."), locally from /_dev/info.
  onDemoModel: showDemoModel,
});
const conversations = new ConversationList({
  api,
  list: $("conversation-list"),
  empty: $("conversations-empty"),
  more: $("more-conversations"),
  onTitle: (title) => {
    $("conversation-title").textContent = title || "New conversation";
    document.title = title ? `${title} · agentturn` : "agentturn console";
  },
});
const inbox = new Inbox({
  api,
  list: $("inbox-list"),
  count: $("inbox-count"),
  status: $("inbox-status"),
  heading: $("inbox-heading"),
  noValidate: params.get("clientValidation") === "off", // as the timeline's forms
});
const poller = new Poller(refresh, {
  onGiveUp: () => notice("Still waiting for the agent; the page stopped checking. Reload to check again.", false),
});

function notice(text, isError = true) {
  const box = $("notice");
  box.textContent = text || "";
  box.hidden = !text;
  box.classList.toggle("error", Boolean(isError));
}

function showTurn(turn) {
  const line = $("turn-status");
  const activity = $("activity");
  if (!turn) {
    line.textContent = "";
    line.dataset.status = "";
    activity.hidden = true;
    return;
  }
  let text = STATUS_TEXT[turn.status] || turn.status;
  const pending = turn.pendingActions?.length || 0;
  if (turn.status.startsWith("WAITING") && pending > 1) text = `Waiting for you: ${pending} answers are needed above.`;
  const others = waitsForOthers(turn);
  if (others) text = `${capitalised(others)}: they answer from their “Waiting for you” list.`;
  if (turn.status === "FAILED" && turn.error?.message) text += ` (${turn.error.message})`;
  if (state.cancelling && !turn.status.startsWith("CANCEL") && RUNNABLE.has(turn.status)) text = "Cancelling…";
  line.textContent = text;
  line.dataset.status = turn.status;
  // Queued and running show in the timeline itself, where the answer will appear. The live-timeline module
  // (live.js), when present, replaces this with streamed text.
  const busy = ACTIVITY_TEXT[turn.status];
  scroll.around(() => {
    activity.hidden = !busy || timeline.streaming;
    activity.dataset.status = turn.status;
    $("activity-text").textContent = busy || "";
  });
}

/** For whom a waiting turn waits when every answer it needs is other people's (cards that name their answerers):
 * ``waiting for finance (0 of 1)``; null when any answer is the owner's. */
function waitsForOthers(turn) {
  const actions = turn?.status?.startsWith("WAITING") ? turn.pendingActions || [] : [];
  if (!actions.length || !actions.every((action) => action.waitingFor)) return null;
  return actions.map((action) => action.waitingFor).join("; ");
}

/** For whom the list marks a turn: "you", "others" (every answer it waits for is other people's) or null. */
function waitingFor(turn) {
  if (!turn.status.startsWith("WAITING")) return null;
  return waitsForOthers(turn) ? "others" : "you";
}

function capitalised(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** An answer to a read made for a view no longer shown (the debug line is what tests wait for). */
function dropStale(what) {
  console.debug(`agentturn: dropped the ${what} read for a view no longer shown`);
  return false;
}

/** One poll: the timeline, then the turn that holds the conversation. Resolves true to keep polling. */
async function refresh() {
  const view = state.view;
  const result = await api.messages(state.conversationId);
  if (view !== state.view) return dropStale("timeline"); // another user or conversation meanwhile
  if (result.status === 404) {
    scroll.around(() => timeline.render([]));
    $("empty").hidden = timeline.hasEchoes();
    return false;
  }
  if (!result.ok) {
    notice(problemText(result));
    return result.status === 0 || result.status >= 500;
  }
  const messages = result.body?.messages || [];
  const before = timeline.pendingCount();
  scroll.around(
    () => {
      timeline.render(messages);
      live.view?.settle(messages);
    },
    // Cards that now wait for the person: the view goes to the first of them (a batch is read from its top).
    { label: "New messages below ↓", target: () => (timeline.pendingCount() > before ? timeline.firstPending() : null) },
  );
  if (timeline.pendingCount() === 0) scroll.release();
  $("empty").hidden = messages.length > 0 || timeline.hasEchoes();
  state.activeTurnId = result.body?.activeTurnId || null;
  if (!state.activeTurnId) {
    // Whatever held the conversation has finished: a "not finished" notice is no longer true.
    if ($("notice").textContent === BUSY_NOTICE) notice("");
    state.cancelling = false;
    showComposer(null);
    conversations.setWaiting(state.conversationId, null);
  }
  showCancel();
  const last = messages.length ? messages[messages.length - 1].turnId : null;
  const turnId = state.activeTurnId || state.lastTurnId || last;
  if (!turnId) {
    showTurn(null);
    return false;
  }
  let turn = state.finished.get(turnId);
  if (!turn) {
    const read = await api.turn(turnId);
    if (view !== state.view) return dropStale("turn");
    if (!read.ok) return read.status === 0 || read.status >= 500;
    turn = read.body;
    if (!RUNNABLE.has(turn.status) && !turn.status.startsWith("WAITING")) state.finished.set(turnId, turn);
  }
  timeline.setPendingActions(turn.turnId, turn.pendingActions || (turn.suspension ? [turn.suspension] : []));
  showComposer(turn.turnId === state.activeTurnId ? turn : null);
  // The list's marker follows what this page reads of the open conversation (answered: no longer waiting).
  if (turn.turnId === state.activeTurnId) conversations.setWaiting(state.conversationId, waitingFor(turn));
  if (RUNNABLE.has(turn.status)) {
    showTurn(turn);
    return true;
  }
  // Waiting or ended: whatever the channel said the turn was doing is over (a late status must not revive it).
  live.view?.rest(turn.turnId);
  // The turn may have moved on between the two reads (the worker is fast): one more round, so the timeline
  // shown is at least as new as the status shown ("Done." never shows before the answer does), then stop.
  const settled = `${turn.turnId}@${turn.version}`;
  if (state.settled === settled) {
    showTurn(turn);
    if (state.lastTurnId === turn.turnId) {
      conversations.refresh();
      inbox.refresh();
    }
    return false;
  }
  state.settled = settled;
  return true;
}

// While a turn holds the conversation the server refuses a new message (409): the box says so before the
// person types, instead of a refused send afterwards. Waiting: answer above first. Working: type ahead, send later.
const COMPOSER_HINT = {
  WAITING_FOR_USER: "Fill in the form above first, or cancel the turn.",
  WAITING_FOR_APPROVAL: "Decide above first, or cancel the turn.",
};
const COMPOSER_PLACEHOLDER = $("input").placeholder;

function showComposer(activeTurn) {
  const status = activeTurn?.status || "";
  const waiting = status.startsWith("WAITING");
  const working = RUNNABLE.has(status);
  const input = $("input");
  const others = waitsForOthers(activeTurn);
  const hint = others
    ? `${capitalised(others)} to answer first, or cancel the turn.`
    : COMPOSER_HINT[status] || (waiting ? "Answer above first, or cancel the turn." : "");
  input.disabled = waiting;
  input.placeholder = waiting ? hint : working ? "The agent is working: type now, send when it is done." : COMPOSER_PLACEHOLDER;
  $("send").disabled = waiting || working || state.sending;
  $("composer").dataset.state = waiting ? "waiting" : working ? "working" : "open";
}

function showCancel() {
  const active = Boolean(state.activeTurnId);
  $("cancel-turn").hidden = !active || !$("cancel-confirm").hidden;
  $("cancel-turn").disabled = state.cancelling;
  $("cancel-turn").textContent = state.cancelling ? "Cancelling…" : "Cancel turn";
  if (!active) $("cancel-confirm").hidden = true;
}

function openConversation(id) {
  state.view += 1;
  state.conversationId = id;
  state.activeTurnId = null;
  state.lastTurnId = null;
  state.cancelling = false;
  $("conversation").value = id;
  timeline.reset();
  showTurn(null);
  showComposer(null);
  showCancel();
  notice("");
  conversations.setActive(id);
  closeSidebar();
  scroll.toBottom();
  followConversation();
  wake();
}

function conversationFromHash() {
  const id = new URLSearchParams(location.hash.slice(1)).get("c");
  return id && CONVERSATION_ID.test(id) ? id : null;
}

/** Goes to a conversation by changing the URL: a new history entry, so back and forward return here. */
function navigate(id, { replace = false } = {}) {
  const url = `${location.pathname}${location.search}${conversationHref(id)}`;
  if (replace) {
    history.replaceState(null, "", url);
    openConversation(id);
  } else if (conversationFromHash() === id) openConversation(id);
  else location.hash = conversationHref(id).slice(1); // fires hashchange, which opens it
}

function newConversationId() {
  const random = crypto.getRandomValues(new Uint32Array(2));
  return `c-${[...random].map((n) => n.toString(36)).join("")}`;
}

const startAttempt = new Attempt();

async function send(event) {
  event.preventDefault();
  const input = $("input").value.trim();
  if (!input || $("send").disabled) return;
  const agentId = $("agent").value;
  localStorage.setItem("agentturn.agents.agent", agentId);
  state.sending = true;
  $("send").disabled = true;
  notice("");
  // What was sent shows at once, before the server answers; the timeline replaces it with the stored message.
  const echo = timeline.echo(input);
  $("input").value = "";
  scroll.around(() => ($("empty").hidden = true));
  scroll.toBottom();
  const cid = state.conversationId;
  const view = state.view;
  const body = { input, agentId, conversationId: cid };
  const caller = api.asCaller();
  const sending = sendWithRetry(startAttempt, body, (key) => caller.startTurn(cid, input, agentId, key));
  conversations.yieldTo(sending); // the list's background checks wait: the turn starts sooner without them
  const result = await sending;
  state.sending = false;
  $("send").disabled = $("composer").dataset.state === "waiting" || $("composer").dataset.state === "working";
  if (view !== state.view) {
    // The person opened another conversation (or became another user) meanwhile: the list shows where the
    // message went.
    conversations.refresh();
    return;
  }
  if (result.ok) {
    state.lastTurnId = result.body?.turnId || null;
    state.settled = null;
    if (result.body?.status) showTurn(result.body);
    conversations.refresh();
  } else {
    // Said on the message itself, with a way to put it away (the text is back in the box: nothing is lost).
    echo.fail(result.status === 409 && result.problem?.activeTurnId ? BUSY_NOTICE : problemText(result));
    if (!$("input").value) $("input").value = input;
  }
  wake();
}

const cancelAttempt = new Attempt();

function askToCancel() {
  $("cancel-turn").hidden = true;
  $("cancel-confirm").hidden = false;
  $("cancel-yes").focus();
}

function keepGoing() {
  $("cancel-confirm").hidden = true;
  showCancel();
  $("cancel-turn").focus();
}

async function cancelTurn() {
  const turnId = state.activeTurnId;
  $("cancel-confirm").hidden = true;
  if (!turnId) return showCancel();
  state.cancelling = true;
  showCancel();
  $("turn-status").textContent = "Cancelling…";
  const caller = api.asCaller();
  const result = await sendWithRetry(cancelAttempt, { turnId }, (key) => caller.cancel(turnId, key));
  if (!result.ok) {
    state.cancelling = false;
    showCancel();
    notice(problemText(result));
  }
  wake();
}

function openSidebar() {
  document.body.classList.add("sidebar-open");
  $("scrim").hidden = false;
  $("open-sidebar").setAttribute("aria-expanded", "true");
  $("new-conversation").focus();
}

function closeSidebar() {
  if (!document.body.classList.contains("sidebar-open")) return;
  document.body.classList.remove("sidebar-open");
  $("scrim").hidden = true;
  $("open-sidebar").setAttribute("aria-expanded", "false");
}

async function loadDevInfo() {
  // Only `agentturn dev` answers this; against a deployed API the user switch stays hidden.
  const info = await api.devInfo();
  if (!info.ok || !info.body) return;
  if (info.body.model === "demo") showDemoModel();
  attachLive(info.body);
  const users = [...new Set([info.body.defaultUser, ...(info.body.users || [])].filter(Boolean))];
  if (state.user && !users.includes(state.user)) users.push(state.user);
  const select = $("user");
  select.replaceChildren(
    ...users.map((user) => {
      const option = document.createElement("option");
      option.value = user === info.body.defaultUser ? "" : user;
      // A dev user's groups (finance, oncall) show beside the name: who may answer which card.
      const groups = (info.body.groups || {})[user] || [];
      const label = groups.length ? `${user} — ${groups.join(", ")}` : user;
      option.textContent = user === info.body.defaultUser ? `${label} (default)` : label;
      return option;
    }),
  );
  select.value = state.user;
  $("user-switch").hidden = false;
  const agents = info.body.agents || [];
  if (agents.length) {
    const picker = $("agent");
    const wanted = localStorage.getItem("agentturn.agents.agent") || picker.value;
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

// ------------------------------------------------------------------ the live timeline (web/live.js)
// When this build has the live-timeline modules (live.js: the conversation's channel; live_view.js: the
// streamed text and what the turn does now) and the server offers a channel (`/_dev/info` says where), the
// page reads the timeline when the channel says so and polls only slowly as a safety net; when the socket
// fails it polls as before. Without them, polling does the job. The person's message is echoed by the
// timeline itself (timeline.echo), and the "Queued…/Thinking…" row steps aside while the live entry shows.

// `followed`: the view whose channel is subscribed; until the new channel's name is computed (an async digest),
// what the previous subscription still delivers belongs to the previous view.
const live = { channel: null, view: null, safety: null, refreshOnce: null, channelFor: null, devUser: "", followed: 0 };

function wake() {
  if (live.channel?.live) {
    poller.stop();
    live.safety.start();
  } else poller.start();
}

function followConversation() {
  if (!live.channel) return;
  const view = state.view;
  live.view.reset();
  live.channelFor(state.user || live.devUser, state.conversationId).then((channel) => {
    if (view !== state.view) return;
    live.followed = view;
    live.channel.follow(channel);
  });
}

function onLive(message) {
  if (live.followed !== state.view) {
    console.debug("agentturn: dropped a live message for a view no longer shown");
    return;
  }
  if (message.conversationId !== state.conversationId) return;
  if (message.type === "delta") live.view.delta(message);
  else if (message.type === "status") live.view.status(message);
  if (message.type === "delta" || message.type === "status") livePhaseLine(message);
  else if (message.type === "timeline") {
    const after = live.view.saved(message);
    live.refreshOnce().then(after);
  }
  // The feed coalesces: a piece of text or a save may carry what the turn does now (a tool it started).
  if (message.phase && message.type !== "status") {
    const status = { type: "status", turnId: message.turnId, phase: message.phase, toolName: message.toolName };
    live.view.status(status);
    livePhaseLine(status);
  }
  if (timeline.streaming) $("activity").hidden = true;
}

// While a turn runs, the status line follows what the channel says it is doing (the turn view it was drawn
// from may be older: the run request has not answered yet, or the last poll saw the turn queued).
const PHASE_TEXT = {
  queued: STATUS_TEXT.READY,
  thinking: "The agent is thinking…",
  running: "The agent is using a tool…",
};

function livePhaseLine(message) {
  const line = $("turn-status");
  if (state.cancelling || (line.dataset.status && !RUNNABLE.has(line.dataset.status))) return;
  const phase = message.type === "delta" ? "thinking" : message.phase;
  const text = PHASE_TEXT[phase];
  if (!text) return;
  line.textContent = text;
  line.dataset.phase = phase;
}

function onLiveState(channelState) {
  document.body.dataset.live = channelState;
  if (channelState === "live") wake();
  else if (channelState === "down" || channelState === "refused") {
    live.safety.stop();
    poller.start();
  }
}

async function attachLive(info) {
  if (!info?.live) return;
  let modules;
  try {
    modules = await Promise.all([import("./live.js"), import("./live_view.js")]);
  } catch {
    return; // not in this build
  }
  const [{ LiveChannel, channelFor, serial }, { LiveView }] = modules;
  live.view = new LiveView($("timeline"));
  Object.defineProperty(timeline, "streaming", { get: () => Boolean(live.view && !live.view.node.hidden) });
  live.safety = new Poller(refresh, { firstDelayMs: 50, factor: 3, maxDelayMs: 10000, maxDurationMs: 600000 });
  live.refreshOnce = serial(refresh);
  live.channelFor = channelFor;
  live.devUser = info.defaultUser;
  const { realtimeUrl, host } = info.live;
  // Locally the dev user stands for the JWT a deployed page would send (AppSync checks it, then the channel
  // namespace's handler checks that the channel is the caller's own).
  const authorization = () => ({ host, "x-agentturn-dev-user": state.user || live.devUser });
  live.channel = new LiveChannel({ realtimeUrl, authorization, onMessage: onLive, onState: onLiveState });
  followConversation();
}

function init() {
  $("composer").addEventListener("submit", send);
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("cancel-turn").addEventListener("click", askToCancel);
  $("cancel-yes").addEventListener("click", cancelTurn);
  $("cancel-no").addEventListener("click", keepGoing);
  $("new-conversation").addEventListener("click", () => {
    navigate(newConversationId());
    $("input").focus();
  });
  $("open-sidebar").addEventListener("click", openSidebar);
  $("close-sidebar").addEventListener("click", closeSidebar);
  $("scrim").addEventListener("click", closeSidebar);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeSidebar();
  });
  $("session").addEventListener("submit", (event) => event.preventDefault());
  $("conversation").addEventListener("change", () => {
    const id = $("conversation").value.trim();
    if (CONVERSATION_ID.test(id)) navigate(id);
    else notice("A conversation id is 1–128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit.");
  });
  $("user").addEventListener("change", () => {
    state.user = $("user").value;
    localStorage.setItem("agentturn.devUser", state.user);
    conversations.refresh(); // another user sees another list
    inbox.refresh(); // ... and another inbox
    openConversation(state.conversationId); // ... and another namespace
  });
  // Back, forward, an edited URL, a link from the list: the hash names the conversation to show.
  window.addEventListener("hashchange", () => {
    const id = conversationFromHash();
    if (id && id !== state.conversationId) openConversation(id);
    else if (!id) navigate(newConversationId(), { replace: true });
  });
  const savedAgent = localStorage.getItem("agentturn.agents.agent");
  if (params.get("agent")) $("agent").value = params.get("agent");
  else if (savedAgent) $("agent").value = savedAgent;
  navigate(conversationFromHash() || newConversationId(), { replace: true });
  conversations.refresh();
  inbox.refresh();
  loadDevInfo().then(() => {
    if (params.get("agent")) $("agent").value = params.get("agent");
  });
}

init();

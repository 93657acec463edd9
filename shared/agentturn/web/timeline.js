// Renders a conversation timeline keyed by messageId, touching only what changed: polling every second
// must not rebuild a form the person is typing into, nor move the focus. Also holds the echoes of what the
// person just sent (shown at once, replaced by the stored message when it arrives).

import { approvalCard, formCard } from "./cards.js";
import { el, jsonBlock } from "./dom.js";

export const DEMO_PREFIX = "[demo model]";

function signature(message) {
  // Cards change in place (status, version); other entries are append-only but compared whole anyway.
  if (message.type === "agent_form" || message.type === "agent_approval") return `${message.status}:${message.version}`;
  return JSON.stringify(message);
}

/** The model's text as sanitised markdown (vendor/markdown.js); plain text if that did not load. */
export function richText(text, attributes = {}) {
  const host = el("div", { class: "content markdown", ...attributes });
  if (window.AgentturnMarkdown) host.append(window.AgentturnMarkdown.render(text));
  else host.append(el("p", {}, text));
  return host;
}

function aiEntry(message, ctx) {
  const text = message.content || "";
  const demo = text.startsWith(DEMO_PREFIX);
  if (demo) ctx.onDemoModel();
  const calls = message.toolCalls || [];
  return el(
    "li",
    // A step that only called tools is a quiet line, as its results are; the answer is the model's text.
    { class: text ? "msg ai" : "msg ai calls-only", "data-testid": "ai-message" },
    el("span", { class: "who" }, "Agent"),
    demo ? el("span", { class: "demo-badge", title: "Reply from the deterministic demo model, not an LLM" }, "demo model") : null,
    text ? richText(demo ? text.slice(DEMO_PREFIX.length).trimStart() : text) : null,
    calls.length
      ? el(
          "details",
          { class: "tool-call" },
          el("summary", {}, calls.length === 1 ? "Used a tool" : `Used ${calls.length} tools`),
          calls.map((call) => [el("p", { class: "tool-name" }, el("code", {}, call.name)), jsonBlock(call.arguments || {})]),
        )
      : null,
  );
}

function toolEntry(message) {
  const status = message.content && typeof message.content === "object" ? message.content.status : null;
  const name = message.toolName || null;
  const byPerson = message.metadata?.writtenBy === "person";
  // Named in the line itself, so the results of a batch can be told apart without opening each one.
  const what = byPerson ? "Your answer in place of " : "Result of ";
  return el(
    "li",
    { class: "msg tool", "data-testid": "tool-message", dataset: { toolName: name || "" } },
    el(
      "details",
      {},
      el(
        "summary",
        {},
        name ? [what, el("code", { class: "tool-name" }, name)] : byPerson ? "Your answer in place of a tool" : "Tool result",
        status ? ` (${String(status).toLowerCase()})` : null,
      ),
      jsonBlock(message.content),
    ),
  );
}

/** The timeline with each run of tool results in the order of the calls that asked for them (the order of
 * their cards), not in the order the tools finished. */
export function inCallOrder(messages) {
  const out = [];
  let order = new Map(); // toolCallId -> position in the latest model message's calls
  let run = [];
  const flush = () => {
    const rank = (m) => (order.has(m.toolCallId) ? order.get(m.toolCallId) : Number.MAX_SAFE_INTEGER);
    run.map((m, i) => [m, i]).sort((a, b) => rank(a[0]) - rank(b[0]) || a[1] - b[1]).forEach(([m]) => out.push(m));
    run = [];
  };
  for (const message of messages) {
    if (message.type === "tool") {
      run.push(message);
      continue;
    }
    flush();
    if (message.type === "ai" && message.toolCalls?.length) order = new Map(message.toolCalls.map((c, i) => [c.id, i]));
    out.push(message);
  }
  flush();
  return out;
}

function userEntry(text, extra = {}) {
  return el(
    "li",
    { class: "msg user", "data-testid": "user-message", ...extra },
    el("span", { class: "who" }, "You"),
    el("p", { class: "content" }, text),
  );
}

function entry(message, ctx) {
  switch (message.type) {
    case "user":
      return { node: userEntry(message.content) };
    case "ai":
      return { node: aiEntry(message, ctx) };
    case "tool":
      return { node: toolEntry(message) };
    case "agent_form": {
      const card = formCard(message, ctx);
      return { node: el("li", { class: "msg card-entry" }, card.node), card };
    }
    case "agent_approval": {
      const card = approvalCard(message, ctx);
      return { node: el("li", { class: "msg card-entry" }, card.node), card };
    }
    default:
      return { node: el("li", { class: "msg unknown" }, el("span", { class: "who" }, "Other"), jsonBlock(message)) };
  }
}

export class Timeline {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = { ...ctx, pendingAction: (actionId) => this.pending.get(actionId) || null };
    this.entries = new Map(); // messageId -> {node, card?, signature}
    this.echoes = []; // {text, node, seen}: sent, not yet in the stored timeline
    this.pending = new Map(); // actionId -> the turn's SuspensionView (parametersSchema, fingerprint...)
    this.userCounts = new Map(); // user message text -> how many the stored timeline holds
    /** Set by the live-timeline module while it streams the model's text (hides the "Thinking…" row). */
    this.streaming = false;
  }

  reset() {
    this.entries.clear();
    this.echoes = [];
    this.pending.clear();
    this.userCounts.clear();
    this.root.replaceChildren();
  }

  hasEchoes() {
    return this.echoes.length > 0;
  }

  /** Cards waiting for an answer. */
  pendingCount() {
    let count = 0;
    for (const current of this.entries.values()) if (current.card && current.status === "PENDING") count += 1;
    return count;
  }

  /** The open turn's pending actions: what an approval card needs to offer editing and answering. */
  setPendingActions(turnId, actions) {
    this.pending = new Map((actions || []).map((a) => [a.actionId, { ...a, turnId }]));
    for (const current of this.entries.values()) current.card?.refreshPending?.();
  }

  /** Shows `text` as sent at once; returns {fail(reason)} to mark it as not sent. */
  echo(text) {
    // A refused message the person has not dismissed yet goes once they send again (its text was in the box).
    this.root.querySelectorAll(".echo.failed").forEach((node) => node.remove());
    const node = userEntry(text, { class: "msg user echo", "data-testid": "user-echo", "aria-busy": "true" });
    const state = el("span", { class: "echo-state" }, "Sending…");
    node.append(state);
    const echo = { text, node, seen: this.userCounts.get(text) || 0 };
    this.echoes.push(echo);
    this.root.append(node);
    return {
      fail: (reason) => {
        node.classList.add("failed");
        node.removeAttribute("aria-busy");
        state.replaceChildren(
          el("span", { role: "alert" }, reason ? `Not sent: ${reason}` : "Not sent."),
          " ",
          el("span", { class: "echo-hint" }, "Your text is back in the message box."),
        );
        node.append(
          el(
            "button",
            { type: "button", class: "secondary small echo-dismiss", onclick: () => node.remove() },
            "Dismiss",
          ),
        );
        this.echoes = this.echoes.filter((e) => e !== echo);
      },
    };
  }

  /** The first card that waits for the person, if any. */
  firstPending() {
    for (const current of this.entries.values()) if (current.card && current.status === "PENDING") return current.node;
    return null;
  }

  render(stored) {
    const messages = inCallOrder(stored);
    const seen = new Set();
    const counts = new Map();
    messages.forEach((message, index) => {
      if (message.type === "user") counts.set(message.content, (counts.get(message.content) || 0) + 1);
      const id = message.messageId || `#${index}`;
      seen.add(id);
      let current = this.entries.get(id);
      const sig = signature(message);
      if (!current) {
        current = { ...entry(message, this.ctx), signature: sig, status: message.status };
        this.entries.set(id, current);
      } else if (current.signature !== sig) {
        if (current.card) current.card.update(message);
        else {
          const fresh = entry(message, this.ctx);
          current.node.replaceWith(fresh.node);
          current.node = fresh.node;
        }
        current.signature = sig;
        current.status = message.status;
      }
      const at = this.root.children[index];
      if (at !== current.node) this.root.insertBefore(current.node, at || null);
    });
    for (const [id, current] of this.entries) {
      if (!seen.has(id)) {
        current.node.remove();
        this.entries.delete(id);
      }
    }
    this.userCounts = counts;
    // An echo leaves when the stored timeline holds one more message with its text than when it was sent.
    this.echoes = this.echoes.filter((echo) => {
      if ((counts.get(echo.text) || 0) > echo.seen) {
        echo.node.remove();
        return false;
      }
      this.root.append(echo.node); // stays last, below what the server already has
      return true;
    });
  }
}

// Renders a conversation timeline keyed by messageId, touching only what changed: polling every second
// must not rebuild a form the person is typing into, nor move the focus.

import { approvalCard, formCard } from "./cards.js";
import { el, jsonBlock } from "./dom.js";

export const DEMO_PREFIX = "[demo model]";

function signature(message) {
  // Cards change in place (status, version); other entries are append-only but compared whole anyway.
  if (message.type === "agent_form" || message.type === "agent_approval") return `${message.status}:${message.version}`;
  return JSON.stringify(message);
}

function aiEntry(message, ctx) {
  const text = message.content || "";
  const demo = text.startsWith(DEMO_PREFIX);
  if (demo) ctx.onDemoModel();
  return el(
    "li",
    { class: "msg ai", "data-testid": "ai-message" },
    el("span", { class: "who" }, "Agent"),
    demo ? el("span", { class: "demo-badge", title: "Reply from the deterministic demo model, not an LLM" }, "demo model") : null,
    text ? el("p", { class: "content" }, demo ? text.slice(DEMO_PREFIX.length).trimStart() : text) : null,
    (message.toolCalls || []).map((call) =>
      el(
        "details",
        { class: "tool-call" },
        el("summary", {}, "calls ", el("code", {}, call.name)),
        jsonBlock(call.arguments || {}),
      ),
    ),
  );
}

function toolEntry(message) {
  const status = message.content && typeof message.content === "object" ? message.content.status : null;
  return el(
    "li",
    { class: "msg tool", "data-testid": "tool-message" },
    el(
      "details",
      {},
      el("summary", {}, "result of ", el("code", {}, message.toolName || message.toolCallId), status ? ` (${status})` : null),
      jsonBlock(message.content),
    ),
  );
}

function entry(message, ctx) {
  switch (message.type) {
    case "user":
      return { node: el("li", { class: "msg user", "data-testid": "user-message" }, el("span", { class: "who" }, "You"), el("p", { class: "content" }, message.content)) };
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
      return { node: el("li", { class: "msg unknown" }, el("span", { class: "who" }, String(message.type)), jsonBlock(message)) };
  }
}

export class Timeline {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.entries = new Map(); // messageId -> {node, card?, signature}
  }

  reset() {
    this.entries.clear();
    this.root.replaceChildren();
  }

  render(messages) {
    const seen = new Set();
    messages.forEach((message, index) => {
      const id = message.messageId || `#${index}`;
      seen.add(id);
      let current = this.entries.get(id);
      const sig = signature(message);
      if (!current) {
        current = { ...entry(message, this.ctx), signature: sig };
        this.entries.set(id, current);
      } else if (current.signature !== sig) {
        if (current.card) current.card.update(message);
        else {
          const fresh = entry(message, this.ctx);
          current.node.replaceWith(fresh.node);
          current.node = fresh.node;
        }
        current.signature = sig;
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
  }
}

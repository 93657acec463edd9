// A minimal AG-UI chat page on the official client (@ag-ui/client 1.x HttpAgent), served by `agentturn dev` at
// /examples/agui.html. It shows what any AG-UI frontend gets from agentturn: streamed text, tool calls, and
// interrupts (forms and approvals) that survive a page reload. Built by web/src/build_examples.mjs.
import { HttpAgent } from "@ag-ui/client";

const params = new URLSearchParams(location.search);
const agentId = params.get("agent") || "support-agent";
const threadKey = `agui-thread:${agentId}`;
const threadId = params.get("thread") || localStorage.getItem(threadKey) || `agui-${crypto.randomUUID().slice(0, 8)}`;
localStorage.setItem(threadKey, threadId);

const $ = (id) => document.getElementById(id);
const agent = new HttpAgent({ url: `/ag-ui/${encodeURIComponent(agentId)}`, threadId });
const streaming = new Map();

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

function renderMessages() {
  const list = $("messages");
  list.replaceChildren();
  for (const message of agent.messages) {
    if (message.role === "user" || (message.role === "assistant" && message.content)) {
      list.append(el("li", { class: message.role, "data-role": message.role, text: message.content }));
    }
    for (const call of message.toolCalls ?? []) {
      list.append(el("li", { class: "call", text: `→ ${call.function.name}(${call.function.arguments})` }));
    }
    if (message.role === "tool") list.append(el("li", { class: "tool", text: `← ${message.content}` }));
  }
  for (const [id, text] of streaming) list.append(el("li", { class: "assistant streaming", "data-id": id, text }));
}

function field(name, schema, required) {
  const label = el("label", { text: `${schema.title ?? name}${required ? " *" : ""} ` });
  let input;
  if (Array.isArray(schema.enum)) {
    input = el("select", { name });
    input.append(el("option", { value: "", text: "—" }));
    schema.enum.forEach((value, n) =>
      input.append(el("option", { value: String(value), text: schema["x-enumNames"]?.[n] ?? String(value) })),
    );
  } else {
    input = el("input", { name, type: schema.type === "integer" || schema.type === "number" ? "number" : "text" });
  }
  input.dataset.type = schema.type ?? "string";
  label.append(input);
  return label;
}

function readForm(form) {
  const data = {};
  for (const input of form.querySelectorAll("input[name], select[name]")) {
    if (input.value === "") continue;
    data[input.name] = input.dataset.type === "integer" || input.dataset.type === "number" ? Number(input.value) : input.value;
  }
  return data;
}

// One answer per open interrupt; the run is sent once every card has one (AG-UI: resume covers them all).
const answers = new Map();

function renderInterrupts() {
  const box = $("interrupts");
  box.replaceChildren();
  for (const interrupt of agent.pendingInterrupts) {
    const card = el("form", { class: "card", "data-interrupt": interrupt.id, "data-reason": interrupt.reason });
    card.append(el("h3", { text: interrupt.message ?? interrupt.reason }));
    const answered = answers.get(interrupt.id);
    if (answered) {
      card.append(el("p", { class: "answered", text: `answered: ${answered.status}` }));
      box.append(card);
      continue;
    }
    if (interrupt.reason === "tool_call") {
      const args = el("textarea", { name: "editedArgs", rows: "3" });
      args.value = JSON.stringify(interrupt.metadata?.agentturn?.arguments ?? {});
      card.append(el("label", { text: "arguments " }, args));
      const approve = el("button", { type: "submit", value: "approve", text: "Approve" });
      const reject = el("button", { type: "submit", value: "reject", text: "Reject" });
      card.append(approve, reject);
      card.addEventListener("submit", (event) => {
        event.preventDefault();
        const edited = JSON.parse(args.value);
        const original = interrupt.metadata?.agentturn?.arguments ?? {};
        const payload =
          event.submitter?.value === "approve"
            ? JSON.stringify(edited) === JSON.stringify(original)
              ? { approved: true }
              : { approved: true, editedArgs: edited }
            : { approved: false, reason: "rejected in the AG-UI example" };
        answer(interrupt, { status: "resolved", payload });
      });
    } else {
      const schema = interrupt.responseSchema ?? { properties: {} };
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        card.append(field(name, property, (schema.required ?? []).includes(name)));
      }
      card.append(el("button", { type: "submit", value: "submit", text: "Submit" }));
      card.append(el("button", { type: "button", class: "decline", text: "Cancel" }));
      card.querySelector(".decline").addEventListener("click", () => answer(interrupt, { status: "cancelled" }));
      card.addEventListener("submit", (event) => {
        event.preventDefault();
        answer(interrupt, { status: "resolved", payload: readForm(card) });
      });
    }
    box.append(card);
  }
}

function answer(interrupt, response) {
  answers.set(interrupt.id, response);
  renderInterrupts();
  if (agent.pendingInterrupts.every((i) => answers.has(i.id))) {
    const resume = agent.pendingInterrupts.map((i) => ({ interruptId: i.id, ...answers.get(i.id) }));
    answers.clear();
    void runOnce({ resume });
  }
}

const subscriber = {
  onTextMessageStartEvent({ event }) {
    streaming.set(event.messageId, "");
    renderMessages();
  },
  onTextMessageContentEvent({ event }) {
    streaming.set(event.messageId, (streaming.get(event.messageId) ?? "") + event.delta);
    renderMessages();
  },
  onTextMessageEndEvent({ event }) {
    streaming.delete(event.messageId);
  },
  onMessagesChanged() {
    renderMessages();
  },
  onRunErrorEvent({ event }) {
    $("status").textContent = `error ${event.code}: ${event.message}`;
  },
};

async function runOnce(parameters = {}) {
  $("status").textContent = "running…";
  try {
    await agent.runAgent(parameters, subscriber);
    if (!$("status").textContent.startsWith("error")) {
      $("status").textContent = agent.pendingInterrupts.length ? "waiting for you" : "idle";
    }
  } catch (error) {
    $("status").textContent = `error: ${error.message}`;
  }
  streaming.clear();
  renderMessages();
  renderInterrupts();
}

$("thread").textContent = `${agentId} · thread ${threadId}`;
$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text) return;
  $("input").value = "";
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
  renderMessages();
  void runOnce();
});
$("new-thread").addEventListener("click", () => {
  localStorage.removeItem(threadKey);
  location.search = `?agent=${encodeURIComponent(agentId)}`;
});
// A reload asks the server for the thread as it stands: its messages and its open interrupts.
void runOnce();

// agentturn behind CopilotKit: CopilotKit's headless React hooks (@copilotkit/react-core/v2/headless: useAgent,
// useInterrupt) on an AG-UI HttpAgent pointed at `agentturn dev`. useInterrupt reads AG-UI's standard interrupts
// (RUN_FINISHED.outcome = {type: "interrupt", interrupts}) and answers them with one spec `resume` array once every
// open interrupt has its answer; agentturn keeps them durable, so a reload (a fresh run with no input) shows the
// same cards. Served at /examples/copilotkit.html; built by examples/copilotkit/build.mjs.
import { HttpAgent } from "@ag-ui/client";
import { CopilotKitAgentIdContext, CopilotKitContext, CopilotKitCoreReact, EMPTY_SET } from "@copilotkit/react-core/v2/context";
import { useAgent, useInterrupt } from "@copilotkit/react-core/v2/headless";
import React, { useEffect, useMemo, useRef, useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(location.search);
const agentName = params.get("agent") || "support-agent";
const threadKey = `copilotkit-thread:${agentName}`;
const threadId = params.get("thread") || localStorage.getItem(threadKey) || `ck-${crypto.randomUUID().slice(0, 8)}`;
localStorage.setItem(threadKey, threadId);
const AGENT_ID = "agentturn";

function Field({ name, schema, required }) {
  const label = `${schema.title ?? name}${required ? " *" : ""} `;
  if (Array.isArray(schema.enum)) {
    return (
      <label>
        {label}
        <select name={name} data-type={schema.type ?? "string"} defaultValue="">
          <option value="">—</option>
          {schema.enum.map((value, n) => (
            <option key={String(value)} value={String(value)}>
              {schema["x-enumNames"]?.[n] ?? String(value)}
            </option>
          ))}
        </select>
      </label>
    );
  }
  const numeric = schema.type === "integer" || schema.type === "number";
  return (
    <label>
      {label}
      <input name={name} type={numeric ? "number" : "text"} data-type={schema.type ?? "string"} />
    </label>
  );
}

function readForm(form) {
  const data = {};
  for (const input of form.querySelectorAll("input[name], select[name]")) {
    if (input.value === "") continue;
    const numeric = input.dataset.type === "integer" || input.dataset.type === "number";
    data[input.name] = numeric ? Number(input.value) : input.value;
  }
  return data;
}

function FormCard({ interrupt, resolve, cancel }) {
  const schema = interrupt.responseSchema ?? { properties: {} };
  return (
    <form
      className="card"
      data-interrupt={interrupt.id}
      data-reason={interrupt.reason}
      onSubmit={(event) => {
        event.preventDefault();
        void resolve(readForm(event.currentTarget), interrupt.id);
      }}
    >
      <h3>{interrupt.message ?? interrupt.reason}</h3>
      {Object.entries(schema.properties ?? {}).map(([name, property]) => (
        <Field key={name} name={name} schema={property} required={(schema.required ?? []).includes(name)} />
      ))}
      <button type="submit" value="submit">Submit</button>
      <button type="button" className="decline" onClick={() => void cancel(interrupt.id)}>Cancel</button>
    </form>
  );
}

function ApprovalCard({ interrupt, resolve }) {
  const original = interrupt.metadata?.agentturn?.arguments ?? {};
  const args = useRef(null);
  return (
    <form
      className="card"
      data-interrupt={interrupt.id}
      data-reason={interrupt.reason}
      onSubmit={(event) => {
        event.preventDefault();
        if (event.nativeEvent.submitter?.value !== "approve") {
          void resolve({ approved: false, reason: "rejected in the CopilotKit example" }, interrupt.id);
          return;
        }
        const edited = JSON.parse(args.current.value);
        const same = JSON.stringify(edited) === JSON.stringify(original);
        void resolve(same ? { approved: true } : { approved: true, editedArgs: edited }, interrupt.id);
      }}
    >
      <h3>{interrupt.message ?? interrupt.reason}</h3>
      <label>
        arguments <textarea name="editedArgs" rows="3" ref={args} defaultValue={JSON.stringify(original)} />
      </label>
      <button type="submit" value="approve">Approve</button>
      <button type="submit" value="reject">Reject</button>
    </form>
  );
}

function Interrupts({ interrupts, resolve, cancel }) {
  // Answers are collected per interrupt; CopilotKit sends the run (one resume array) once all are answered.
  const [answered, setAnswered] = useState({});
  const mark = (id, how) => setAnswered((current) => ({ ...current, [id]: how }));
  return (
    <section id="interrupts" aria-label="Waiting for you">
      {interrupts.map((interrupt) =>
        answered[interrupt.id] ? (
          <form className="card" key={interrupt.id} data-interrupt={interrupt.id} data-reason={interrupt.reason}>
            <h3>{interrupt.message ?? interrupt.reason}</h3>
            <p className="answered">answered: {answered[interrupt.id]}</p>
          </form>
        ) : interrupt.reason === "tool_call" ? (
          <ApprovalCard
            key={interrupt.id}
            interrupt={interrupt}
            resolve={(payload, id) => (mark(id, "resolved"), resolve(payload, id))}
          />
        ) : (
          <FormCard
            key={interrupt.id}
            interrupt={interrupt}
            resolve={(payload, id) => (mark(id, "resolved"), resolve(payload, id))}
            cancel={(id) => (mark(id, "cancelled"), cancel(id))}
          />
        ),
      )}
    </section>
  );
}

function Chat({ copilotkit }) {
  const { agent } = useAgent({ agentId: AGENT_ID });
  const [error, setError] = useState(null);
  const cards = useInterrupt({
    agentId: AGENT_ID,
    renderInChat: false,
    render: ({ interrupts, resolve, cancel }) => (
      <Interrupts key={interrupts.map((i) => i.id).join(",")} interrupts={interrupts} resolve={resolve} cancel={cancel} />
    ),
  });
  const run = async () => {
    setError(null);
    try {
      await copilotkit.runAgent({ agent });
    } catch (failure) {
      setError(failure.message ?? String(failure));
    }
  };
  useEffect(() => {
    const subscription = agent.subscribe({
      onRunErrorEvent: ({ event }) => setError(`${event.code}: ${event.message}`),
    });
    // A (re)load asks the server for the thread as it stands: its messages and its open interrupts.
    void run();
    return () => subscription.unsubscribe();
  }, [agent]);
  const status = error ? `error ${error}` : agent.isRunning ? "running…" : cards ? "waiting for you" : "idle";
  return (
    <main>
      <ol id="messages" aria-live="polite">
        {agent.messages.flatMap((message) => [
          ...(message.role === "user" || (message.role === "assistant" && message.content)
            ? [<li key={message.id} className={message.role}>{message.content}</li>]
            : []),
          ...(message.toolCalls ?? []).map((call) => (
            <li key={call.id} className="call">→ {call.function.name}({call.function.arguments})</li>
          )),
          ...(message.role === "tool" ? [<li key={message.id} className="tool">← {message.content}</li>] : []),
        ])}
      </ol>
      {cards ?? null}
      <p id="status" role="status">{status}</p>
      <form
        id="composer"
        onSubmit={(event) => {
          event.preventDefault();
          const input = event.currentTarget.elements.input;
          const text = input.value.trim();
          if (!text) return;
          input.value = "";
          agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
          void run();
        }}
      >
        <input id="input" name="input" autoComplete="off" placeholder="Message the agent" aria-label="Message" />
        <button type="submit">Send</button>
      </form>
    </main>
  );
}

function App() {
  const copilotkit = useMemo(() => {
    const agent = new HttpAgent({ url: `/ag-ui/${encodeURIComponent(agentName)}`, threadId });
    return new CopilotKitCoreReact({ agents__unsafe_dev_only: { [AGENT_ID]: agent }, deferInitialConnection: true });
  }, []);
  return (
    <CopilotKitContext.Provider value={{ copilotkit, executingToolCallIds: EMPTY_SET }}>
      <CopilotKitAgentIdContext.Provider value={AGENT_ID}>
        <header>
          <h1>CopilotKit example</h1>
          <p id="thread">{`${agentName} · thread ${threadId}`}</p>
        </header>
        <Chat copilotkit={copilotkit} />
      </CopilotKitAgentIdContext.Provider>
    </CopilotKitContext.Provider>
  );
}

createRoot(document.getElementById("root")).render(<App />);

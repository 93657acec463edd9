// The two kinds of UI card in a timeline: forms (agent_form) and tool approvals (agent_approval), written
// for the people who answer them: titles and descriptions from the form's schema (not the description the
// model was given), option labels instead of raw enum values, no form keys or turn ids, and half-typed
// answers kept across a reload (sessionStorage, per card).
// A card is {node, update(message)}; the timeline calls update when the card's status or version changes.
// Only a PENDING card holds a live form (rendered by the vendored library); every other state is text.

import { Attempt, isTransient, problemText, sendWithRetry } from "./api.js";
import { append, clear, el, jsonBlock, time } from "./dom.js";
import { Drafts } from "./drafts.js";
import { fieldLabel, labelOf, titleOf, uiSchemaFor, withTitles } from "./schema_text.js";

const STATUS_LABELS = {
  PENDING: "Waiting for you",
  SUBMITTED: "Submitted",
  DECLINED: "Declined",
  EXPIRED: "Expired",
  CANCELLED: "Cancelled",
  APPROVED: "Approved",
  REJECTED: "Rejected",
  RESPONDED: "Answered",
};

// A card's heading says what it is now: a question while it waits, what became of it afterwards.
const APPROVAL_HEADINGS = {
  PENDING: "Needs your decision",
  APPROVED: "Decided",
  REJECTED: "Decided",
  RESPONDED: "Decided",
  CANCELLED: "No longer needs a decision",
  EXPIRED: "No decision in time",
};

const FORM_STATES = {
  SUBMITTED: "Submitted",
  CANCELLED: "Cancelled: the agent stopped before this form was answered.",
  DECLINED: "Declined: the form was closed without an answer.",
  EXPIRED: "Expired: nobody answered before the deadline.",
};

/** A card several people answer waits for them, not for whoever reads it: its badge names them. */
function badge(status, waitingFor) {
  const label = status === "PENDING" && waitingFor ? "Waiting for others" : STATUS_LABELS[status];
  return el(
    "span",
    { class: `badge status-${String(status).toLowerCase()}`, "data-testid": "card-status", dataset: { status } },
    label || String(status).toLowerCase(),
  );
}

function schemaOf(message) {
  return message.schema && typeof message.schema === "object" ? message.schema : { type: "object" };
}

function cardHeader(kindLabel, status, waitingFor = null) {
  return el("header", { class: "card-header" }, el("span", { class: "card-kind" }, kindLabel), badge(status, waitingFor));
}

function errorList(problems, schema) {
  return el(
    "ul",
    { class: "card-errors", role: "alert", "data-testid": "card-errors" },
    problems.map((p) => el("li", {}, p.path && schema ? `${titleOf(schema, p.path)}: ` : null, p.message)),
  );
}

/** Values as a person reads them: field titles, option labels, yes/no. */
function valueList(values, schema, attributes) {
  const properties = schema?.properties || {};
  const keys = [...Object.keys(properties).filter((k) => k in values), ...Object.keys(values).filter((k) => !(k in properties))];
  return el(
    "dl",
    { class: "values", ...attributes },
    keys.map((key) => [el("dt", {}, fieldLabel(schema, key)), el("dd", { dataset: { field: key } }, labelOf(properties[key], values[key]))]),
  );
}

function submittedValues(message) {
  if (message.valuesRedacted) {
    return el("p", { class: "redacted", "data-testid": "values-redacted" }, "The answers are not kept (values redacted).");
  }
  return valueList(message.submittedValues || {}, schemaOf(message), { "data-testid": "submitted-values" });
}

function schemaHeading(schema) {
  return [
    schema.title ? el("h3", { class: "card-title" }, schema.title) : null,
    schema.description ? el("p", { class: "card-description" }, schema.description) : null,
  ];
}

function idPrefix(prefix, actionId) {
  return `${prefix}-${actionId}`.replace(/[^A-Za-z0-9_-]/g, "_");
}

export function formCard(initial, ctx) {
  const node = el("article", {
    class: "card form-card",
    "data-testid": "form-card",
    dataset: { messageId: initial.messageId },
  });
  let message = initial;
  let handle = null; // the mounted live form while PENDING
  let busy = false;
  let serverErrors = [];
  let unplaced = [];
  let note = null;
  const submitAttempt = new Attempt();
  const declineAttempt = new Attempt();
  const errorsHost = el("div", { class: "card-error-host" });
  const noteHost = el("p", { class: "card-note", role: "status" });
  const drafts = new Drafts(initial.turnId, initial.actionId);
  // Where the card is answered may word a refusal for its reader (the inbox: "no longer waits for you").
  const refusal = (result) => ctx.refusalText?.(result) || problemText(result);

  function showProblems() {
    clear(errorsHost);
    if (unplaced.length) errorsHost.append(errorList(unplaced, schemaOf(message)));
    noteHost.textContent = note || "";
  }

  async function submit(data) {
    serverErrors = [];
    unplaced = [];
    note = null;
    busy = true;
    handle?.update({ busy, serverErrors });
    showProblems();
    const caller = ctx.api.asCaller();
    const result = await sendWithRetry(submitAttempt, data, (key) =>
      caller.action(message.turnId, message.actionId, "submit", { data }, key),
    );
    busy = false;
    if (result.ok) {
      busy = true; // stays disabled until the card turns SUBMITTED in the timeline
      note = "Sent. The agent continues…";
      drafts.clear();
      ctx.onAction(message.turnId, "submitted");
    } else if (result.status === 422 && Array.isArray(result.problem?.errors)) {
      serverErrors = result.problem.errors;
      unplaced = window.AgentturnForms.toErrorSchema(schemaOf(message), serverErrors).unplaced;
      if (!unplaced.length && !serverErrors.length) note = problemText(result);
    } else {
      note = isTransient(result) ? `${problemText(result)} Send again to retry the same request.` : refusal(result);
      if (result.status === 409 || result.status === 404) ctx.onAction(message.turnId, "refused");
    }
    handle?.update({ busy, serverErrors });
    showProblems();
  }

  function declinePanel() {
    const reason = el("input", { type: "text", name: "declineReason", placeholder: "reason (optional)", maxlength: 2000 });
    const panel = el(
      "div",
      { class: "decline-panel", hidden: true },
      el("label", {}, "Why not? ", reason),
      el("button", { type: "button", class: "danger", onclick: () => decline(reason.value.trim() || null) }, "Decline form"),
      el("button", { type: "button", class: "secondary", onclick: () => (panel.hidden = true) }, "Keep the form"),
    );
    return panel;
  }

  async function decline(reason) {
    busy = true;
    note = null;
    handle?.update({ busy });
    const body = reason ? { reason } : {};
    const caller = ctx.api.asCaller();
    const result = await sendWithRetry(declineAttempt, body, (key) =>
      caller.action(message.turnId, message.actionId, "decline", body, key),
    );
    busy = result.ok;
    if (result.ok) {
      note = "Declined. The agent continues…";
      drafts.clear();
      ctx.onAction(message.turnId, "declined");
    } else if (result.status === 404 && result.problem?.type?.endsWith("/route-not-found")) {
      note = "This server does not support declining forms.";
    } else {
      note = refusal(result);
      if (result.status === 409 || result.status === 404) ctx.onAction(message.turnId, "refused");
    }
    handle?.update({ busy });
    showProblems();
  }

  function renderPending() {
    const host = el("div", { class: "form-host" });
    const panel = declinePanel();
    append(
      node,
      cardHeader("Please fill in", message.status),
      message.expiresAt ? el("p", { class: "card-deadline" }, "Answer before ", time(message.expiresAt)) : null,
      host,
      errorsHost,
      panel,
      noteHost,
    );
    if (!window.AgentturnForms) {
      host.append(el("p", { class: "card-errors" }, "The form library (vendor/forms.js) did not load."));
      return;
    }
    const schema = withTitles(schemaOf(message));
    handle = window.AgentturnForms.mount(host, {
      schema,
      uiSchema: uiSchemaFor(schema),
      formData: drafts.load() ?? {},
      idPrefix: idPrefix("f", message.actionId),
      noValidate: ctx.noValidate,
      busy,
      serverErrors,
      onChange: (data) => drafts.save(data),
      onSubmit: submit,
      onDecline: () => {
        panel.hidden = false;
        panel.querySelector("input").focus();
      },
    });
  }

  function renderReadOnly() {
    const schema = schemaOf(message);
    append(
      node,
      cardHeader("Form", message.status),
      schemaHeading(schema),
      message.status === "SUBMITTED" ? null : el("p", { class: "card-state" }, FORM_STATES[message.status] || message.status),
      message.status === "DECLINED" && message.declineReason ? el("p", { class: "card-reason" }, "Reason: ", message.declineReason) : null,
      message.status === "SUBMITTED" ? submittedValues(message) : null,
      el(
        "p",
        { class: "card-meta" },
        message.submittedBy ? ["by ", el("span", { class: "actor" }, message.submittedBy), " "] : null,
        message.submittedAt ? time(message.submittedAt) : null,
        message.status === "EXPIRED" && message.expiresAt ? ["deadline ", time(message.expiresAt)] : null,
      ),
    );
  }

  /** A form that names its answerers, seen in the conversation: it is filled in from their inbox ("Waiting
   * for you"), where the requester's conversation need not be readable; here it says for whom it waits. */
  function renderAssigned() {
    const schema = schemaOf(message);
    append(
      node,
      cardHeader("Form", message.status, message.people?.waitingFor),
      schemaHeading(schema),
      peopleView(message),
      el("p", { class: "card-hint" }, "They fill it in from their “Waiting for you” list."),
      message.expiresAt ? el("p", { class: "card-deadline" }, "Answer before ", time(message.expiresAt)) : null,
    );
  }

  function render() {
    handle?.unmount();
    handle = null;
    clear(node);
    node.dataset.status = message.status;
    if (message.status === "PENDING" && message.people && !ctx.answersHere) renderAssigned();
    else if (message.status === "PENDING") renderPending();
    else renderReadOnly();
    showProblems();
  }

  render();
  return {
    node,
    /** Unmounts the live form (the inbox's dialog closes; the timeline keeps its cards). */
    dispose() {
      handle?.unmount();
      handle = null;
    },
    update(next) {
      const wasPending = message.status === "PENDING";
      message = next;
      // A pending card whose version moved on but is still pending keeps the person's typing.
      if (wasPending && next.status === "PENDING") return;
      if (next.status !== "PENDING") drafts.clear();
      note = null;
      unplaced = [];
      render();
    },
  };
}

/** Original and edited arguments side by side, the changed fields marked. */
function argumentsView(message, parametersSchema) {
  const original = message.arguments || {};
  const edited = message.editedArguments;
  if (!edited) return valueList(original, parametersSchema, { "data-testid": "approval-fields" });
  const keys = [...new Set([...Object.keys(original), ...Object.keys(edited)])];
  const properties = parametersSchema?.properties || {};
  return el(
    "table",
    { class: "arguments-diff", "data-testid": "arguments-diff" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Field"), el("th", { scope: "col" }, "Asked for"), el("th", { scope: "col" }, "Approved with"))),
    el(
      "tbody",
      {},
      keys.map((key) => {
        const changed = JSON.stringify(original[key]) !== JSON.stringify(edited[key]);
        return el(
          "tr",
          { class: changed ? "changed" : null, dataset: { field: key } },
          el("th", { scope: "row" }, fieldLabel(parametersSchema, key)),
          el("td", { class: "original" }, labelOf(properties[key], original[key])),
          el("td", { class: "edited" }, labelOf(properties[key], edited[key]), changed ? el("span", { class: "changed-mark" }, " (changed)") : null),
        );
      }),
    ),
  );
}

const VERDICT_WORDS = { approve: "Approved by ", reject: "Rejected by ", answer: "Answered by " };

/** A card several people answer: for whom it still waits, and each person's decision so far. */
function peopleView(message) {
  const people = message.people;
  if (!people) return null;
  const decisions = people.decisions || [];
  return el(
    "div",
    { class: "card-people", "data-testid": "card-people" },
    message.status === "PENDING" && people.waitingFor ? el("p", { class: "card-state" }, people.waitingFor) : null,
    decisions.length
      ? el(
          "ul",
          { class: "card-decisions", "aria-label": "Decisions" },
          decisions.map((d) =>
            el(
              "li",
              {},
              VERDICT_WORDS[d.verdict] || "Decided by ",
              el("span", { class: "actor" }, d.subject),
              d.at ? [" ", time(d.at)] : null,
            ),
          ),
        )
      : null,
  );
}

export function approvalCard(initial, ctx) {
  const node = el("article", {
    class: "card approval-card",
    "data-testid": "approval-card",
    dataset: { messageId: initial.messageId },
  });
  let message = initial;
  let mode = "decide"; // decide | reject | edit | respond
  let handle = null;
  let busy = false;
  let reasonText = ""; // the reject reason survives a re-render of the card
  let extraHost = null; // where "Edit, then approve" and "Answer instead" go once they can be offered
  // The tool's parameter schema, once the turn named it: a decided card still labels its fields by their titles.
  let knownSchema = null;
  let argumentsNode = null; // the fields as shown, relabelled in place when the schema comes
  const attempts = { approve: new Attempt(), reject: new Attempt(), respond: new Attempt() };
  const noteHost = el("p", { class: "card-note", role: "status" });
  const drafts = new Drafts(initial.turnId, `${initial.actionId}:edit`);
  const respondDrafts = new Drafts(initial.turnId, `${initial.actionId}:respond`);
  const info = () => ctx.pendingAction?.(message.actionId) || null;

  async function act(kind, body, { done }) {
    busy = true;
    noteHost.textContent = "";
    node.querySelectorAll("button").forEach((b) => (b.disabled = true));
    handle?.update({ busy: true });
    const caller = ctx.api.asCaller();
    const result = await sendWithRetry(attempts[kind], body, (key) => caller.action(message.turnId, message.actionId, kind, body, key));
    if (result.ok) {
      noteHost.textContent = done;
      drafts.clear();
      respondDrafts.clear();
      ctx.onAction(message.turnId);
      return;
    }
    busy = false;
    node.querySelectorAll("button").forEach((b) => (b.disabled = false));
    handle?.update({ busy: false, serverErrors: result.status === 422 ? result.problem?.errors || [] : [] });
    noteHost.textContent =
      result.status === 404 && result.problem?.type?.endsWith("/route-not-found")
        ? "This server does not support that answer."
        : problemText(result);
    if (result.status === 409) ctx.onAction(message.turnId);
  }

  function withFingerprint(body) {
    const fingerprint = info()?.argumentsFingerprint ?? message.argumentsFingerprint;
    return fingerprint ? { ...body, argumentsFingerprint: fingerprint } : body;
  }

  function decideControls() {
    const approve = el("button", { type: "button", class: "primary" }, "Approve");
    const reject = el("button", { type: "button", class: "danger" }, "Reject");
    approve.addEventListener("click", () => act("approve", withFingerprint({}), { done: "Approved. The agent continues…" }));
    // Rejecting asks for a reason only once the person chose to reject (the box is not open on every card).
    reject.addEventListener("click", () => switchTo("reject"));
    const more = el("span", { class: "more-actions" });
    extraHost = more;
    offerMore();
    return el("div", { class: "form-actions decide-actions" }, el("span", { class: "main-actions" }, approve, reject), more);
  }

  function rejectControls() {
    const reasonId = idPrefix("reason", message.actionId);
    const reason = el("input", { type: "text", id: reasonId, name: "reason", maxlength: 2000 });
    reason.value = reasonText;
    reason.addEventListener("input", () => (reasonText = reason.value));
    const send = () => {
      const text = reason.value.trim();
      act("reject", text ? { reason: text } : {}, { done: "Rejected. The agent continues…" });
    };
    reason.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.isComposing) {
        event.preventDefault();
        send();
      }
    });
    queueMicrotask(() => reason.focus());
    return el(
      "div",
      { class: "reject-panel", "data-testid": "reject-panel" },
      el("label", { class: "reason-label", for: reasonId }, "Why not? The agent reads your reason (optional)."),
      reason,
      el(
        "div",
        { class: "form-actions" },
        el("button", { type: "button", class: "danger", onclick: send }, "Reject"),
        el("button", { type: "button", class: "secondary", onclick: () => switchTo("decide") }, "Back"),
      ),
    );
  }

  /** Editing and answering need the pending action's parameter schema (from the turn, which may come later
   * than the card): the buttons are added in place, so nothing the person typed or focused is rebuilt. */
  function offerMore() {
    if (!extraHost || extraHost.dataset.more || !info()?.parametersSchema) return;
    if (!knownSchema && argumentsNode) {
      // The fields were labelled before the schema came (keys made readable): now by their titles, in place.
      knownSchema = info().parametersSchema;
      const labelled = argumentsView(message, knownSchema);
      argumentsNode.replaceWith(labelled);
      argumentsNode = labelled;
    }
    knownSchema = info().parametersSchema;
    extraHost.dataset.more = "1";
    node.dataset.canEdit = "1";
    extraHost.append(
      el("button", { type: "button", class: "secondary", onclick: () => switchTo("edit") }, "Edit, then approve"),
      el("button", { type: "button", class: "secondary", onclick: () => switchTo("respond") }, "Answer instead"),
    );
  }

  function editControls() {
    const host = el("div", { class: "form-host" });
    const schema = withTitles(info()?.parametersSchema || { type: "object" });
    queueMicrotask(() => {
      if (!window.AgentturnForms || mode !== "edit") return;
      handle = window.AgentturnForms.mount(host, {
        schema,
        uiSchema: uiSchemaFor(schema),
        formData: drafts.load() ?? message.arguments ?? {},
        idPrefix: idPrefix("edit", message.actionId),
        noValidate: ctx.noValidate,
        busy,
        serverErrors: [],
        submitLabel: "Approve with these values",
        declineLabel: "Back",
        onChange: (data) => drafts.save(data),
        onSubmit: (data) => act("approve", withFingerprint({ arguments: data }), { done: "Approved with your changes. The agent continues…" }),
        onDecline: () => switchTo("decide"),
      });
    });
    return [el("p", { class: "card-hint" }, "Change what the agent will use, then approve."), host];
  }

  function respondControls() {
    const id = idPrefix("respond", message.actionId);
    const box = el("textarea", { id, name: "content", rows: 3, maxlength: 20000, required: true });
    box.value = respondDrafts.load() ?? "";
    box.addEventListener("input", () => respondDrafts.save(box.value));
    const send = el("button", { type: "submit", class: "primary" }, "Send answer");
    const back = el("button", { type: "button", class: "secondary", onclick: () => switchTo("decide") }, "Back");
    const form = el(
      "form",
      { class: "respond-form", "data-testid": "respond-form" },
      el("label", { for: id }, "Your answer (the agent gets it instead of running the tool)"),
      box,
      el("div", { class: "form-actions" }, send, back),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const content = box.value.trim();
      if (!content) {
        noteHost.textContent = "Write an answer first.";
        box.focus();
        return;
      }
      act("respond", { content }, { done: "Answer sent. The agent continues…" });
    });
    queueMicrotask(() => box.focus());
    return form;
  }

  function switchTo(next) {
    mode = next;
    render();
  }

  function render() {
    handle?.unmount();
    handle = null;
    extraHost = null;
    clear(node);
    node.dataset.status = message.status;
    const pending = info();
    if (pending?.parametersSchema) knownSchema = pending.parametersSchema;
    const question = message.message || "The agent asks to go ahead with this action.";
    append(
      node,
      cardHeader(APPROVAL_HEADINGS[message.status] || "Decision", message.status),
      el("p", { class: "card-question" }, question),
      (argumentsNode = argumentsView(message, knownSchema)),
      peopleView(message),
      el(
        "details",
        { class: "technical" },
        el("summary", {}, "Technical details"),
        el("p", {}, "Tool ", el("code", {}, message.toolName)),
        jsonBlock(message.arguments || {}, { "data-testid": "approval-arguments" }),
      ),
    );
    if (message.status === "PENDING") {
      if (mode === "edit" && pending?.parametersSchema) append(node, editControls());
      else if (mode === "respond") append(node, respondControls());
      else if (mode === "reject") append(node, rejectControls());
      else append(node, decideControls());
      append(node, noteHost);
    } else {
      const answer = message.response ?? message.responseContent ?? null;
      append(
        node,
        typeof answer === "string" ? el("p", { class: "card-reason" }, "Answered instead: ", answer) : null,
        el(
          "p",
          { class: "card-meta" },
          message.decidedBy ? ["by ", el("span", { class: "actor" }, message.decidedBy), " "] : null,
          message.decidedAt ? time(message.decidedAt) : null,
        ),
        message.reason ? el("p", { class: "card-reason" }, "Reason: ", message.reason) : null,
      );
    }
  }

  render();
  return {
    node,
    update(next) {
      const wasPending = message.status === "PENDING";
      message = next;
      if (wasPending && next.status === "PENDING" && mode !== "decide") return; // keep the person's editing
      if (next.status !== "PENDING") {
        drafts.clear();
        respondDrafts.clear();
        mode = "decide";
      }
      render();
    },
    /** The turn's pending actions arrived or changed: editing and answering may now be offered. */
    refreshPending() {
      if (message.status === "PENDING" && mode === "decide" && !busy) offerMore();
    },
  };
}

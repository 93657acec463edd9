// The two kinds of UI card in a timeline: forms (agent_form) and tool approvals (agent_approval).
// A card is {node, update(message)}; the timeline calls update when the card's status or version changes.
// Only a PENDING form holds a live form (rendered by the vendored library); every other state is text.

import { Attempt, isTransient, problemText, sendWithRetry } from "./api.js";
import { append, clear, el, jsonBlock, time } from "./dom.js";

const FORM_STATES = {
  SUBMITTED: "Submitted",
  CANCELLED: "Cancelled: the turn ended before this form was answered.",
  DECLINED: "Declined: the form was closed without an answer.",
  EXPIRED: "Expired: nobody answered before the deadline.",
};

function badge(status) {
  return el("span", { class: `badge status-${String(status).toLowerCase()}`, "data-testid": "card-status" }, status);
}

function formatValue(value) {
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (value === null || value === undefined) return "—";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function schemaOf(message) {
  return message.schema && typeof message.schema === "object" ? message.schema : { type: "object" };
}

function cardHeader(kindLabel, key, status) {
  return el("header", { class: "card-header" }, el("span", { class: "card-kind" }, kindLabel), el("code", {}, key), badge(status));
}

function errorList(problems) {
  return el(
    "ul",
    { class: "card-errors", role: "alert", "data-testid": "card-errors" },
    problems.map((p) => el("li", {}, p.path ? el("code", {}, p.path) : null, p.path ? " " : null, p.message)),
  );
}

/** Read-only submitted values, labelled with the schema's field titles (as text). */
function submittedValues(message) {
  if (message.valuesRedacted) {
    return el("p", { class: "redacted", "data-testid": "values-redacted" }, "values redacted (the agent keeps no copy)");
  }
  const values = message.submittedValues || {};
  const properties = schemaOf(message).properties || {};
  const keys = [...Object.keys(properties).filter((k) => k in values), ...Object.keys(values).filter((k) => !(k in properties))];
  return el(
    "dl",
    { class: "values", "data-testid": "submitted-values" },
    keys.map((key) => [
      el("dt", {}, properties[key]?.title || key),
      el("dd", { dataset: { field: key } }, formatValue(values[key])),
    ]),
  );
}

export function formCard(initial, ctx) {
  const node = el("article", {
    class: "card form-card",
    "data-testid": "form-card",
    dataset: { messageId: initial.messageId, formKey: initial.formKey },
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

  function showProblems() {
    clear(errorsHost);
    if (unplaced.length) errorsHost.append(errorList(unplaced));
    noteHost.textContent = note || "";
  }

  async function submit(data) {
    serverErrors = [];
    unplaced = [];
    note = null;
    busy = true;
    handle?.update({ busy, serverErrors });
    showProblems();
    const result = await sendWithRetry(submitAttempt, data, (key) =>
      ctx.api.action(message.turnId, message.actionId, "submit", { data }, key),
    );
    busy = false;
    if (result.ok) {
      busy = true; // stays disabled until the card turns SUBMITTED in the timeline
      note = "Submitted; the agent continues…";
      ctx.onAction(message.turnId);
    } else if (result.status === 422 && Array.isArray(result.problem?.errors)) {
      serverErrors = result.problem.errors;
      unplaced = window.AgentturnForms.toErrorSchema(schemaOf(message), serverErrors).unplaced;
      if (!unplaced.length && !serverErrors.length) note = problemText(result);
    } else {
      note = isTransient(result) ? `${problemText(result)} Submit again to retry the same request.` : problemText(result);
      if (result.status === 409 || result.status === 404) ctx.onAction(message.turnId);
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
    const result = await sendWithRetry(declineAttempt, body, (key) =>
      ctx.api.action(message.turnId, message.actionId, "decline", body, key),
    );
    busy = result.ok;
    if (result.ok) {
      note = "Declined; the agent continues…";
      ctx.onAction(message.turnId);
    } else if (result.status === 404 && result.problem?.type?.endsWith("/route-not-found")) {
      note = "This server does not support declining forms.";
    } else {
      note = problemText(result);
      if (result.status === 409) ctx.onAction(message.turnId);
    }
    handle?.update({ busy });
    showProblems();
  }

  function renderPending() {
    const host = el("div", { class: "form-host" });
    const panel = declinePanel();
    append(node, 
      cardHeader("Form", message.formKey, message.status),
      message.description ? el("p", { class: "card-description" }, message.description) : null,
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
    handle = window.AgentturnForms.mount(host, {
      schema: schemaOf(message),
      formData: {},
      idPrefix: `f-${message.actionId}`.replace(/[^A-Za-z0-9_-]/g, "_"),
      noValidate: ctx.noValidate,
      busy,
      serverErrors,
      onSubmit: submit,
      onDecline: () => {
        panel.hidden = false;
        panel.querySelector("input").focus();
      },
    });
  }

  function renderReadOnly() {
    const schema = schemaOf(message);
    const state = FORM_STATES[message.status] || message.status;
    append(node, 
      cardHeader("Form", message.formKey, message.status),
      schema.title ? el("h3", { class: "card-title" }, schema.title) : null,
      message.description ? el("p", { class: "card-description" }, message.description) : null,
      el("p", { class: "card-state" }, state),
      message.status === "DECLINED" && message.declineReason
        ? el("p", { class: "card-reason" }, "Reason: ", message.declineReason)
        : null,
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

  function render() {
    handle?.unmount();
    handle = null;
    clear(node);
    node.dataset.status = message.status;
    if (message.status === "PENDING") renderPending();
    else renderReadOnly();
    showProblems();
  }

  render();
  return {
    node,
    update(next) {
      const wasPending = message.status === "PENDING";
      message = next;
      // A pending card whose version moved on but is still pending keeps the person's typing.
      if (wasPending && next.status === "PENDING") return;
      note = null;
      unplaced = [];
      render();
    },
  };
}

export function approvalCard(initial, ctx) {
  const node = el("article", {
    class: "card approval-card",
    "data-testid": "approval-card",
    dataset: { messageId: initial.messageId, toolName: initial.toolName },
  });
  let message = initial;
  const attempts = { approve: new Attempt(), reject: new Attempt() };
  const noteHost = el("p", { class: "card-note", role: "status" });

  async function decide(kind, reasonInput, buttons) {
    const reason = reasonInput.value.trim();
    const body = kind === "reject" && reason ? { reason } : {};
    buttons.forEach((b) => (b.disabled = true));
    noteHost.textContent = "";
    const result = await sendWithRetry(attempts[kind], body, (key) =>
      ctx.api.action(message.turnId, message.actionId, kind, body, key),
    );
    if (result.ok) {
      noteHost.textContent = kind === "approve" ? "Approved; the agent continues…" : "Rejected; the agent continues…";
      ctx.onAction(message.turnId);
      return;
    }
    buttons.forEach((b) => (b.disabled = false));
    noteHost.textContent = problemText(result);
    if (result.status === 409) ctx.onAction(message.turnId);
  }

  function render() {
    clear(node);
    node.dataset.status = message.status;
    append(node, 
      cardHeader("Approval", message.toolName, message.status),
      message.message ? el("p", { class: "card-description" }, message.message) : null,
      el("p", { class: "card-label" }, "Arguments"),
      jsonBlock(message.arguments || {}, { "data-testid": "approval-arguments" }),
    );
    if (message.status === "PENDING") {
      const reason = el("input", { type: "text", name: "reason", placeholder: "reason (sent to the agent if you reject)", maxlength: 2000 });
      const approve = el("button", { type: "button", class: "primary" }, "Approve");
      const reject = el("button", { type: "button", class: "danger" }, "Reject");
      approve.addEventListener("click", () => decide("approve", reason, [approve, reject]));
      reject.addEventListener("click", () => decide("reject", reason, [approve, reject]));
      append(node, el("div", { class: "form-actions" }, approve, reject, reason), noteHost);
    } else {
      append(node, 
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
      message = next;
      render();
    },
  };
}

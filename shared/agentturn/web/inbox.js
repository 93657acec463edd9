// The inbox: what waits for the signed-in person across conversations (GET /inbox), theirs and other people's.
// An approver cannot open another person's conversation, so a card from one is answered here: the inbox item
// carries the card (the tool and its arguments, or the form's frozen schema); the approve/reject buttons post
// to the card's turn, and a form opens in a dialog (inbox_form.js) that posts its submit or decline there.
import { Attempt, problemText } from "./api.js";
import { el, clear, jsonBlock, time } from "./dom.js";
import { InboxForm } from "./inbox_form.js";

export class Inbox {
  /**
   * @param {{api: import("./api.js").Api, list: HTMLElement, count: HTMLElement, status: HTMLElement,
   *   heading: HTMLElement, noValidate?: boolean}} parts
   */
  constructor({ api, list, count, status, heading, noValidate = false }) {
    this.api = api;
    this.list = list;
    this.count = count;
    this.status = status;
    this.heading = heading;
    this.attempts = new Map();
    this.form = new InboxForm({
      api,
      noValidate,
      onAnswered: (item, done) => {
        this.status.textContent = `${done}: ${item.cardTitle}`;
        this.refresh();
      },
      onRefused: () => this.refresh(),
      onClose: (item) => this.focusAfter(item),
    });
  }

  /** One GET /inbox: the items and the "waiting for you" count (one page's worth: "50+" beyond it). */
  async refresh() {
    const result = await this.api.request("GET", "/inbox?limit=50");
    if (!result.ok || !result.body) return;
    const items = result.body.items || [];
    const more = Boolean(result.body.nextCursor);
    this.count.textContent = items.length ? `${items.length}${more ? "+" : ""}` : "";
    this.count.hidden = items.length === 0;
    // An empty list under its heading reads as "these are waiting": it says so instead.
    document.getElementById("inbox-empty").hidden = items.length > 0;
    clear(this.list).append(...items.map((item) => this.item(item)));
    if (this.form.item && !items.some((item) => this.form.shows(this.form.key(item)))) this.form.noLongerListed();
  }

  /** Where the focus goes when the form's dialog closes: back to its entry, or (answered: gone) the heading. */
  focusAfter(item) {
    const entry = [...this.list.querySelectorAll(".inbox-item")].find(
      (node) => node.dataset.turnId === item.turnId && node.dataset.actionId === item.actionId,
    );
    const target = entry?.querySelector("button") || this.heading;
    if (target === this.heading) this.heading.tabIndex = -1;
    target.focus();
  }

  item(item) {
    const key = `${item.turnId}/${item.actionId}`;
    const card = item.card || {};
    const approval = item.type === "agent_approval";
    const form = item.type === "agent_form";
    const titleId = `inbox-title-${key}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const decide = (kind) => async (event) => {
      const buttons = event.currentTarget.parentElement.querySelectorAll("button");
      buttons.forEach((b) => (b.disabled = true));
      const body = kind === "reject" ? { reason: "rejected from the inbox" } : {};
      const attempt = this.attempts.get(`${key}/${kind}`) || new Attempt();
      this.attempts.set(`${key}/${kind}`, attempt);
      const answer = await this.api.action(item.turnId, item.actionId, kind, body, attempt.keyFor(body));
      this.status.textContent = answer.ok
        ? `${kind === "approve" ? "Approved" : "Rejected"}: ${item.cardTitle}`
        : problemText(answer);
      await this.refresh();
    };
    return el(
      "li",
      { class: "inbox-item", dataset: { testid: "inbox-item", turnId: item.turnId, actionId: item.actionId } },
      el("p", { class: "inbox-title", id: titleId }, el("strong", {}, item.cardTitle), " · ", item.title || item.conversationId),
      el(
        "p",
        { class: "inbox-meta" },
        item.requestedBy ? `asked by ${item.requestedBy}` : null,
        item.since ? [" · since ", time(item.since)] : null,
        item.deadline ? [" · until ", time(item.deadline)] : null,
      ),
      item.waitingFor ? el("p", { class: "inbox-waiting", dataset: { testid: "inbox-waiting" } }, item.waitingFor) : null,
      approval && card.arguments ? jsonBlock(card.arguments, { "aria-label": "Arguments" }) : null,
      approval
        ? el(
            "div",
            { class: "inbox-actions" },
            el("button", { type: "button", class: "primary", onclick: decide("approve") }, "Approve"),
            el("button", { type: "button", class: "secondary", onclick: decide("reject") }, "Reject"),
          )
        : null,
      form
        ? el(
            "div",
            { class: "inbox-actions" },
            el(
              "button",
              { type: "button", class: "primary", "aria-describedby": titleId, "aria-haspopup": "dialog", onclick: () => this.form.open(item) },
              "Fill in",
            ),
          )
        : null,
    );
  }
}

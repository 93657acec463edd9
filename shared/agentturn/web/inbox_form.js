// A form card from the inbox, filled in where it is listed: an approver may not read the requester's
// conversation, so the form opens in a dialog over the page (the whole screen on a phone). The form inside is the
// timeline's own form card (cards.js: the same renderer, validation, drafts, decline and refusals), built from the
// card GET /inbox returned — the schema the server froze when the form was asked for.
import { formCard } from "./cards.js";
import { el, time } from "./dom.js";

const ANSWERED = { submitted: "Submitted", declined: "Declined" };
const FOCUS_FRAMES = 120; // about two seconds at 60 frames a second
// A card its answerer may no longer answer is a 404 like one that never existed (no existence leak): for the
// person who just had it open, it means it left their inbox.
const GONE = "This form no longer waits for you: someone else answered it, it expired, or it moved to other people.";

export class InboxForm {
  /**
   * @param {{api: import("./api.js").Api, noValidate: boolean,
   *   onAnswered: (item: object, outcome: string) => void, onRefused: (item: object) => void,
   *   onClose: (item: object) => void}} parts
   */
  constructor({ api, noValidate, onAnswered, onRefused, onClose }) {
    this.api = api;
    this.noValidate = noValidate;
    this.onAnswered = onAnswered;
    this.onRefused = onRefused;
    this.onClose = onClose;
    this.item = null;
    this.card = null;
    this.heading = el("h2", { id: "inbox-form-heading", class: "inbox-form-heading" });
    this.about = el("div", { class: "inbox-form-about" });
    this.gone = el("p", { class: "inbox-form-gone", role: "status" });
    this.body = el("div", { class: "inbox-form-body" });
    const close = el("button", { type: "button", class: "secondary small", onclick: () => this.close() }, "Close");
    this.dialog = el(
      "dialog",
      { class: "inbox-form", "aria-labelledby": "inbox-form-heading", "data-testid": "inbox-form" },
      el("header", { class: "inbox-form-head" }, this.heading, close),
      this.about,
      this.gone,
      this.body,
    );
    // Escape closes a modal dialog natively; the "close" event covers that and close() alike.
    this.dialog.addEventListener("close", () => this.closed());
    // Escape is the dialog's own (it closes it): not also the page's, which would close the list behind it.
    this.dialog.addEventListener("keydown", (event) => {
      if (event.key === "Escape") event.stopPropagation();
    });
    document.body.append(this.dialog);
  }

  /** Whether the dialog shows the card with this inbox key. */
  shows(key) {
    return Boolean(this.item && this.dialog.open && this.key(this.item) === key);
  }

  key(item) {
    return `${item.turnId}/${item.actionId}`;
  }

  open(item) {
    // Only the inbox's buttons open it, and a modal dialog makes them inert while it is open.
    if (this.dialog.open) return;
    this.item = item;
    const card = item.card || {};
    // The form's own title heads the form below; the dialog says whose request it answers.
    this.heading.textContent = item.requestedBy ? `A form from ${item.requestedBy}` : "A form waiting for you";
    this.about.replaceChildren(
      el(
        "p",
        { class: "inbox-meta" },
        item.requestedBy ? `asked by ${item.requestedBy}` : null,
        item.since ? [" · since ", time(item.since)] : null,
      ),
      item.title ? el("p", { class: "inbox-form-title" }, "About: ", item.title) : null,
    );
    this.gone.textContent = "";
    // The card as the timeline draws it, answered here: the same form, checks and answers (ctx.answersHere).
    this.card = formCard(card, {
      api: this.api,
      noValidate: this.noValidate,
      answersHere: true,
      refusalText: (result) => (result.status === 404 ? GONE : null),
      onAction: (turnId, outcome) => this.acted(item, outcome),
    });
    this.body.replaceChildren(this.card.node);
    this.dialog.showModal();
    this.focusFirstField(document.activeElement, FOCUS_FRAMES);
  }

  /** The first field, so a keyboard (or a phone's) user types at once. The form library renders when React's
   * scheduler gets to it (later on a busy device): looked for on each frame, a bounded number of times, and only
   * while the focus is still where showModal put it (nobody moved it meanwhile). */
  focusFirstField(start, frames) {
    if (!this.dialog.open || document.activeElement !== start) return;
    const field = this.body.querySelector(".form-host input, .form-host select, .form-host textarea");
    if (field) field.focus();
    else if (frames > 0) requestAnimationFrame(() => this.focusFirstField(start, frames - 1));
  }

  acted(item, outcome) {
    if (item !== this.item) return;
    if (ANSWERED[outcome]) {
      this.close();
      this.onAnswered(item, ANSWERED[outcome]);
    } else this.onRefused(item); // the card says why; the form and what was typed stay
  }

  /** The inbox no longer lists the open card (answered by someone else, expired, moved to another group). */
  noLongerListed() {
    if (this.dialog.open) {
      this.gone.textContent = "No longer in your list. What you typed stays here until you close this form.";
    }
  }

  close() {
    if (this.dialog.open) this.dialog.close();
    else this.closed();
  }

  closed() {
    this.card?.dispose();
    this.card = null;
    const item = this.item;
    this.item = null;
    this.body.replaceChildren();
    if (item) this.onClose(item);
  }
}

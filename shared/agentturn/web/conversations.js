// The conversations list (GET /conversations): the caller's conversations, newest activity first, paged by
// the server's opaque cursor. Each entry is a link to `#c=<id>`, so opening one is ordinary navigation: the
// browser's back and forward buttons go through the conversations a person opened.

import { el } from "./dom.js";

export function conversationHref(id) {
  return `#c=${encodeURIComponent(id)}`;
}

/** "14:05" today, "Mon 14:05" this week, a date before: short enough for the list, exact in the tooltip. */
function when(iso) {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return null;
  const now = new Date();
  const sameDay = date.toDateString() === now.toDateString();
  const withinWeek = now - date < 6 * 24 * 3600 * 1000;
  const clock = { hour: "2-digit", minute: "2-digit" };
  const text = sameDay
    ? date.toLocaleTimeString([], clock)
    : withinWeek
      ? date.toLocaleString([], { weekday: "short", ...clock })
      : date.toLocaleDateString();
  return el("time", { datetime: iso, title: date.toLocaleString() }, text);
}

export class ConversationList {
  constructor({ api, list, empty, more, onTitle }) {
    this.api = api;
    this.list = list;
    this.empty = empty;
    this.more = more;
    this.onTitle = onTitle || (() => {});
    this.entries = [];
    this.cursor = null;
    this.activeId = null;
    this.unsupported = false;
    this.generation = 0;
    more.addEventListener("click", () => this.loadMore());
  }

  /** Reloads the first page (after a turn started or settled: titles and order may have changed). */
  async refresh() {
    if (this.unsupported) return;
    const generation = ++this.generation;
    const result = await this.api.conversations();
    if (generation !== this.generation) return;
    if (result.status === 404 || result.status === 405) {
      // A server without the list (an older deployment): the rest of the console works without it.
      this.unsupported = true;
      this.empty.textContent = "This server does not list conversations.";
      this.empty.hidden = false;
      return;
    }
    if (!result.ok) return; // keep what is shown; the next refresh tries again
    this.entries = result.body?.conversations || [];
    this.cursor = result.body?.nextCursor || null;
    this.render();
  }

  async loadMore() {
    if (!this.cursor) return;
    this.more.disabled = true;
    const generation = this.generation;
    const result = await this.api.conversations(30, this.cursor);
    this.more.disabled = false;
    // A refresh meanwhile (another user, a turn started) replaced the list this page continued.
    if (!result.ok || generation !== this.generation) return;
    const known = new Set(this.entries.map((e) => e.conversationId));
    this.entries.push(...(result.body?.conversations || []).filter((e) => !known.has(e.conversationId)));
    this.cursor = result.body?.nextCursor || null;
    this.render();
  }

  setActive(id) {
    this.activeId = id;
    this.render();
  }

  titleOf(id) {
    return this.entries.find((e) => e.conversationId === id)?.title || null;
  }

  render() {
    const items = this.entries.map((entry) =>
      el(
        "li",
        {},
        el(
          "a",
          {
            href: conversationHref(entry.conversationId),
            class: "conversation-link",
            "aria-current": entry.conversationId === this.activeId ? "page" : null,
            dataset: { conversationId: entry.conversationId },
          },
          el("span", { class: "conversation-name" }, entry.title || "Untitled conversation"),
          el("span", { class: "conversation-when" }, when(entry.lastActivityAt)),
        ),
      ),
    );
    if (this.activeId && !this.entries.some((e) => e.conversationId === this.activeId)) {
      // The conversation being written is listed once its first turn started; until then it is "new".
      items.unshift(
        el(
          "li",
          {},
          el(
            "a",
            { href: conversationHref(this.activeId), class: "conversation-link", "aria-current": "page" },
            el("span", { class: "conversation-name" }, "New conversation"),
          ),
        ),
      );
    }
    this.list.replaceChildren(...items);
    if (!this.unsupported) this.empty.hidden = items.length > 0;
    this.more.hidden = !this.cursor;
    this.onTitle(this.titleOf(this.activeId));
  }
}

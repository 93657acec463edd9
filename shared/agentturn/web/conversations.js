// The conversations list (GET /conversations): the caller's conversations, newest activity first, paged by
// the server's opaque cursor. Each entry is a link to `#c=<id>`, so opening one is ordinary navigation: the
// browser's back and forward buttons go through the conversations a person opened.

import { el } from "./dom.js";

export function conversationHref(id) {
  return `#c=${encodeURIComponent(id)}`;
}

/** When, with its day: "Today, 14:05", "Yesterday, 09:12", "3 Dec, 14:05", "3 Dec 2025" (a time alone does not
 * say which day it was); exact in the tooltip. */
export function when(iso, now = new Date()) {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return null;
  const clock = date.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
  const yesterday = new Date(now);
  yesterday.setDate(now.getDate() - 1);
  let text;
  if (date.toDateString() === now.toDateString()) text = `Today, ${clock}`;
  else if (date.toDateString() === yesterday.toDateString()) text = `Yesterday, ${clock}`;
  else if (date.getFullYear() === now.getFullYear()) {
    text = `${date.toLocaleDateString([], { day: "numeric", month: "short" })}, ${clock}`;
  } else text = date.toLocaleDateString([], { day: "numeric", month: "short", year: "numeric" });
  return el("time", { datetime: iso, title: date.toLocaleString() }, text);
}

/** How many of the newest conversations are checked for a turn that waits for the person (one read each). */
const CHECKED = 10;

const WAITING_LABELS = { you: "Waiting for you", others: "Waiting for others" };

/** For whom a waiting turn's pending cards wait, given for each card whether it names other answerers:
 * "you" when any answer is the person's own, "others" when every one is someone else's, null when none waits. */
function waitingOn(namesOthers) {
  if (!namesOthers.length) return null;
  return namesOthers.every(Boolean) ? "others" : "you";
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
    // conversationId -> "you" when its turn waits for the person, "others" when every answer it waits for is
    // other people's (cards that name their answerers: the person has nothing to do there)
    this.waiting = new Map();
    this.held = null; // while set (a promise), the background checks wait: a person's request goes first
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
    await this.checkWaiting(generation);
  }

  /** Marks the newest conversations whose turn waits for the person: the list has no such field, so each is
   * read once (its latest entries) per refresh, a few at a time. */
  async checkWaiting(generation) {
    const ids = this.entries.slice(0, CHECKED).map((e) => e.conversationId);
    await Promise.all(
      [0, 1, 2].map(async (lane) => {
        for (let i = lane; i < ids.length; i += 3) {
          while (this.held) await this.held;
          if (generation !== this.generation) return;
          const read = await this.api.messages(ids[i], 20);
          if (generation !== this.generation) return;
          if (!read.ok) continue;
          const active = read.body?.activeTurnId;
          const pending = (read.body?.messages || []).filter(
            (m) => (m.type === "agent_form" || m.type === "agent_approval") && m.status === "PENDING" && m.turnId === active,
          );
          const waits = waitingOn(pending.map((m) => Boolean(m.people?.waitingFor)));
          if (waits !== (this.waiting.get(ids[i]) || null)) {
            this.waiting.set(ids[i], waits);
            this.render();
          }
        }
      }),
    );
  }

  /** The background checks wait until `busy` settles (a Send: its turn starts sooner without reads of other
   * conversations beside it, which share the server with it). What a check would have shown comes after. */
  yieldTo(busy) {
    const held = Promise.resolve(busy)
      .catch(() => {})
      .then(() => {
        if (this.held === held) this.held = null;
      });
    this.held = held;
  }

  /** What the open conversation's own reads found: its turn waits for the person ("you"), for others only
   * ("others"), or for no one (null). */
  setWaiting(id, waits) {
    if (!id || (this.waiting.get(id) || null) === waits) return;
    this.waiting.set(id, waits);
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
            dataset: this.waiting.get(entry.conversationId)
              ? { conversationId: entry.conversationId, waiting: this.waiting.get(entry.conversationId) }
              : { conversationId: entry.conversationId },
          },
          el("span", { class: "conversation-name" }, entry.title || "Untitled conversation"),
          el(
            "span",
            { class: "conversation-meta" },
            this.waiting.get(entry.conversationId)
              ? el(
                  "span",
                  { class: "conversation-waiting", "data-testid": "conversation-waiting" },
                  WAITING_LABELS[this.waiting.get(entry.conversationId)],
                )
              : null,
            el("span", { class: "conversation-when" }, when(entry.lastActivityAt)),
          ),
        ),
      ),
    );
    // A conversation is listed once its first message was sent (the server lists it from its first turn):
    // an empty "New conversation" is not a conversation yet.
    this.list.replaceChildren(...items);
    if (!this.unsupported) this.empty.hidden = items.length > 0;
    this.more.hidden = !this.cursor;
    this.onTitle(this.titleOf(this.activeId));
  }
}

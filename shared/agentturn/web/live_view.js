// What the live timeline shows while a turn works: the person's message at once (until the timeline holds
// it: a turn run at once is written to the timeline with its first save, after the model's reply), a line
// with what the turn is doing (queued, thinking, running a tool) and the model's text as it streams. The
// saved timeline replaces both: the preview is never the record.

import { el } from "./dom.js";

const RUNNABLE = new Set(["READY", "RUNNING"]);
const PHASES = {
  queued: () => "queued…",
  thinking: () => "thinking…",
  running: (tool) => (tool ? `running ${tool}…` : "running…"),
};

export class LiveView {
  /** @param {HTMLElement} timeline the timeline list; the live entry goes right after it */
  constructor(timeline) {
    this.label = el("span", { class: "who live-phase", "data-testid": "live-phase" });
    this.body = el("p", { class: "content", "data-testid": "live-text" });
    this.node = el("div", { class: "msg ai live-stream", "data-testid": "live-stream", "aria-live": "polite" }, this.label, this.body);
    this.node.hidden = true;
    this.pending = el("div", { class: "msg user live-echo", "data-testid": "live-echo" });
    this.pending.hidden = true;
    timeline.after(this.pending, this.node);
    this.echoed = null;
    this.reset();
  }

  /** Show what the person just sent (null: nothing), until the timeline holds it. */
  echo(text) {
    this.echoed = text;
    this.pending.replaceChildren(el("span", { class: "who" }, "You"), el("p", { class: "content" }, text || ""));
    this.pending.hidden = !text;
  }

  /** The timeline as just rendered: the echo goes once the timeline holds the person's message. */
  settle(messages) {
    if (this.echoed && messages.some((m) => m.type === "user" && m.content === this.echoed)) this.echo(null);
  }

  reset() {
    this.echo(null);
    this.resting = null;
    this.turnId = null;
    this.call = null;
    this.text = "";
    this.phase = null;
    this.tool = null;
    this.draw();
  }

  /** The page read `turnId` waiting or ended: what the channel said it was doing is over. A status or a piece
   * of text for it that arrives later (the channel's messages can overtake each other) is stale until the
   * turn runs again (`wake`), so no "running …" line stays under a form that already waits. */
  rest(turnId) {
    this.resting = turnId;
    if (this.turnId !== turnId && this.turnId !== null) return;
    this.phase = null;
    this.text = "";
    this.draw();
  }

  /** The turn runs again (the person answered, or a save said so). */
  wake(turnId = null) {
    if (turnId === null || this.resting === turnId) this.resting = null;
  }

  /** A status message: what the turn does now (waiting and ended turns are told by their save). */
  status(message) {
    if (message.turnId === this.resting) return;
    if (message.phase === "queued" && this.phase !== "queued") performance.mark("agentturn:queued");
    if (message.turnId !== this.turnId) {
      this.turnId = message.turnId;
      this.call = null;
      this.text = "";
    }
    this.phase = message.phase;
    this.tool = message.toolName || null;
    this.draw();
  }

  /** A piece of streamed text; a piece that does not continue the text shown is skipped (a gap: the saved
   * timeline brings the whole reply). */
  delta(message) {
    if (message.turnId === this.resting) return;
    if (message.turnId !== this.turnId || message.call !== this.call) {
      this.turnId = message.turnId;
      this.call = message.call;
      this.text = "";
    }
    if (message.offset !== this.text.length) return;
    if (this.text === "") performance.mark("agentturn:first-delta");
    this.text += message.text;
    this.phase = "thinking";
    this.draw();
  }

  /** A save was announced: returns what to do once the timeline has been read again (drop the preview
   * of the text that the save holds; all of it when the save leaves the turn waiting or ended). */
  saved(message) {
    if (RUNNABLE.has(message.status)) this.wake(message.turnId);
    if (message.status === "READY") this.status({ turnId: message.turnId, phase: "queued" });
    const call = this.call;
    const had = this.text;
    const settled = !RUNNABLE.has(message.status);
    return () => {
      if (message.turnId !== this.turnId) return;
      if (settled) {
        this.phase = null;
        this.text = "";
        this.draw();
      } else if (call === this.call && had && this.text.startsWith(had)) {
        this.text = this.text.slice(had.length);
        this.draw();
      }
    };
  }

  draw() {
    const phase = PHASES[this.phase];
    const label = phase ? phase(this.tool) : "";
    this.label.textContent = label;
    this.body.textContent = this.text;
    this.body.hidden = !this.text;
    this.node.hidden = !label && !this.text;
    this.node.dataset.phase = this.phase || "";
  }
}

// Auto-scroll that leaves a reader alone: new content scrolls into view only when the person was already at
// the bottom (or just sent something); someone reading older messages keeps their place and gets a
// "new messages below" button instead.

const NEAR_BOTTOM_PX = 80;

export class ScrollKeeper {
  constructor(scroller, jumpButton) {
    this.scroller = scroller;
    this.jump = jumpButton;
    this.pinned = true;
    // After the view went to a card that waits (toGoal), it stays there until the person scrolls themselves or
    // nothing waits any more: a later poll must not pull it back to the bottom (its own scroll event would
    // otherwise count as "at the bottom" when the card is near it).
    this.hold = false;
    for (const kind of ["wheel", "touchstart", "keydown", "mousedown"]) {
      scroller.addEventListener(kind, () => (this.hold = false), { passive: true });
    }
    scroller.addEventListener("scroll", () => {
      this.pinned = this.atBottom();
      if (this.pinned) this.jump.hidden = true;
    });
    this.goal = null; // where the button leads when something waits for the person, instead of the bottom
    jumpButton.addEventListener("click", () => (this.goal ? this.toGoal({ smooth: true }) : this.toBottom({ smooth: true })));
  }

  atBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight <= NEAR_BOTTOM_PX;
  }

  /** Wraps a DOM update: follows it down if the person was at the bottom, else offers the button. When the
   * update brought something that waits for the person (`target()` returns it: the first of a batch of
   * cards), that is where the view goes, or where the button leads, instead of the bottom. */
  around(update, { label = "New messages below ↓", target = null } = {}) {
    const wasPinned = !this.hold && (this.pinned || this.atBottom());
    const before = this.scroller.scrollHeight;
    update();
    const goal = target ? target() : null;
    if (goal) {
      this.goal = goal;
      if (wasPinned) this.toGoal();
      else {
        this.jump.textContent = "An answer is needed below ↓";
        this.jump.hidden = false;
      }
      return;
    }
    if (wasPinned) this.toBottom();
    else if (this.scroller.scrollHeight > before) {
      this.jump.textContent = label;
      this.jump.hidden = false;
    }
  }

  /** Brings the card that waits for the person to the top of the view (its question first). */
  toGoal({ smooth = false } = {}) {
    const goal = this.goal;
    this.goal = null;
    if (!goal?.isConnected) return this.toBottom({ smooth });
    const top = goal.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top + this.scroller.scrollTop;
    this.scroller.scrollTo({ top: Math.max(0, top - 12), behavior: smooth ? "smooth" : "auto" });
    this.pinned = false;
    this.hold = true;
    this.jump.hidden = true;
  }

  /** Nothing waits for the person any more: new content may follow the bottom again. */
  release() {
    this.hold = false;
  }

  toBottom({ smooth = false } = {}) {
    this.goal = null;
    this.hold = false;
    this.scroller.scrollTo({ top: this.scroller.scrollHeight, behavior: smooth ? "smooth" : "auto" });
    this.pinned = true;
    this.jump.hidden = true;
  }
}

// Auto-scroll that leaves a reader alone: new content scrolls into view only when the person was already at
// the bottom (or just sent something); someone reading older messages keeps their place and gets a
// "new messages below" button instead.

const NEAR_BOTTOM_PX = 80;

export class ScrollKeeper {
  constructor(scroller, jumpButton) {
    this.scroller = scroller;
    this.jump = jumpButton;
    this.pinned = true;
    scroller.addEventListener("scroll", () => {
      this.pinned = this.atBottom();
      if (this.pinned) this.jump.hidden = true;
    });
    jumpButton.addEventListener("click", () => this.toBottom({ smooth: true }));
  }

  atBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight <= NEAR_BOTTOM_PX;
  }

  /** Wraps a DOM update: follows it down if the person was at the bottom, else offers the button. */
  around(update, { label = "New messages below ↓" } = {}) {
    const wasPinned = this.pinned || this.atBottom();
    const before = this.scroller.scrollHeight;
    update();
    if (wasPinned) this.toBottom();
    else if (this.scroller.scrollHeight > before) {
      this.jump.textContent = label;
      this.jump.hidden = false;
    }
  }

  toBottom({ smooth = false } = {}) {
    this.scroller.scrollTo({ top: this.scroller.scrollHeight, behavior: smooth ? "smooth" : "auto" });
    this.pinned = true;
    this.jump.hidden = true;
  }
}

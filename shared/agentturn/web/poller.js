// Bounded polling with backoff: fast right after an action (the worker usually answers within a second
// locally), slower while nothing changes, and it gives up after a deadline instead of polling forever.

export class Poller {
  /**
   * @param {() => Promise<boolean>} tick resolves true to keep polling, false when there is nothing to wait for
   * @param {{firstDelayMs?: number, factor?: number, maxDelayMs?: number, maxDurationMs?: number,
   *          onGiveUp?: () => void}} options
   */
  constructor(tick, { firstDelayMs = 200, factor = 1.5, maxDelayMs = 3000, maxDurationMs = 120000, onGiveUp } = {}) {
    this.tick = tick;
    this.options = { firstDelayMs, factor, maxDelayMs, maxDurationMs };
    this.onGiveUp = onGiveUp || (() => {});
    this.timer = null;
    this.generation = 0;
  }

  get running() {
    return this.timer !== null;
  }

  /** (Re)start from the short delay: something just happened that the server will act on. */
  start() {
    this.stop();
    const generation = ++this.generation;
    const startedAt = Date.now();
    let delay = this.options.firstDelayMs;
    const schedule = () => {
      this.timer = setTimeout(async () => {
        let again = false;
        try {
          again = await this.tick();
        } catch {
          again = true; // a failed read is not a reason to stop waiting; the deadline still bounds it
        }
        if (generation !== this.generation) return; // restarted or stopped meanwhile
        if (!again) {
          this.timer = null;
          return;
        }
        if (Date.now() - startedAt > this.options.maxDurationMs) {
          this.timer = null;
          this.onGiveUp();
          return;
        }
        delay = Math.min(delay * this.options.factor, this.options.maxDelayMs);
        schedule();
      }, delay);
    };
    schedule();
  }

  stop() {
    this.generation += 1;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

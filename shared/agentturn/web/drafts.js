// Half-typed answers survive a reload: each pending card keeps its draft in sessionStorage (this tab only,
// gone when the tab closes), under its turn and action id, and drops it once the answer was accepted.

const PREFIX = "agentturn.draft:";

export class Drafts {
  constructor(turnId, actionId) {
    this.key = `${PREFIX}${turnId}:${actionId}`;
  }

  load() {
    try {
      const raw = sessionStorage.getItem(this.key);
      return raw === null ? null : JSON.parse(raw);
    } catch {
      return null; // storage disabled or a draft from an older page: start empty
    }
  }

  save(value) {
    try {
      sessionStorage.setItem(this.key, JSON.stringify(value ?? null));
    } catch {
      // Full or disabled storage only costs the draft, never the form.
    }
  }

  clear() {
    try {
      sessionStorage.removeItem(this.key);
    } catch {
      // as above
    }
  }
}

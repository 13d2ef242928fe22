// A durable, ordered queue of writes to the API. Every operation is written to localStorage
// before it is sent, so a crash or a closed tab before the request completes still gets it
// through on the next load. Network errors and 5xx/429 answers are retried with backoff;
// other 4xx answers are final (the server refused it and changed nothing).

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 15000;
const MINOR_ATTEMPTS = 3;

export class HttpError extends Error {
  constructor(status, message, data = null) {
    super(message);
    this.status = status;
    this.data = data; // the answer's JSON body, e.g. {"error", "existing_id"} on a duplicate
  }
}

/** fetch + JSON, throwing HttpError for non-2xx answers and TypeError for network errors. */
export async function requestJson(method, url, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url, init);
  let data = null;
  const type = response.headers.get("Content-Type") || "";
  if (response.status !== 204 && type.includes("json")) {
    data = await response.json().catch(() => null);
  }
  if (!response.ok) {
    const message = (data && data.error) || `${response.status} ${response.statusText}`;
    throw new HttpError(response.status, message, data);
  }
  return data;
}

const retryable = (err) =>
  !(err instanceof HttpError) || err.status >= 500 || err.status === 429 || err.status === 408;

/**
 * Operations: {kind: "add", client_id, body} | {kind: "remove", client_id}
 * | {kind: "position", segment, active?: {segment: seconds}} | {kind: "event", suggestion, event, client_id?}
 * | {kind: "events", suggestions: [id, ...], event} (one request for many, e.g. "shown").
 * hooks: status(state, detail) with state "saving" | "saved" | "offline" | "retrying" | "error";
 * resolveId(client_id) -> server id or null; done(op, result); failed(op, error).
 */
export class Outbox {
  constructor(apiBase, token, hooks) {
    this.api = apiBase;
    this.key = `marginalia.outbox.${token}`;
    this.hooks = hooks;
    this.ops = this.#load();
    this.running = false;
    this.delay = FIRST_DELAY_MS;
    this.timer = null;
    this.stopped = false;
    window.addEventListener("online", () => this.kick(true));
  }

  #load() {
    try {
      const raw = window.localStorage.getItem(this.key);
      const ops = raw ? JSON.parse(raw) : [];
      return Array.isArray(ops) ? ops : [];
    } catch {
      return [];
    }
  }

  #save() {
    try {
      if (this.ops.length) window.localStorage.setItem(this.key, JSON.stringify(this.ops));
      else window.localStorage.removeItem(this.key);
    } catch {
      // Storage full or blocked: the in-memory queue still works for this page's life.
    }
  }

  /** Operations not yet confirmed by the server (for restoring the view on load). */
  pending() {
    return this.ops.slice();
  }

  get idle() {
    return this.ops.length === 0;
  }

  push(op) {
    if (this.stopped) return;
    if (op.kind === "position") {
      // Only the latest position matters; keep the one in flight, drop queued ones, whose
      // measured active seconds (timer.js) are carried over into this one.
      const active = { ...(op.active || {}) };
      this.ops = this.ops.filter((o, i) => {
        if (o.kind !== "position" || (i === 0 && this.running)) return true;
        for (const [segment, seconds] of Object.entries(o.active || {})) {
          active[segment] = Math.round(((active[segment] || 0) + seconds) * 10) / 10;
        }
        return false;
      });
      op = { ...op, active };
    }
    if (op.kind === "remove") {
      // An add never sent can simply be forgotten with its remove. One that was sent, even
      // if no answer came back, may be stored: it stays, and the remove follows it.
      const i = this.ops.findIndex(
        (o) => o.kind === "add" && o.client_id === op.client_id && !o.attempts,
      );
      if (i >= 0 && !(i === 0 && this.running)) {
        this.ops.splice(i, 1);
        // ...and so can a suggestion's "accepted" that only that add carried.
        this.ops = this.ops.filter(
          (o) => !(o.kind === "event" && o.client_id === op.client_id && !o.attempts),
        );
        this.#save();
        this.hooks.done(op, null);
        this.kick();
        return;
      }
    }
    this.ops.push(op);
    this.#save();
    this.kick(true);
  }

  /** Drop everything (after submit, or when the assignment turned read-only). */
  stop() {
    this.stopped = true;
    this.ops = [];
    this.#save();
    clearTimeout(this.timer);
  }

  kick(now = false) {
    if (now) {
      clearTimeout(this.timer);
      this.timer = null;
      this.delay = FIRST_DELAY_MS;
    }
    if (this.running || this.timer || this.stopped) return;
    if (this.ops.length === 0) {
      this.hooks.status("saved");
      return;
    }
    this.#run();
  }

  /** Resolves once the queue is empty (or rejects after `ms`). */
  drain(ms = 20000) {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const check = () => {
        if (this.ops.length === 0) resolve();
        else if (Date.now() - started > ms) reject(new Error("Could not save all changes."));
        else setTimeout(check, 100);
      };
      this.kick(true);
      check();
    });
  }

  async #run() {
    this.running = true;
    this.hooks.status("saving");
    while (this.ops.length && !this.stopped) {
      const op = this.ops[0];
      op.attempts = (op.attempts || 0) + 1;
      this.#save();
      try {
        const result = await this.#send(op);
        this.ops.shift();
        this.#save();
        this.delay = FIRST_DELAY_MS;
        this.hooks.done(op, result);
      } catch (err) {
        // A server error on a bookkeeping call (position, suggestion event) must not hold
        // back the annotations queued behind it: give up on it after a few tries.
        const minor = op.kind === "position" || op.kind === "event" || op.kind === "events";
        const serverError = err instanceof HttpError;
        if (retryable(err) && !(minor && serverError && op.attempts >= MINOR_ATTEMPTS)) {
          this.#save();
          this.running = false;
          this.hooks.status(serverError ? "retrying" : "offline", err.message);
          this.timer = setTimeout(() => {
            this.timer = null;
            this.kick();
          }, this.delay * (0.8 + Math.random() * 0.4));
          this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
          return;
        }
        this.ops.shift();
        this.#save();
        this.hooks.failed(op, err);
      }
    }
    this.running = false;
    if (!this.stopped) this.hooks.status(this.ops.length ? "saving" : "saved");
  }

  async #send(op) {
    const base = this.api;
    switch (op.kind) {
      case "add":
        return requestJson("POST", `${base}/annotations`, op.body);
      case "remove": {
        const id = this.hooks.resolveId(op.client_id);
        if (id === null || id === undefined) return null;
        try {
          return await requestJson("DELETE", `${base}/annotations/${encodeURIComponent(id)}`);
        } catch (err) {
          if (err instanceof HttpError && err.status === 404) return null;
          throw err;
        }
      }
      case "position":
        return requestJson("POST", `${base}/position`, {
          segment: op.segment,
          ...(op.active && Object.keys(op.active).length ? { active: op.active } : {}),
        });
      case "event":
        return requestJson(
          "POST",
          `${base}/suggestions/${encodeURIComponent(op.suggestion)}/events`,
          { event: op.event },
        );
      case "events":
        return requestJson("POST", `${base}/suggestions/events`, {
          event: op.event,
          suggestions: op.suggestions,
        });
      default:
        return null;
    }
  }
}

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

/** fetch + JSON, throwing HttpError for non-2xx answers and TypeError for network errors.
 * `keepalive`: the request outlives the page (a position sent as the tab closes). */
export async function requestJson(method, url, body, { keepalive = false } = {}) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (keepalive) init.keepalive = true;
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

/** Suggestion ids per event kind in one request (the server's limit). */
const MAX_EVENT_IDS = 200;

/** A move's position update waits this long for later moves to join it (one request for
 * many moves); the page's lifecycle (hidden, before submit) sends it sooner. */
export const POSITION_EVERY_MS = 30_000;

/** Writes that stamp the worker's activity on the server (a heartbeat after one is redundant). */
const STAMPING = new Set(["add", "remove", "edit", "position"]);

/** Would merging `from` into `into` (event -> ids) pass the server's limit? */
function overflows(into, from) {
  return Object.entries(from || {}).some(
    ([event, ids]) => (into[event] || []).length + ids.length > MAX_EVENT_IDS,
  );
}

/** Merge event -> [suggestion id] maps (no id twice per event). */
function mergeEvents(into, from) {
  for (const [event, ids] of Object.entries(from || {})) {
    const merged = new Set([...(into[event] || []), ...ids]);
    into[event] = [...merged];
  }
  return into;
}

/** A deferred "events" op's ids merged into `events` (an update's), unless that would pass
 * the server's limit per request; whether they were. */
function joinWaiting(events, op) {
  const ids = { [op.event]: op.suggestions };
  if (overflows(events, ids)) return false;
  mergeEvents(events, ids);
  return true;
}

/**
 * Operations: {kind: "add", client_id, body} | {kind: "remove", client_id}
 * | {kind: "edit", client_id (the new annotation's), from (the edited one's), previous, body}
 * | {kind: "position", segment, active?: {segment: seconds}, events?: {event: [id, ...]},
 *    defer?, due?} (a move's: deferred until `due`, POSITION_EVERY_MS after the first move
 *    it carries)
 * | {kind: "event", suggestion, event, client_id?}
 * | {kind: "events", suggestions: [id, ...], event, defer?} (one request for many, e.g. "shown").
 * A deferred "events" op (a segment view's hints) is kept, in localStorage like any op, until
 * the next position update takes it along (one request per move instead of two); release()
 * sends what is still waiting on its own (before submit, when the tab is hidden).
 * Unsent position updates coalesce: the newest replaces older ones, their active seconds
 * summed per segment, the segments they named kept as seen (0 seconds: the server stores a
 * row for every segment named, the all-segments-seen rule's record) and their events
 * merged, so nothing measured is lost. A move's update is deferred (`defer`, `due`): later
 * moves join it, and it goes at its `due` time (the first move's + POSITION_EVERY_MS, a
 * timer, also after a reload), or with release() (the tab hidden, before submit), or at
 * once when an update that is not deferred joins it.
 * hooks: status(state, detail) with state "saving" | "saved" | "offline" | "retrying" | "error";
 * resolveId(client_id) -> server id or null; done(op, result); failed(op, error).
 * After each stored add, remove or position the window gets a "marginalia:stamped" event.
 */
export class Outbox {
  constructor(apiBase, token, hooks) {
    this.api = apiBase;
    this.key = `marginalia.outbox.${token}`;
    this.hooks = hooks;
    this.ops = this.#load();
    this.running = false;
    this.inFlight = null; // the operation being sent
    this.delay = FIRST_DELAY_MS;
    this.timer = null;
    this.stopped = false;
    this.dueTimer = null;
    window.addEventListener("online", () => this.kick(true));
  }

  /** Wait for the earliest deferred position's `due` time (set by push(), and by kick() for
   * the positions a reload found in localStorage), then send the ones due. */
  #schedule() {
    clearTimeout(this.dueTimer);
    this.dueTimer = null;
    const dues = this.ops.filter((o) => o.defer && o.due).map((o) => o.due);
    if (!dues.length || this.stopped) return;
    this.dueTimer = setTimeout(() => {
      this.dueTimer = null;
      const now = Date.now();
      this.ops = this.ops.map((o) => (o.defer && o.due && o.due <= now ? { ...o, defer: false } : o));
      this.#save();
      this.#schedule();
      this.kick(true);
    }, Math.max(0, Math.min(...dues) - Date.now()));
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

  /** The first operation to send (deferred ones wait), or -1. */
  #next() {
    return this.ops.findIndex((o) => !o.defer);
  }

  push(op) {
    if (this.stopped) return;
    if (op.kind === "position") {
      // Only the latest position matters; keep the one in flight, drop queued ones, whose
      // measured active seconds (timer.js), segments seen and events are carried over into
      // this one, and take along the hint events waiting for a move.
      const active = { ...(op.active || {}) };
      const events = mergeEvents({}, op.events);
      let defer = Boolean(op.defer);
      let due = defer ? Date.now() + POSITION_EVERY_MS : null;
      this.ops = this.ops.filter((o) => {
        if (o === this.inFlight) return true;
        if (o.kind === "events" && o.defer) return !joinWaiting(events, o); // else the next move's
        if (o.kind !== "position" || overflows(events, o.events)) return true;
        for (const [segment, seconds] of Object.entries(o.active || {})) {
          active[segment] = Math.round(((active[segment] || 0) + seconds) * 10) / 10;
        }
        if (o.segment !== op.segment && !(String(o.segment) in active)) active[o.segment] = 0; // seen
        mergeEvents(events, o.events);
        if (!o.defer) defer = false; // it was due already: so is this one
        else if (defer && o.due) due = Math.min(due, o.due); // the first move's time holds
        return false;
      });
      op = { ...op, active, ...(Object.keys(events).length ? { events } : {}) };
      delete op.defer;
      delete op.due;
      if (defer) {
        op.defer = true;
        op.due = due;
        this.ops.push(op);
        this.#save();
        this.#schedule();
        return;
      }
    }
    if (op.kind === "events" && op.defer) {
      // One waiting op per event kind: a later view's hints join it.
      const waiting = this.ops.find(
        (o) =>
          o.kind === "events" &&
          o.defer &&
          o.event === op.event &&
          o.suggestions.length + op.suggestions.length <= MAX_EVENT_IDS,
      );
      if (waiting) {
        waiting.suggestions = [...new Set([...waiting.suggestions, ...op.suggestions])];
        this.#save();
        return;
      }
      this.ops.push(op);
      this.#save();
      return;
    }
    if (op.kind === "remove") {
      // An add never sent can simply be forgotten with its remove. One that was sent, even
      // if no answer came back, may be stored: it stays, and the remove follows it.
      const i = this.ops.findIndex(
        (o) => o.kind === "add" && o.client_id === op.client_id && !o.attempts,
      );
      if (i >= 0 && this.ops[i] !== this.inFlight) {
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

  /** Send what is deferred now: a move's position update, with the hint events still
   * waiting for a move (on their own when no update takes them). */
  release() {
    if (!this.ops.some((o) => o.defer)) return;
    const position = this.ops.find((o) => o.kind === "position" && o.defer && o !== this.inFlight);
    if (position) {
      const events = mergeEvents({}, position.events);
      this.ops = this.ops.filter((o) => !(o.kind === "events" && o.defer && joinWaiting(events, o)));
      if (Object.keys(events).length) position.events = events;
    }
    this.ops = this.ops.map((o) => (o.defer ? { ...o, defer: false } : o));
    this.#save();
    this.#schedule();
    this.kick(true);
  }

  /** Drop everything (after submit, or when the assignment turned read-only). */
  stop() {
    this.stopped = true;
    this.ops = [];
    this.#save();
    clearTimeout(this.timer);
    clearTimeout(this.dueTimer);
  }

  kick(now = false) {
    if (!this.dueTimer) this.#schedule();
    if (now) {
      clearTimeout(this.timer);
      this.timer = null;
      this.delay = FIRST_DELAY_MS;
    }
    if (this.running || this.timer || this.stopped) return;
    if (this.#next() < 0) {
      this.hooks.status("saved");
      return;
    }
    this.#run();
  }

  /** Resolves once the queue is empty (or rejects after `ms`). */
  drain(ms = 20000) {
    this.release();
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
    while (this.#next() >= 0 && !this.stopped) {
      const op = this.ops[this.#next()];
      op.attempts = (op.attempts || 0) + 1;
      this.#save();
      this.inFlight = op;
      try {
        const result = await this.#send(op);
        this.inFlight = null;
        this.#remove(op);
        this.delay = FIRST_DELAY_MS;
        this.hooks.done(op, result);
        if (STAMPING.has(op.kind)) window.dispatchEvent(new CustomEvent("marginalia:stamped"));
      } catch (err) {
        this.inFlight = null;
        if (op.kind === "position" && op.events && !retryable(err) && err.status !== 409) {
          // Refused for its events (e.g. a hint the detector has since replaced): the
          // position and its measured time still go, without them.
          delete op.events;
          op.attempts = 0;
          this.#save();
          continue;
        }
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
        this.#remove(op);
        this.hooks.failed(op, err);
      }
    }
    this.running = false;
    if (!this.stopped) this.hooks.status(this.#next() >= 0 ? "saving" : "saved");
  }

  #remove(op) {
    const i = this.ops.indexOf(op);
    if (i >= 0) this.ops.splice(i, 1);
    this.#save();
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
      case "edit": {
        const id = this.hooks.resolveId(op.from);
        if (id === null || id === undefined) return null;
        return requestJson("POST", `${base}/annotations/${encodeURIComponent(id)}/edit`, op.body);
      }
      case "position":
        return requestJson(
          "POST",
          `${base}/position`,
          {
            segment: op.segment,
            ...(op.active && Object.keys(op.active).length ? { active: op.active } : {}),
            ...(op.events && Object.keys(op.events).length ? { events: op.events } : {}),
          },
          { keepalive: true },
        );
      case "event":
        return requestJson(
          "POST",
          `${base}/suggestions/${encodeURIComponent(op.suggestion)}/events`,
          { event: op.event },
        );
      case "events":
        return requestJson(
          "POST",
          `${base}/suggestions/events`,
          { event: op.event, suggestions: op.suggestions },
          { keepalive: true }, // released as the tab is hidden: let it outlive the page
        );
      default:
        return null;
    }
  }
}

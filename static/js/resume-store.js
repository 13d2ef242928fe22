// The browser's own proof of its work: the token of the assignment it opened, kept per
// (study, worker ID) in localStorage (cookies are unreliable inside crowd platforms' iframes;
// localStorage is kept per framing site, so the same iframe finds it again).

const PREFIX = "marginalia.resume";
const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

function key(study, worker) {
  return `${PREFIX}:${encodeURIComponent(study)}:${encodeURIComponent(worker)}`;
}

/** Remember `token` as this browser's work for (study, worker); silent if storage is off. */
export function rememberToken(study, worker, token) {
  try {
    if (study && worker && TOKEN.test(token)) localStorage.setItem(key(study, worker), token);
  } catch {
    // storage disabled or full: resume then needs the platform's own session
  }
}

/** The token this browser kept for (study, worker), or null. */
export function rememberedToken(study, worker) {
  try {
    const token = localStorage.getItem(key(study, worker));
    return token && TOKEN.test(token) ? token : null;
  } catch {
    return null;
  }
}

// The demo study (`marginalia demo`) names its own workers: a browser that arrives with no
// worker ID is given one, kept here, so two browsers on the printed URL each get their own
// work and one browser comes back to its own. A real study never invents worker IDs (its
// platform names the worker; its start page asks). Random bytes, not crypto.randomUUID():
// that one exists only on secure origins, and a colleague may open http://<host>:5000.
const DEMO_PREFIX = "marginalia.demo-worker";
const DEMO_ID = /^demo-[0-9a-f]{16}$/;

function newDemoWorkerId() {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `demo-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** This browser's worker ID for the demo study `study`: the kept one, else (or when `fresh`)
 * a new one, kept from now on; without storage a new one each time (new work each visit). */
export function demoWorkerId(study, fresh = false) {
  const key = `${DEMO_PREFIX}:${encodeURIComponent(study)}`;
  try {
    const kept = localStorage.getItem(key);
    if (!fresh && kept && DEMO_ID.test(kept)) return kept;
    const made = newDemoWorkerId();
    localStorage.setItem(key, made);
    return made;
  } catch {
    return newDemoWorkerId();
  }
}
